package status

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"html/template"
	"net/http"
	"time"

	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/store"
)

//go:embed page.html
var pageHTML string

//go:embed page.js
var pageJS []byte

// The page's template: html/template escapes every title, reason and error, which are
// untrusted (issue text, model output) and may carry markup.
var pageTmpl = template.Must(template.New("page").Funcs(template.FuncMap{
	"usd":    func(v float64) string { return fmt.Sprintf("$%.4f", v) },
	"cost":   model.FormatCost,
	"tokens": humanTokens,
	"clock":  func(t time.Time) string { return t.Local().Format("15:04:05") },
	"ago": func(now, t time.Time) string {
		if t.IsZero() {
			return "–"
		}
		return now.Sub(t).Round(time.Second).String()
	},
}).Parse(pageHTML))

// maxCharts bounds the tickets drawn with a chart, so a big night keeps the page light.
const maxCharts = 30

type pageData struct {
	Now time.Time
	// Last is the latest night that ended: its outcome and error head the page; nil when
	// none has.
	Last      *store.Run
	Parked    []ticketRow
	States    []stateCount
	Running   []ticketRow
	Run       *store.Run
	Tonight   []ticketRow
	Spent     float64
	Estimated bool // some cost estimated
	Unknown   bool // some cost unknown
	Problems  []string
}

type stateCount struct {
	State store.State
	N     int
}

type ticketRow struct {
	store.Summary
	Progress store.Progress
	Chart    chart
}

func (s *Server) data(ctx context.Context) pageData {
	d := pageData{Now: s.now()}
	problem := func(what string, err error) { d.Problems = append(d.Problems, what+": "+err.Error()) }
	ov, err := s.store.Overview(ctx)
	if err != nil {
		problem("counts", err)
	}
	for _, st := range store.States {
		d.States = append(d.States, stateCount{st, ov.ByState[st]})
	}
	charts := 0
	withChart := func(r *ticketRow) {
		if charts >= maxCharts {
			return
		}
		calls, err := s.store.ModelCalls(ctx, r.ID)
		if err != nil {
			problem(fmt.Sprintf("model calls of ticket %d", r.ID), err)
			return
		}
		r.Chart = newChart(r.ID, calls)
		charts++
	}
	running, err := s.store.List(ctx, store.Filter{States: []store.State{store.StateRunning}, Limit: 100})
	if err != nil {
		problem("running tickets", err)
	}
	for _, t := range running {
		r := ticketRow{Summary: t}
		if r.Progress, err = s.store.Progress(ctx, t.ID); err != nil {
			problem(fmt.Sprintf("progress of ticket %d", t.ID), err)
		}
		withChart(&r)
		d.Running = append(d.Running, r)
	}
	parked, err := s.store.List(ctx, store.Filter{States: []store.State{store.StateParked}, Limit: 100})
	if err != nil {
		problem("parked tickets", err)
	}
	for _, t := range parked {
		d.Parked = append(d.Parked, ticketRow{Summary: t})
	}
	runs, err := s.store.Runs(ctx, 2)
	if err != nil {
		problem("nights", err)
	}
	for i := range runs {
		if !runs[i].EndedAt.IsZero() {
			d.Last = &runs[i]
			break
		}
	}
	if len(runs) > 0 {
		d.Run = &runs[0]
		done, err := s.store.FinishedSince(ctx, runs[0].StartedAt, 100)
		if err != nil {
			problem("tonight's results", err)
		}
		for _, t := range done {
			r := ticketRow{Summary: t}
			withChart(&r)
			d.Tonight = append(d.Tonight, r)
			d.Spent += t.CostUSD
			d.Unknown = d.Unknown || t.CostUnknown
			d.Estimated = d.Estimated || t.CostEstimated
		}
		for _, r := range d.Running {
			d.Spent += r.CostUSD
			d.Unknown = d.Unknown || r.CostUnknown
			d.Estimated = d.Estimated || r.CostEstimated
		}
	}
	return d
}

func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, "page")
}

func (s *Server) script(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Write(pageJS)
}

func (s *Server) live(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, "live")
}

func (s *Server) render(w http.ResponseWriter, r *http.Request, name string) {
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	var buf bytes.Buffer
	if err := pageTmpl.ExecuteTemplate(&buf, name, s.data(ctx)); err != nil {
		s.log.Error("render status page", "template", name, "err", err)
		http.Error(w, "render status page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:")
	h.Set("X-Content-Type-Options", "nosniff")
	w.Write(buf.Bytes())
}

func humanTokens(n int64) string {
	switch {
	case n >= 10_000_000:
		return fmt.Sprintf("%.0fM", float64(n)/1e6)
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.0fk", float64(n)/1e3)
	case n >= 1_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}
