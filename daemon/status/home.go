package status

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/ticketd/ticketd/store"
)

// Bounds of the home page: it lists the first few of each section and links to the
// filtered list for the rest, so a big night never makes it a wall.
const (
	homeAttention = 20
	homeRunning   = 50
	homeDone      = 15
	homeFinished  = 500 // the finished tickets of a night the page counts
)

// homeData is the overview: the night, what needs a human, what runs, what is done.
type homeData struct {
	common
	// Last is the latest night that ended (nil before the first); Current the night
	// running now (nil between nights). Tonight's counts are Current's, else Last's.
	Last, Current *nightView
	AllTime       []stateCount
	AllTotal      int
	// Needs is the to-do list: every failed or partial night, escalation, question, ticket
	// out of budget or parked, whatever night it came from (needs.go), less what an operator
	// dismissed (Dismissed counts those).
	Needs     []needItem
	Dismissed int
	// LastBad: the last night did not end ok, so an empty list is never "all is well".
	LastBad bool
	// Skipped are the issue files intake could not take in at its latest scan.
	Skipped []store.IntakeSkip
	// BadEnvs are the repositories whose environment recipe failed at its latest setup:
	// paused until it is fixed.
	BadEnvs  []store.Environment
	Running  []runningRow
	Done     []store.Summary
	DoneMore bool
	// DoneTotal counts this night's finished tickets besides escalations, of which Done
	// lists the first homeDone; DoneCapped says the count stopped at homeFinished.
	DoneTotal  int
	DoneCapped bool
	// Forecast is the night's cost forecast in words, "" for none.
	Forecast string
}

type stateCount struct {
	State store.State
	N     int
}

// nightView is one night as the page heads with it.
type nightView struct {
	store.Run
	Running   bool
	Worked    int
	Done      int
	Escalated int
	CostUSD   float64
	// CostUnknown marks a cost that misses some call's price (a lower bound).
	CostUnknown bool
	Duration    time.Duration
	// Now counts the tickets in the open states at request time (queued, running,
	// parked...), for the night running now.
	Queued, RunningNow, Waiting int
}

// triedLine is how one attempt (or an operator's step) ended, from the ticket's events.
type triedLine struct {
	At      time.Time
	Attempt int
	Kind    string
	Reason  string
}

type runningRow struct {
	store.Summary
	Progress store.Progress
}

