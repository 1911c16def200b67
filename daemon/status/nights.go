package status

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/ticketd/ticketd/store"
)

// nightsPage is how many nights one page of the table lists.
const nightsPage = 30

// nightsErrorClip is how much of a night's error the table shows before "more": the part
// that differs from the other nights' (clipDiffering), so different failures read apart.
const nightsErrorClip = 90

// nightsData is /nights: a chart of the latest nights, then a table, newest first.
type nightsData struct {
	common
	Rows  []nightRow
	Chart nightChart
	// NarrowChart is Chart drawn for a phone's width.
	NarrowChart nightChart
	Older       string
	First       string
	Total       int
}

// nightRow is one night in the table.
type nightRow struct {
	ID       int64
	Trigger  string
	Started  time.Time
	Duration time.Duration
	Running  bool
	Outcome  store.Outcome
	Error    string
	// ErrorShort is Error clipped to the part that differs from the other nights' errors.
	ErrorShort string
	// DigestFailed: the night's morning digest was not delivered (DigestError says why).
	DigestFailed            bool
	DigestError             string
	Worked, Done, Escalated int
	Rate                    float64 // done / (done + escalated)
	HasRate                 bool
	CostUSD                 float64
	CostUnknown             bool
	Cached                  float64 // share of prompt tokens served from the cache
	HasTokens               bool
}

// OutcomeClass is the CSS class of the night's outcome.
func (r nightRow) OutcomeClass() string {
	switch {
	case r.Running:
		return "running"
	case r.Outcome == "":
		return "unfinished"
	}
	return string(r.Outcome)
}

// OutcomeText is the outcome as a word.
func (r nightRow) OutcomeText() string {
	switch {
	case r.Running:
		return "running"
	case r.Outcome == "":
		return "unfinished"
	}
	return string(r.Outcome)
}

func (s *Server) nights(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	d := nightsData{common: common{Title: "nights · ticketd", Nav: "nights", Now: s.now(), CSRF: s.csrf, ReadOnly: s.readOnly}}
	before := int64(0)
	if v := r.URL.Query().Get("before"); v != "" {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id < 1 {
			s.message(w, http.StatusBadRequest, "Bad page", fmt.Sprintf("before %q is not a night id", v), "/nights")
			return
		}
		before = id
		d.First = "/nights"
	}
	// A night a day is a few hundred rows a year: read them all and page here.
	runs, err := s.store.Runs(ctx, 0)
	if err != nil {
		d.problem("nights", err)
	}
	d.Total = len(runs)
	var rows []nightRow
	var ids []int64
	for _, run := range runs {
		if before > 0 && run.ID >= before && len(rows) == 0 {
			continue
		}
		if len(rows) == max(nightsPage, maxChartNights) {
			break
		}
		rows = append(rows, s.nightRow(ctx, &d.common, run, run.ID == runs[0].ID))
		ids = append(ids, run.ID)
	}
	tokens, err := s.store.NightTokens(ctx, ids)
	if err != nil {
		d.problem("token totals of the nights", err)
	}
	for i := range rows {
		if n, ok := tokens[rows[i].ID]; ok && n.PromptTokens > 0 {
			rows[i].Cached, rows[i].HasTokens = n.CachedShare(), true
		}
	}
	errs := make([]string, len(rows))
	for i := range rows {
		errs[i] = rows[i].Error
	}
	for i, short := range clipDiffering(errs, nightsErrorClip) {
		rows[i].ErrorShort = short
	}
	if digests, err := s.store.Digests(ctx); err != nil {
		d.problem("morning digests", err)
	} else {
		for i := range rows {
			if dg, ok := digests[rows[i].ID]; ok && !dg.OK {
				rows[i].DigestFailed, rows[i].DigestError = true, dg.Error
			}
		}
	}
	d.Chart = newNightChart(rows, nightChartW)
	d.NarrowChart = newNightChart(rows, nightChartNarrowW)
	if len(rows) > nightsPage {
		rows = rows[:nightsPage]
		d.Older = "/nights?" + url.Values{"before": {strconv.FormatInt(rows[len(rows)-1].ID, 10)}}.Encode()
	}
	d.Rows = rows
	s.render(w, http.StatusOK, "nights", "layout", d)
}

// nightRow reads a night's figures: the run's own for an ended night, its stats so far for
// one still running (only the latest night can be: an older one without an end is one whose
// process died, "unfinished").
func (s *Server) nightRow(ctx context.Context, c *common, run store.Run, latest bool) nightRow {
	r := nightRow{ID: run.ID, Trigger: run.Trigger, Started: run.StartedAt, Running: latest && run.EndedAt.IsZero(), Outcome: run.Outcome,
		Error: run.Error, Worked: run.Worked, Done: run.Done, Escalated: run.Escalated, CostUSD: run.CostUSD}
	end := run.EndedAt
	if end.IsZero() && !r.Running {
		end = run.StartedAt // unfinished: its length is unknown
	}
	if r.Running {
		end = c.Now
		st, err := s.store.Stats(ctx, run.ID)
		if err != nil {
			c.problem(fmt.Sprintf("figures of night %d", run.ID), err)
		} else {
			r.Worked, r.Done, r.Escalated = st.Tickets, st.ByState[store.StateDone], st.ByState[store.StateEscalated]
			r.CostUSD, r.CostUnknown = st.CostUSD, st.CostUnknown
		}
	}
	r.Duration = max(end.Sub(run.StartedAt), 0)
	if r.Done+r.Escalated > 0 {
		r.Rate, r.HasRate = float64(r.Done)/float64(r.Done+r.Escalated), true
	}
	return r
}
