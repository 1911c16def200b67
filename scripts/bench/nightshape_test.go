package main

import (
	"testing"
	"time"

	"github.com/ticketd/ticketd/store"
)

func TestShapeOf(t *testing.T) {
	start := time.Date(2026, 12, 5, 22, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return start.Add(time.Duration(s * float64(time.Second))) }
	ev := func(s float64, kind store.EventKind, from, to store.State) store.Event {
		return store.Event{At: at(s), Kind: kind, FromState: from, ToState: to}
	}
	enqueued := func(s float64) store.Event { return ev(s, "enqueued", "", store.StateQueued) }
	claimed := func(s float64) store.Event { return ev(s, "claimed", store.StateQueued, store.StateRunning) }
	completed := func(s float64) store.Event { return ev(s, "completed", store.StateRunning, store.StateDone) }
	retry := func(s float64) store.Event { return ev(s, "retry", store.StateRunning, store.StateQueued) }
	note := func(s float64, st store.State) store.Event { return ev(s, "note", st, st) }
	tests := []struct {
		name    string
		events  [][]store.Event
		workers int
		want    NightShape
	}{
		{"nothing claimed", [][]store.Event{{enqueued(0)}}, 3, NightShape{}},
		{"two workers, one ticket each", [][]store.Event{
			{enqueued(0), claimed(2), note(3, store.StateRunning), completed(12)},
			{enqueued(0), claimed(3), completed(8), note(9, store.StateDone)},
		}, 2, NightShape{FirstClaimS: 2, LastClaimS: 3, AttemptsS: 15, EvenSplitS: 2 + 15.0/2}},
		{"a retry is two attempts, the wait between them none", [][]store.Event{
			{enqueued(0), claimed(1), retry(5), claimed(20), completed(30)},
		}, 1, NightShape{FirstClaimS: 1, LastClaimS: 20, AttemptsS: 14, EvenSplitS: 15}},
		{"an attempt still running counts to the night's last event", [][]store.Event{
			{enqueued(0), claimed(4)},
			{enqueued(0), claimed(2), completed(10)},
		}, 2, NightShape{FirstClaimS: 2, LastClaimS: 4, AttemptsS: 14, EvenSplitS: 9}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := shapeOf(tt.events, start, tt.workers)
			if got != tt.want {
				t.Errorf("shapeOf = %+v, want %+v", got, tt.want)
			}
		})
	}
}
