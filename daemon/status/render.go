package status

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/store"
)

// The page's templates and assets are compiled into the binary: ticketd stays one file.
//
//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets/page.js assets/page.css
var assetFS embed.FS

// funcs are the templates' helpers. html/template escapes every title, reason, error and
// report line, which are untrusted (issue text, model output) and may carry markup.
var funcs = template.FuncMap{
	"usd":      func(v float64) string { return fmt.Sprintf("$%.4f", v) },
	"cost":     model.FormatCost,
	"tokens":   humanTokens,
	"clock":    func(t time.Time) string { return t.Local().Format("15:04:05") },
	"when":     when,
	"iso":      func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"dur":      humanDuration,
	"pct":      func(v float64) string { return fmt.Sprintf("%.0f%%", v*100) },
	"ago":      ago,
	"clip":     clip,
	"stateURL": func(st store.State) string { return "/?state=" + url.QueryEscape(string(st)) },
	"f1":       func(v float64) string { return fmt.Sprintf("%.1f", v) },
	"f2":       func(v float64) string { return fmt.Sprintf("%.2f", v) },
	"add":      func(a, b int) int { return a + b },
	"list":     func(v ...int) []int { return v },
	"sub":      func(a, b float64) float64 { return a - b },
	"float":    func(v int) float64 { return float64(v) },
	"mid":      func(x, w float64) float64 { return x + w/2 },
	"form": func(id int64, csrf, action string) actionForm {
		label := map[string]string{"requeue": "Requeue", "cancel": "Cancel"}[action]
		return actionForm{ID: id, CSRF: csrf, Action: action, Label: label}
	},
	"bulkURL": func(do, state, repo string) string {
		return "/bulk?" + url.Values{"do": {do}, "state": {state}, "repo": {repo}}.Encode()
	},
	"needCard": func(it needItem, page homeData) needCard { return needCard{Item: it, Page: page.common} },
	"attention": func(st store.State) bool {
		return st == store.StateEscalated || waitsForHuman(st)
	},
}

// needCard is one "Needs you" item with what its forms need of the page.
type needCard struct {
	Item needItem
	Page common
}

// actionForm is one action button: a POST form carrying the process's token.
type actionForm struct {
	ID                  int64
	CSRF, Action, Label string
}

// pages are the page templates, each the layout plus its own "content".
var pages = func() map[string]*template.Template {
	base := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/parts.html"))
	out := map[string]*template.Template{}
	for _, name := range []string{"home", "list", "ticket", "nights", "message", "confirm", "accept", "confirmcancel", "bulk", "night"} {
		out[name] = template.Must(template.Must(base.Clone()).ParseFS(templateFS, "templates/"+name+".html"))
	}
	return out
}()

// common is what every page's layout needs.
type common struct {
	Title    string
	Nav      string // "home", "list", "nights", "ticket"
	Now      time.Time
	CSRF     string
	ReadOnly bool
	// Refresh is the URL the page's script reloads the live part from ("" for a page with
	// no live part).
	Refresh  string
	Problems []string
}

func (c *common) problem(what string, err error) {
	c.Problems = append(c.Problems, what+": "+err.Error())
}

// securityHeaders are sent with every page: no script but our own file, no style but
// ours, no image but ours and inline data, no framing, nothing fetched from elsewhere.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
}

// render executes template name of page into w with status code.
func (s *Server) render(w http.ResponseWriter, code int, page, name string, data any) {
	var buf bytes.Buffer
	if err := pages[page].ExecuteTemplate(&buf, name, data); err != nil {
		s.log.Error("render status page", "page", page, "template", name, "err", err)
		http.Error(w, "render status page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	securityHeaders(h)
	w.WriteHeader(code)
	w.Write(buf.Bytes())
}

// message renders a short page that says what went wrong (or right) and where to go.
func (s *Server) message(w http.ResponseWriter, code int, title, text, back string) {
	s.render(w, code, "message", "layout", struct {
		common
		Text, Back string
	}{common{Title: title, Now: s.now()}, text, back})
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

// humanDuration writes d for a reader: 850ms, 12.4s, 3m05s, 2h10m.
func humanDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		s := int(math.Round(d.Seconds()))
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	}
	m := int(math.Round(d.Minutes()))
	return fmt.Sprintf("%dh%02dm", m/60, m%60)
}

func when(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

func ago(now, t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return humanDuration(now.Sub(t)) + " ago"
}

// clip shortens s to n runes on one line, for table cells; the full text is on the
// ticket's page.
func clip(n int, s string) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// waitsForHuman reports whether tickets in st wait outside the queue for a person or the
// next night (parked, and any such state a later schema adds, e.g. needs_info): neither
// queued, nor running, nor finished.
func waitsForHuman(st store.State) bool {
	return st != store.StateQueued && st != store.StateRunning && !st.Terminal()
}
