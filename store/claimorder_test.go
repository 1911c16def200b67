package store

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestClaimOrderRetries: among the due tickets a claim takes the oldest enqueued first
// (priority desc, then id), so a ticket that waited out a retry's backoff comes back at its
// place in line, before the tickets enqueued after it, instead of behind every ticket that
// became due before its run_after (issue 37: with three workers that retry was the night's
// tail). Priority still comes first; a retry still waits out its backoff; a batch of leases
// comes out in the same order.
func TestClaimOrderRetries(t *testing.T) { forEachEngine(t, testClaimOrderRetries) }

func testClaimOrderRetries(t *testing.T, e engine) {
	for _, tt := range []struct {
		name    string
		steps   []string   // "enqueue NAME [PRIORITY]", "fail NAME KIND" (claims NAME first), "wait DURATION", "passover [NAME...]"
		workers int        // 1: Claim; more: ClaimBatch
		want    [][]string // the tickets of each claim or batch, in order, until ErrNoTicket
	}{
		{name: "due retry before later tickets", workers: 1,
			steps: []string{"enqueue a", "fail a fix", "wait 1s", "enqueue b", "enqueue c", "wait 2m"},
			want:  [][]string{{"a"}, {"b"}, {"c"}}},
		{name: "due retries by id, not by due time", workers: 1,
			// a's backoff (~1m) ends after b's release (5s); both are due at the claims.
			steps: []string{"enqueue a", "enqueue b", "fail a fix", "fail b transport", "enqueue c", "wait 2m"},
			want:  [][]string{{"a"}, {"b"}, {"c"}}},
		{name: "priority first", workers: 1,
			steps: []string{"enqueue a", "fail a fix", "enqueue b 5", "enqueue c", "wait 2m"},
			want:  [][]string{{"b"}, {"a"}, {"c"}}},
		{name: "retry not yet due is not claimed", workers: 1,
			steps: []string{"enqueue a", "fail a fix", "enqueue b", "wait 10s"},
			want:  [][]string{{"b"}}},
		{name: "batch in claim order", workers: 3,
			steps: []string{"enqueue a", "enqueue b", "fail a fix", "fail b fix", "enqueue c", "enqueue d", "wait 3m"},
			want:  [][]string{{"a", "b", "c"}, {"d"}}},
		{name: "a ticket passed over comes last", workers: 1,
			steps: []string{"enqueue a", "enqueue b", "enqueue c", "fail a transport", "wait 1m", "passover a"},
			want:  [][]string{{"b"}, {"c"}, {"a"}}},
		{name: "pass over cleared", workers: 1,
			steps: []string{"enqueue a", "enqueue b", "fail a transport", "wait 1m", "passover a", "passover"},
			want:  [][]string{{"a"}, {"b"}}},
		{name: "batch passes over to the end, then stops short", workers: 3,
			// Only a batch's first lease may take a passed-over ticket (as an overlapping one).
			steps: []string{"enqueue a", "enqueue b", "enqueue c", "fail a transport", "wait 1m", "passover a"},
			want:  [][]string{{"b", "c"}, {"a"}}},
		{name: "batch leaves a retry not yet due", workers: 3,
			steps: []string{"enqueue a", "fail a fix", "enqueue b", "enqueue c", "enqueue d", "wait 10s"},
			want:  [][]string{{"b", "c", "d"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := e.setup(t)
			names := map[int64]string{}
			for _, s := range tt.steps {
				runOrderStep(t, b, names, s)
			}
			var workers []string
			for i := range tt.workers {
				workers = append(workers, fmt.Sprint("w", i))
			}
			for n, want := range append(tt.want, nil) {
				got, err := claimNames(b, names, workers)
				if want == nil {
					if !errors.Is(err, ErrNoTicket) {
						t.Fatalf("claim %d = %v, %v; want ErrNoTicket", n, got, err)
					}
					break
				}
				if err != nil || !slices.Equal(got, want) {
					t.Fatalf("claim %d = %v, %v; want %v (steps %q)", n, got, err, want, tt.steps)
				}
			}
		})
	}
}

// runOrderStep runs one step of TestClaimOrderRetries on b; names maps ids to names.
func runOrderStep(t *testing.T, b bundle, names map[int64]string, step string) {
	t.Helper()
	f := strings.Fields(step)
	switch {
	case f[0] == "enqueue" && len(f) >= 2:
		prio := 0
		if len(f) == 3 {
			prio, _ = strconv.Atoi(f[2])
		}
		id := b.enqueue(t, f[1], func(n *NewTicket) { n.Priority = prio; n.MaxAttempts = 3 })
		names[id] = f[1]
	case f[0] == "fail" && len(f) == 3:
		l := b.claim(t, "w")
		if names[l.Ticket.ID] != f[1] {
			t.Fatalf("step %q claimed %s; want %s", step, names[l.Ticket.ID], f[1])
		}
		if st, err := b.s.Fail(b.ctx, l.Ticket.ID, l.Token, Failure{Kind: FailureKind(f[2]), Reason: "step"}); err != nil || st != StateQueued {
			t.Fatalf("step %q: %s, %v; want queued", step, st, err)
		}
	case f[0] == "passover":
		var ids []int64
		for id, n := range names {
			if slices.Contains(f[1:], n) {
				ids = append(ids, id)
			}
		}
		b.s.PassOver(ids...)
	case f[0] == "wait" && len(f) == 2:
		d, err := time.ParseDuration(f[1])
		if err != nil {
			t.Fatalf("step %q: %v", step, err)
		}
		b.clock.Advance(d)
	default:
		t.Fatalf("unknown step %q", step)
	}
}

// claimNames claims once for workers (Claim for one, ClaimBatch for more) and names the
// leased tickets in the order they came.
func claimNames(b bundle, names map[int64]string, workers []string) ([]string, error) {
	var ls []Lease
	if len(workers) == 1 {
		l, err := b.s.Claim(b.ctx, workers[0], time.Minute)
		if err != nil {
			return nil, err
		}
		ls = []Lease{l}
	} else {
		var err error
		if ls, err = b.s.ClaimBatch(b.ctx, workers, time.Minute); err != nil {
			return nil, err
		}
	}
	var got []string
	for _, l := range ls {
		got = append(got, names[l.Ticket.ID])
	}
	return got, nil
}

// TestClaimPassOverSaysWhy: a passed-over ticket taken because nothing else was ready says
// so in its claim event; the ticket claimed before it says nothing.
func TestClaimPassOverSaysWhy(t *testing.T) { forEachEngine(t, testClaimPassOverSaysWhy) }

func testClaimPassOverSaysWhy(t *testing.T, e engine) {
	b := e.setup(t)
	a := b.enqueue(t, "a")
	other := b.enqueue(t, "b")
	b.s.PassOver(a)
	for _, tt := range []struct {
		id     int64
		reason string
	}{{other, ""}, {a, passOverReason}} {
		l := b.claim(t, "w")
		if l.Ticket.ID != tt.id {
			t.Fatalf("claimed %d; want %d", l.Ticket.ID, tt.id)
		}
		evs, err := b.s.Events(b.ctx, tt.id)
		if err != nil {
			t.Fatal(err)
		}
		if last := evs[len(evs)-1]; last.Kind != EventClaimed || last.Reason != tt.reason {
			t.Errorf("ticket %d's claim event = %s %q; want claimed %q", tt.id, last.Kind, last.Reason, tt.reason)
		}
	}
}
