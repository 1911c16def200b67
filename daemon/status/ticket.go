package status

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/ticketd/ticketd/store"
)

// ticketData is one ticket's page: what was asked, every attempt with its diff, checks,
// review and stop reason, the report, the model calls, the events, and the actions.
type ticketData struct {
	common
	T        store.Ticket
	Progress *store.Progress // while running
	Totals   roleTotal       // over all calls
	Chart    callChart
	// NarrowChart is Chart drawn for a phone's width.
	NarrowChart callChart
	Calls       []store.ModelCall
	Events      []store.Event
	Attempts    []attemptSection
	Outputs     []store.Output
	Report      template.HTML
	// ReportCut is set when report.md was longer than the page reads.
	ReportCut bool
	HasPatch  bool
	// Flash says what an action just did ("requeued", "cancel requested").
	Flash string
	// ActionError says why an action was refused.
	ActionError string
	CanRequeue  bool
	CanCancel   bool
	CanRevise   bool // done: the page offers a round on its fix with a note
	CanBudget   bool // needs_budget: the page offers to add dollars per attempt
	CanAccept   bool // an escalated ticket with a kept change, on a page that can publish it
}

// attemptSection is one attempt number: its folders in the results (a released attempt
// and its rerun share a number), the check runs the maker made, the review rounds and the
// events of that attempt.
type attemptSection struct {
	N         int
	Folders   []attemptView
	CheckRuns []store.ToolCall
	Reviews   []store.Review
	Events    []store.Event
	Calls     int
	Current   bool // the attempt running now
	Newest    bool // the latest attempt: its diff is shown open
}

// checkTools are the maker's tools that run the checks: their results say what each run
// found.
var checkTools = []string{"run_checks", "submit"}

func (s *Server) ticket(w http.ResponseWriter, r *http.Request) {
	s.ticketPage(w, r, "layout")
}

func (s *Server) ticketLive(w http.ResponseWriter, r *http.Request) {
	s.ticketPage(w, r, "live")
}

func (s *Server) ticketPage(w http.ResponseWriter, r *http.Request, part string) {
	id, ok := s.ticketID(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	d, err := s.ticketData(ctx, id)
	if err != nil {
		s.ticketError(w, id, err)
		return
	}
	switch r.URL.Query().Get("did") {
	case "requeue":
		d.Flash = "Requeued: the ticket is back in the queue."
	case "cancel":
		d.Flash = "Cancel requested."
	case "budget":
		d.Flash = "Budget raised: the ticket is back in the queue."
	case "accept":
		d.Flash = "Accepted: the kept change is published as the ticket's fix."
	case "revise":
		d.Flash = "Round asked: the ticket is back in the queue; its next night works on the fix branch with your note."
	case "answer":
		d.Flash = "Answered: the ticket is back in the queue; its next attempt reads your answer."
	}
	s.render(w, http.StatusOK, "ticket", part, d)
}

// ticketID reads {id}, answering 400 for one that is not a number.
func (s *Server) ticketID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		s.message(w, http.StatusBadRequest, "Not a ticket", fmt.Sprintf("%q is not a ticket id; ticket ids are whole numbers from 1.", r.PathValue("id")), "/")
		return 0, false
	}
	return id, true
}

func (s *Server) ticketError(w http.ResponseWriter, id int64, err error) {
	if errors.Is(err, store.ErrNotFound) {
		s.message(w, http.StatusNotFound, "No such ticket", fmt.Sprintf("There is no ticket %d in this database.", id), "/")
		return
	}
	s.log.Warn("ticket page", "ticket", id, "err", err)
	s.message(w, http.StatusInternalServerError, "Ticket unreadable", fmt.Sprintf("Ticket %d could not be read: %v", id, err), "/")
}

