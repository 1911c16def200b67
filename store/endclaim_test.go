package store

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestEndAndClaim: completes that ride on a fetch are written with its leases in one
// transaction: each complete as Complete writes it (result, event, its open round ended),
// each worker whose complete held leased its next ticket in claim order; a complete whose
// lease had gone fails only its own worker, who is leased nothing, and changes nothing.
func TestEndAndClaim(t *testing.T) { forEachEngine(t, testEndAndClaim) }

func testEndAndClaim(t *testing.T, e engine) {
	for _, tt := range []struct {
		name     string
		tickets  int  // enqueued after the first leases
		stale    int  // the part whose token is stale, or -1
		onlyAsks bool // the last part ends nothing
		staleOf  int  // whose held ticket the stale part ends, with that lease's old token, or -1 (its own)
		predict  int  // the new ticket from which on each has predicted files, or 0
		want     []string
	}{
		{name: "all complete and claim", tickets: 3, stale: -1, staleOf: -1, want: []string{"n0", "n1", "n2"}},
		{name: "fewer ready than asked", tickets: 1, stale: -1, staleOf: -1, want: []string{"n0", "", ""}},
		{name: "nothing ready", tickets: 0, stale: -1, staleOf: -1, want: []string{"", "", ""}},
		{name: "a lost lease fails only its worker", tickets: 3, stale: 1, staleOf: -1, want: []string{"n0", "", "n1"}},
		{name: "a worker that only asks", tickets: 3, stale: -1, staleOf: -1, onlyAsks: true, want: []string{"n0", "n1", "n2"}},
		{name: "two workers end one ticket: only its lease's counts", tickets: 3, stale: 1, staleOf: 0, want: []string{"n0", "", "n1"}},
		{name: "the stale one first", tickets: 3, stale: 0, staleOf: 1, want: []string{"", "n0", "n1"}},
		// A batch stops before a ticket with predicted files; the workers it left are served
		// by a claim of their own, which takes that ticket as Claim would.
		{name: "a ticket with predicted files next", tickets: 2, stale: -1, staleOf: -1, predict: 1, want: []string{"n0", "n1", ""}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := e.setup(t)
			names := map[int64]string{}
			var held []Lease
			for i := range 3 {
				names[b.enqueue(t, fmt.Sprint("h", i))] = fmt.Sprint("h", i)
				held = append(held, b.claim(t, fmt.Sprint("w", i)))
			}
			// The first ticket is a revised fix: its round is open while it runs.
			if err := b.s.Complete(b.ctx, held[0].Ticket.ID, held[0].Token, Result{Branch: "ticketd/1-fix"}); err != nil {
				t.Fatal(err)
			}
			if _, err := b.s.Revise(b.ctx, held[0].Ticket.ID, "alice", RoundAsk{Source: RoundRevise, Note: "again", MaxRounds: 3}); err != nil {
				t.Fatal(err)
			}
			held[0] = b.claim(t, "w0")
			for i := range tt.tickets {
				id := b.enqueue(t, fmt.Sprint("n", i))
				names[id] = fmt.Sprint("n", i)
				if tt.predict > 0 && i >= tt.predict {
					if err := b.s.PredictFiles(b.ctx, id, PredictedByIssue, []string{fmt.Sprint("pkg/m", i, ".py")}); err != nil {
						t.Fatal(err)
					}
				}
			}
			parts := make([]*endClaim, 3)
			for i, l := range held {
				e := Ending{ID: l.Ticket.ID, Token: l.Token, Kind: EndComplete,
					Result: Result{Branch: fmt.Sprint("ticketd/fix-", i), ResultDir: fmt.Sprint("/r/", i), Summary: "fixed"}}
				if i == tt.stale {
					e.Token--
					if o := tt.staleOf; o >= 0 {
						e.ID, e.Token = held[o].Ticket.ID, held[o].Token-1
					}
				}
				parts[i] = &endClaim{worker: l.Worker, end: &e}
			}
			if tt.onlyAsks {
				parts[2].end = nil
			}
			b.s.endAndClaim(b.ctx, parts, time.Minute)
			for i, p := range parts {
				l := held[i]
				got, err := b.s.Get(b.ctx, l.Ticket.ID)
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case i == tt.stale:
					if !errors.Is(p.err, ErrLeaseLost) || p.state != "" || p.lease.Token != 0 {
						t.Errorf("%s with a stale token: state %q lease %d err %v; want ErrLeaseLost, nothing leased", p.worker, p.state, p.lease.Ticket.ID, p.err)
					}
					if got.State != StateRunning || got.FenceToken != l.Token {
						t.Errorf("ticket %d after a stale complete: %s token %d; want running, token %d", l.Ticket.ID, got.State, got.FenceToken, l.Token)
					}
					continue
				case p.end == nil:
					if got.State != StateRunning {
						t.Errorf("ticket %d of a worker that only asked: %s; want running", l.Ticket.ID, got.State)
					}
				default:
					if p.state != StateDone || got.State != StateDone || got.Branch != p.end.Result.Branch ||
						got.ResultDir != p.end.Result.ResultDir || got.Summary != "fixed" {
						t.Errorf("ticket %d: part state %q, ticket %s branch %q dir %q summary %q; want done with %+v",
							l.Ticket.ID, p.state, got.State, got.Branch, got.ResultDir, got.Summary, p.end.Result)
					}
					evs, err := b.s.Events(b.ctx, l.Ticket.ID)
					if err != nil {
						t.Fatal(err)
					}
					if last := evs[len(evs)-1]; last.Kind != EventCompleted || last.Actor != l.Worker || last.ToState != StateDone {
						t.Errorf("ticket %d's last event %s by %q to %s; want completed by %s", l.Ticket.ID, last.Kind, last.Actor, last.ToState, l.Worker)
					}
				}
				if want := tt.want[i]; want == "" {
					if p.lease.Token != 0 || (i != tt.stale && !errors.Is(p.err, ErrNoTicket)) {
						t.Errorf("%s: lease of ticket %d, %v; want ErrNoTicket", p.worker, p.lease.Ticket.ID, p.err)
					}
				} else {
					if p.err != nil || names[p.lease.Ticket.ID] != want {
						t.Fatalf("%s: lease of %q, %v; want %s", p.worker, names[p.lease.Ticket.ID], p.err, want)
					}
					checkBatchLease(t, b, p.lease, p.worker)
				}
			}
			// The revised ticket's round ends with its complete, and only then.
			if _, open, err := b.s.OpenRound(b.ctx, held[0].Ticket.ID); err != nil || open != (parts[0].state == "") {
				t.Errorf("the revised ticket's round open: %v (%v) after its part ended in %q; want open only if not done", open, err, parts[0].state)
			}
		})
	}
}

