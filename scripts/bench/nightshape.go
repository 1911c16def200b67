package main

import (
	"context"
	"fmt"
	"time"

	"github.com/ticketd/ticketd/store"
)

// NightShape is how a round's night spent its wall time over its workers (issue 37, where
// three workers wait on each other): when the first attempt began, when the last began,
// the time all attempts took together, and where the night would have ended had that work
// been spread evenly over the workers from the first claim on. NightS less EvenSplitS is
// the night's tail: workers with nothing left to claim while the last attempts ran.
type NightShape struct {
	FirstClaimS float64 `json:"first_claim_s"`
	LastClaimS  float64 `json:"last_claim_s"`
	AttemptsS   float64 `json:"attempts_s"`
	EvenSplitS  float64 `json:"even_split_s"`
}

// shapeOf is the shape of a night that started at start with workers workers, from the
// events of its tickets.
func shapeOf(events [][]store.Event, start time.Time, workers int) NightShape {
	var end time.Time
	for _, ticket := range events {
		for _, e := range ticket {
			if e.At.After(end) {
				end = e.At
			}
		}
	}
	var first, last time.Time
	var work time.Duration
	for _, ticket := range events {
		for _, a := range attemptsOf(ticket, end) {
			if first.IsZero() || a.began.Before(first) {
				first = a.began
			}
			if a.began.After(last) {
				last = a.began
			}
			work += a.ended.Sub(a.began)
		}
	}
	if first.IsZero() {
		return NightShape{}
	}
	s := NightShape{FirstClaimS: first.Sub(start).Seconds(), LastClaimS: last.Sub(start).Seconds(), AttemptsS: work.Seconds()}
	s.EvenSplitS = s.FirstClaimS + s.AttemptsS/float64(max(workers, 1))
	return s
}

// span is one attempt's time.
type span struct{ began, ended time.Time }

// attemptsOf are a ticket's attempts in its events: each from an event that moves it to
// running to the next that moves it out; one still running at the end counts to end.
func attemptsOf(ticket []store.Event, end time.Time) []span {
	var out []span
	var began time.Time
	for _, e := range ticket {
		switch {
		case e.ToState == store.StateRunning && e.FromState != store.StateRunning:
			began = e.At
		case e.FromState == store.StateRunning && e.ToState != store.StateRunning && !began.IsZero():
			out = append(out, span{began, e.At})
			began = time.Time{}
		}
	}
	if !began.IsZero() {
		out = append(out, span{began, end})
	}
	return out
}

// nightShape reads the night's tickets' events back from st and shapes them (shapeOf). Only
// events at or after start count: a kept database's earlier nights are not this one's.
func nightShape(ctx context.Context, st *store.Store, start time.Time, workers int) (NightShape, error) {
	tickets, err := st.List(ctx, store.Filter{})
	if err != nil {
		return NightShape{}, fmt.Errorf("night shape: %w", err)
	}
	var all [][]store.Event
	for _, t := range tickets {
		events, err := st.Events(ctx, t.ID)
		if err != nil {
			return NightShape{}, fmt.Errorf("night shape: events of ticket %d: %w", t.ID, err)
		}
		var tonight []store.Event
		for _, e := range events {
			if !e.At.Before(start) {
				tonight = append(tonight, e)
			}
		}
		all = append(all, tonight)
	}
	return shapeOf(all, start, workers), nil
}