func (s *Server) home(w http.ResponseWriter, r *http.Request) {
	if hasListQuery(r) {
		s.list(w, r)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	s.render(w, http.StatusOK, "home", "layout", s.homeData(ctx))
}

// homeLive is the home page's refreshed part.
func (s *Server) homeLive(w http.ResponseWriter, r *http.Request) {
	if hasListQuery(r) {
		s.listLive(w, r)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	s.render(w, http.StatusOK, "home", "live", s.homeData(ctx))
}

func (s *Server) homeData(ctx context.Context) homeData {
	d := homeData{common: common{Title: "ticketd", Nav: "home", Now: s.now(), CSRF: s.csrf, ReadOnly: s.readOnly, Refresh: "/live"}}
	ov, err := s.store.Overview(ctx)
	if err != nil {
		d.problem("counts", err)
	}
	for _, st := range store.States {
		d.AllTime = append(d.AllTime, stateCount{st, ov.ByState[st]})
		d.AllTotal += ov.ByState[st]
	}
	if s.forecast != nil {
		d.Forecast = s.forecast()
	}
	since := s.homeNights(ctx, &d, ov)
	d.Needs, d.Dismissed = s.needs(ctx, &d.common, since)
	d.LastBad = d.Last != nil && d.Last.Outcome != store.OutcomeOK
	s.homeSetup(ctx, &d)
	s.homeTonight(ctx, &d, since)
	return d
}

// homeNights fills the running and the last night, and returns when the latest started:
// "tonight" begins there (zero without a night).
func (s *Server) homeNights(ctx context.Context, d *homeData, ov store.Overview) time.Time {
	runs, err := s.store.Runs(ctx, 2)
	if err != nil {
		d.problem("nights", err)
	}
	var since time.Time
	if len(runs) > 0 {
		since = runs[0].StartedAt
		latest := s.nightView(ctx, &d.common, runs[0], ov, true)
		if latest.Running {
			d.Current = latest
			if len(runs) > 1 {
				d.Last = s.nightView(ctx, &d.common, runs[1], ov, false)
			}
		} else {
			d.Last = latest
		}
	}

	return since
}

// homeSetup fills what is wrong with the setup: skipped issue files, failed environments.
func (s *Server) homeSetup(ctx context.Context, d *homeData) {
	var err error
	if d.Skipped, err = s.store.IntakeSkips(ctx); err != nil {
		d.problem("skipped issue files", err)
	}
	if envs, err := s.store.Environments(ctx); err != nil {
		d.problem("environments", err)
	} else {
		for _, e := range envs {
			if !e.OK {
				d.BadEnvs = append(d.BadEnvs, e)
			}
		}
	}
}

// homeTonight fills the running tickets and tonight's finished ones.
func (s *Server) homeTonight(ctx context.Context, d *homeData, since time.Time) {
	running, err := s.store.List(ctx, store.Filter{States: []store.State{store.StateRunning}, Limit: homeRunning})
	if err != nil {
		d.problem("running tickets", err)
	}
	for _, t := range running {
		row := runningRow{Summary: t}
		if row.Progress, err = s.store.Progress(ctx, t.ID); err != nil {
			d.problem(fmt.Sprintf("progress of ticket %d", t.ID), err)
		}
		d.Running = append(d.Running, row)
	}
	if !since.IsZero() {
		finished, err := s.store.FinishedSince(ctx, since, homeFinished)
		if err != nil {
			d.problem("tonight's results", err)
		}
		d.DoneCapped = len(finished) == homeFinished
		for _, t := range finished {
			if t.State == store.StateEscalated {
				continue // listed under "needs you"
			}
			d.DoneTotal++
			if len(d.Done) == homeDone {
				d.DoneMore = true
				continue
			}
			d.Done = append(d.Done, t)
		}
	}
}

// nightView reads a night's figures: the run row's for an ended night, the store's stats of
// its window so far for a running one (only the latest night can be running).
func (s *Server) nightView(ctx context.Context, c *common, r store.Run, ov store.Overview, latest bool) *nightView {
	v := &nightView{Run: r, Running: latest && r.EndedAt.IsZero(), Worked: r.Worked, Done: r.Done, Escalated: r.Escalated, CostUSD: r.CostUSD}
	end := r.EndedAt
	if end.IsZero() && !v.Running {
		end = r.StartedAt // unfinished: its process died before it could say
	}
	if v.Running {
		end = c.Now
		st, err := s.store.Stats(ctx, r.ID)
		if err != nil {
			c.problem(fmt.Sprintf("figures of night %d", r.ID), err)
		} else {
			v.Worked, v.Done, v.Escalated = st.Tickets, st.ByState[store.StateDone], st.ByState[store.StateEscalated]
			v.CostUSD, v.CostUnknown = st.CostUSD, st.CostUnknown
		}
		v.Queued, v.RunningNow = ov.ByState[store.StateQueued], ov.ByState[store.StateRunning]
		for st, n := range ov.ByState {
			if waitsForHuman(st) {
				v.Waiting += n
			}
		}
	}
	v.Duration = max(end.Sub(r.StartedAt), 0)
	return v
}

// OutcomeClass is the CSS class of the night's outcome ("running", "unfinished" for a
// night whose process died before it could say).
func (v *nightView) OutcomeClass() string {
	switch {
	case v.Running:
		return "running"
	case v.Outcome == "":
		return "unfinished"
	}
	return string(v.Outcome)
}

// tried picks the events that say how each attempt ended, and what operators did.
func tried(events []store.Event) []triedLine {
	var out []triedLine
	for _, e := range events {
		switch e.Kind {
		case store.EventEnqueued, store.EventClaimed, store.EventCompleted, store.EventNote, store.EventPublished, store.EventUnparked:
			continue // not how an attempt ended; the ticket's page has the whole history
		}
		if e.Reason == "" && !slices.Contains([]store.EventKind{store.EventEscalated, store.EventCancelled, store.EventRequeued, store.EventParked}, e.Kind) {
			continue
		}
		out = append(out, triedLine{At: e.At, Attempt: e.Attempt, Kind: string(e.Kind), Reason: e.Reason})
	}
	return out
}
