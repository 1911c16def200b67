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
// events of its tickets. An attempt runs from an event that moves its ticket to running
// to the next that moves it out; one still running at the last event counts to that event.
func shapeOf(events [][]store.Event, start time.Time, workers int) NightShape {
	var first, last, end time.Time
	for _, ticket := range events {
		for _, e := range ticket {
			if e.At.After(end) {
				end = e.At
			}
		}
	}
	var work time.Duration
	for _, ticket := range events {
		var began time.Time
		for _, e := range ticket {
			switch {
			case e.ToState == store.StateRunning && e.FromState != store.StateRunning:
				began = e.At
				if first.IsZero() || began.Before(first) {
					first = began
				}
				if began.After(last) {
					last = began
				}
			case e.FromState == store.StateRunning && e.ToState != store.StateRunning && !began.IsZero():
				work += e.At.Sub(began)
				began = time.Time{}
			}
		}
		if !began.IsZero() {
			work += end.Sub(began)
		}
	}
	if first.IsZero() {
		return NightShape{}
	}
	s := NightShape{FirstClaimS: first.Sub(start).Seconds(), LastClaimS: last.Sub(start).Seconds(), AttemptsS: work.Seconds()}
	s.EvenSplitS = s.FirstClaimS + s.AttemptsS/float64(max(workers, 1))
	return s
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