func (s *Server) ticketData(ctx context.Context, id int64) (ticketData, error) {
	t, err := s.store.Get(ctx, id)
	if err != nil {
		return ticketData{}, err
	}
	d := ticketData{common: common{Title: fmt.Sprintf("#%d %s · ticketd", t.ID, clip(60, t.Title)), Nav: "ticket", Now: s.now(),
		CSRF: s.csrf, ReadOnly: s.readOnly}, T: t}
	if t.State == store.StateRunning {
		d.Refresh = fmt.Sprintf("/tickets/%d/live", t.ID)
		if p, err := s.store.Progress(ctx, t.ID); err != nil {
			d.problem("progress", err)
		} else {
			d.Progress = &p
		}
	}
	d.CanRequeue = t.State != store.StateQueued && t.State != store.StateRunning
	d.CanCancel = !t.State.Terminal()
	d.CanBudget = t.State == store.StateNeedsBudget
	d.CanRevise = t.State == store.StateDone && t.Branch != ""
	d.CanAccept = s.canAccept(t)
	if d.Events, err = s.store.Events(ctx, id); err != nil {
		d.problem("events", err)
	}
	if d.Calls, err = s.store.ModelCalls(ctx, id); err != nil {
		d.problem("model calls", err)
	}
	d.Chart = newCallChart(id, d.Calls, callChartW)
	d.NarrowChart = newCallChart(id, d.Calls, callChartNarrowW)
	for _, r := range d.Chart.Roles {
		d.Totals.Calls += r.Calls
		d.Totals.Failed += r.Failed
		d.Totals.Prompt += r.Prompt
		d.Totals.Cached += r.Cached
		d.Totals.Uncached += r.Uncached
		d.Totals.Out += r.Out
		d.Totals.CostUSD += r.CostUSD
		d.Totals.CostUnknown = d.Totals.CostUnknown || r.CostUnknown
		d.Totals.Estimated = d.Totals.Estimated || r.Estimated
	}
	tools, err := s.store.ToolCalls(ctx, id)
	if err != nil {
		d.problem("tool calls", err)
	}
	reviews, err := s.store.Reviews(ctx, id)
	if err != nil {
		d.problem("reviews", err)
	}
	if d.Outputs, err = s.store.Outputs(ctx, id); err != nil {
		d.problem("what was published", err)
	}
	folders, err := attemptsOf(ctx, s.results, t)
	if err != nil {
		d.problem("results folder", err)
	}
	d.Attempts = s.attempts(ctx, t, folders, d.Calls, tools, reviews, d.Events)
	if md, cut, err := s.results.ReadResult(ctx, t, "report.md", maxReportRead); err == nil {
		if d.Report, err = renderReport(md); err != nil {
			d.problem("report.md", err)
		}
		d.ReportCut = cut
	} else if !errors.Is(err, fs.ErrNotExist) {
		d.problem("report.md", err)
	}
	if _, _, err := s.results.ReadResult(ctx, t, "patch", 1); err == nil {
		d.HasPatch = true
	}
	return d, nil
}

// attempts groups what each attempt left, newest first.
func (s *Server) attempts(ctx context.Context, t store.Ticket, folders []string, calls []store.ModelCall, tools []store.ToolCall,
	reviews []store.Review, events []store.Event) []attemptSection {
	by := map[int]*attemptSection{}
	get := func(n int) *attemptSection {
		if by[n] == nil {
			by[n] = &attemptSection{N: n}
		}
		return by[n]
	}
	for _, f := range folders {
		a := get(folderAttempt(f))
		a.Folders = append(a.Folders, readAttempt(ctx, s.results, t, f))
	}
	for _, c := range calls {
		get(c.Attempt).Calls++
	}
	for _, tc := range tools {
		if slices.Contains(checkTools, tc.Tool) {
			get(tc.Attempt).CheckRuns = append(get(tc.Attempt).CheckRuns, tc)
		}
	}
	for _, r := range reviews {
		get(r.Attempt).Reviews = append(get(r.Attempt).Reviews, r)
	}
	for _, e := range events {
		if e.Attempt > 0 && e.Kind != "enqueued" {
			get(e.Attempt).Events = append(get(e.Attempt).Events, e)
		}
	}
	delete(by, 0) // calls and events before any claim (none today) have no attempt
	var out []attemptSection
	for _, a := range by {
		a.Current = t.State == store.StateRunning && a.N == t.Attempts
		out = append(out, *a)
	}
	slices.SortFunc(out, func(a, b attemptSection) int { return b.N - a.N })
	if len(out) > 0 {
		out[0].Newest = true
	}
	return out
}

// resultFile serves one file of the ticket's results as plain text (report.md, patch,
// attempt-<n>/patch ...), never as a page: it holds untrusted text.
func (s *Server) resultFile(w http.ResponseWriter, r *http.Request) {
	id, ok := s.ticketID(w, r)
	if !ok {
		return
	}
	name := r.PathValue("name")
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	t, err := s.store.Get(ctx, id)
	if err != nil {
		s.ticketError(w, id, err)
		return
	}
	data, cut, err := s.results.ReadResult(ctx, t, name, 16<<20)
	if errors.Is(err, errBadName) {
		s.message(w, http.StatusBadRequest, "Not a results file", err.Error(), fmt.Sprintf("/tickets/%d", id))
		return
	}
	if err != nil {
		s.message(w, http.StatusNotFound, "No such file", fmt.Sprintf("Ticket %d has no results file %q here (%v).", id, name, err), fmt.Sprintf("/tickets/%d", id))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("X-Content-Type-Options", "nosniff")
	w.Write(data)
	if cut {
		fmt.Fprintf(w, "\n… cut at 16 MiB; the whole file is %s\n", t.ResultDir)
	}
}