// TestFetcherEndAndClaimDrains: workers that complete and claim through EndAndClaim drain
// the queue, whether their fetches gather or not: every ticket is done exactly once, by the
// worker that held it, and no lease is left.
func TestFetcherEndAndClaimDrains(t *testing.T) {
	for _, gather := range []time.Duration{0, time.Millisecond} {
		t.Run(fmt.Sprint("gather=", gather), func(t *testing.T) {
			forEachEngine(t, func(t *testing.T, e engine) { testFetcherEndAndClaimDrains(t, e, gather) })
		})
	}
}

func testFetcherEndAndClaimDrains(t *testing.T, e engine, gather time.Duration) {
	b := e.setup(t)
	const workers, tickets = 4, 40
	for i := range tickets {
		b.enqueue(t, fmt.Sprint("t", i))
	}
	f := NewFetcher(b.s, time.Minute).Gather(workers, gather)
	var mu sync.Mutex
	doneBy := map[int64]string{}
	var wg sync.WaitGroup
	for w := range workers {
		name := fmt.Sprint("w", w)
		wg.Go(func() {
			l, err := f.Claim(b.ctx, name)
			for err == nil {
				var state State
				held := l
				end := Ending{ID: held.Ticket.ID, Token: held.Token, Kind: EndComplete, Result: Result{Summary: name}}
				if held.Ticket.ID%5 == 0 { // an ending with a results file is written alone first
					end.Artifacts = []ArtifactFile{{Path: "report.md", Content: []byte("done")}}
				}
				state, l, err = f.EndAndClaim(b.ctx, name, end)
				if state == StateDone {
					mu.Lock()
					if prev, dup := doneBy[held.Ticket.ID]; dup {
						t.Errorf("ticket %d done by %s and %s", held.Ticket.ID, prev, name)
					}
					doneBy[held.Ticket.ID] = name
					mu.Unlock()
				}
			}
			if !errors.Is(err, ErrNoTicket) {
				t.Errorf("%s: %v; want ErrNoTicket once drained", name, err)
			}
		})
	}
	wg.Wait()
	if len(doneBy) != tickets {
		t.Fatalf("%d tickets done; want %d", len(doneBy), tickets)
	}
	for id, by := range doneBy {
		got, err := b.s.Get(b.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != StateDone || got.Summary != by || got.LeaseOwner != by {
			t.Errorf("ticket %d: %s, summary %q, owner %q; want done by %s", id, got.State, got.Summary, got.LeaseOwner, by)
		}
	}
}
