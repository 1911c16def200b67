package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestClaimBatch: one fetch for several idle workers leases what Claim would have, in
// claim order, never more than asked, never two overlapping tickets together, each lease
// with its own fence token and claimed event.
func TestClaimBatch(t *testing.T) { forEachEngine(t, testClaimBatch) }

func testClaimBatch(t *testing.T, e engine) {
	prio := func(p int) func(*NewTicket) { return func(n *NewTicket) { n.Priority = p } }
	repo := func(r string) func(*NewTicket) { return func(n *NewTicket) { n.Repo = r } }
	type ticket struct {
		name    string
		mod     []func(*NewTicket)
		predict []string
	}
	for _, tt := range []struct {
		name    string
		tickets []ticket
		paused  []string
		workers int
		want    [][]string // the tickets of each batch, in order, until ErrNoTicket
	}{
		{name: "never more than asked", workers: 2,
			tickets: []ticket{{name: "a", mod: []func(*NewTicket){prio(3)}}, {name: "b", mod: []func(*NewTicket){prio(2)}},
				{name: "c", mod: []func(*NewTicket){prio(1)}}},
			want: [][]string{{"a", "b"}, {"c"}}},
		{name: "fewer ready than asked", workers: 4,
			tickets: []ticket{{name: "a"}, {name: "b"}},
			want:    [][]string{{"a", "b"}}},
		{name: "nothing ready", workers: 3, want: nil},
		{name: "overlapping tickets never together", workers: 3,
			tickets: []ticket{
				{name: "a", mod: []func(*NewTicket){prio(9)}, predict: []string{"src/calc.py"}},
				{name: "b", mod: []func(*NewTicket){prio(8)}, predict: []string{"tests/test_x.py", "calc.py"}},
				{name: "c", mod: []func(*NewTicket){prio(7)}},
				{name: "d", mod: []func(*NewTicket){prio(6)}, predict: []string{"other.py"}},
			},
			// b overlaps a: the first batch passes over it; the second takes it alone, as
			// Claim's fallback (nothing else is ready).
			want: [][]string{{"a", "c", "d"}, {"b"}}},
		{name: "overlap among the queued only", workers: 3,
			tickets: []ticket{
				{name: "a", predict: []string{"x.py"}}, {name: "b", predict: []string{"x.py"}}, {name: "c", predict: []string{"x.py"}},
			},
			want: [][]string{{"a"}, {"b"}, {"c"}}},
		{name: "paused repository skipped", workers: 3, paused: []string{"held"},
			tickets: []ticket{{name: "a", mod: []func(*NewTicket){repo("held")}}, {name: "b"}},
			want:    [][]string{{"b"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := e.setup(t)
			names := map[int64]string{}
			for _, tk := range tt.tickets {
				id := b.enqueue(t, tk.name, tk.mod...)
				names[id] = tk.name
				if tk.predict != nil {
					if err := b.s.PredictFiles(b.ctx, id, PredictedByIssue, tk.predict); err != nil {
						t.Fatal(err)
					}
				}
			}
			b.s.SetPaused(tt.paused)
			var workers []string
			for i := range tt.workers {
				workers = append(workers, fmt.Sprint("w", i))
			}
			for n, want := range append(tt.want, nil) {
				ls, err := b.s.ClaimBatch(b.ctx, workers, time.Minute)
				if want == nil {
					if !errors.Is(err, ErrNoTicket) {
						t.Fatalf("batch %d = %d leases, %v; want ErrNoTicket", n, len(ls), err)
					}
					break
				}
				if err != nil {
					t.Fatalf("batch %d: %v", n, err)
				}
				var got []string
				for i, l := range ls {
					got = append(got, names[l.Ticket.ID])
					checkBatchLease(t, b, l, workers[i])
				}
				if !slices.Equal(got, want) {
					t.Fatalf("batch %d = %v; want %v", n, got, want)
				}
			}
		})
	}
}

// checkBatchLease: the lease is a claim's: running, charged, leased to worker with a fresh
// fence token, and its claimed event written.
func checkBatchLease(t *testing.T, b bundle, l Lease, worker string) {
	t.Helper()
	got, err := b.s.Get(b.ctx, l.Ticket.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != StateRunning || got.FenceToken != l.Token || got.LeaseOwner != worker || l.Worker != worker || l.Attempt != 1 || got.Attempts != 1 {
		t.Errorf("ticket %d after the batch: %s token %d owner %q attempts %d; lease token %d worker %q attempt %d; want running, leased to %s, attempt 1",
			l.Ticket.ID, got.State, got.FenceToken, got.LeaseOwner, got.Attempts, l.Token, l.Worker, l.Attempt, worker)
	}
	evs, err := b.s.Events(b.ctx, l.Ticket.ID)
	if err != nil {
		t.Fatal(err)
	}
	if last := evs[len(evs)-1]; last.Kind != EventClaimed || last.Actor != worker || last.Attempt != 1 {
		t.Errorf("ticket %d's last event %s by %q attempt %d; want claimed by %s, attempt 1", l.Ticket.ID, last.Kind, last.Actor, last.Attempt, worker)
	}
}

// TestClaimBatchFenceTokens: each lease of a batch carries its ticket's next fence token;
// the token of a lease the ticket had before is refused.
func TestClaimBatchFenceTokens(t *testing.T) { forEachEngine(t, testClaimBatchFenceTokens) }

func testClaimBatchFenceTokens(t *testing.T, e engine) {
	b := e.setup(t)
	first := b.enqueue(t, "a")
	b.enqueue(t, "b")
	old := b.claim(t, "w0")
	if _, err := b.s.Fail(b.ctx, first, old.Token, Failure{Kind: FailShutdown, Reason: "stopping"}); err != nil {
		t.Fatal(err)
	}
	ls, err := b.s.ClaimBatch(b.ctx, []string{"w1", "w2"}, time.Minute)
	if err != nil || len(ls) != 2 {
		t.Fatalf("ClaimBatch = %d leases, %v; want 2", len(ls), err)
	}
	seen := map[[2]int64]bool{}
	for _, l := range ls {
		key := [2]int64{l.Ticket.ID, l.Token}
		if seen[key] {
			t.Fatalf("lease (ticket %d, token %d) handed out twice", l.Ticket.ID, l.Token)
		}
		seen[key] = true
		if l.Ticket.ID == first && l.Token <= old.Token {
			t.Errorf("ticket %d's batch token %d; want above its earlier lease's %d", first, l.Token, old.Token)
		}
	}
	if _, err := b.s.Heartbeat(b.ctx, first, old.Token, time.Minute); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("heartbeat with the released lease's token: %v; want ErrLeaseLost", err)
	}
}

// TestClaimBatchCrashLosesNothing: a batch that fails after some of its leases (its
// connection lost, the process killed) leaves every ticket as it was (queued, uncharged,
// no claimed event), and the next batch takes them all; a batch whose caller gives up
// midway (ctx cancelled) still completes and hands every lease it wrote back.
func TestClaimBatchCrashLosesNothing(t *testing.T) { forEachEngine(t, testClaimBatchCrashLosesNothing) }

func testClaimBatchCrashLosesNothing(t *testing.T, e engine) {
	b := e.setup(t)
	ids := []int64{b.enqueue(t, "a"), b.enqueue(t, "b"), b.enqueue(t, "c")}
	crash := errors.New("connection lost")
	b.s.claimBatchHook = func(i int) error {
		if i == 1 {
			return crash
		}
		return nil
	}
	workers := []string{"w0", "w1", "w2"}
	if ls, err := b.s.ClaimBatch(b.ctx, workers, time.Minute); !errors.Is(err, crash) {
		t.Fatalf("ClaimBatch crashed midway = %d leases, %v; want the crash", len(ls), err)
	}
	for _, id := range ids {
		got, err := b.s.Get(b.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := b.s.Events(b.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != StateQueued || got.Attempts != 0 || got.FenceToken != 0 || len(evs) != 1 {
			t.Errorf("ticket %d after the crashed batch: %s attempts %d token %d, %d events; want queued, untouched, its enqueue event only",
				id, got.State, got.Attempts, got.FenceToken, len(evs))
		}
	}
	ctx, cancel := context.WithCancel(b.ctx)
	defer cancel()
	b.s.claimBatchHook = func(i int) error {
		if i == 0 {
			cancel()
		}
		return nil
	}
	ls, err := b.s.ClaimBatch(ctx, workers, time.Minute)
	if err != nil || len(ls) != 3 {
		t.Fatalf("ClaimBatch cancelled midway = %d leases, %v; want all 3 handed back", len(ls), err)
	}
	for i, l := range ls {
		checkBatchLease(t, b, l, workers[i])
	}
}

// TestClaimBatchRefusesBadInput: a batch names 1..64 workers and a positive lease.
func TestClaimBatchRefusesBadInput(t *testing.T) {
	b := engine{"sqlite"}.setup(t)
	for _, tt := range []struct {
		workers int
		lease   time.Duration
	}{{0, time.Minute}, {65, time.Minute}, {2, 0}} {
		ws := make([]string, tt.workers)
		if _, err := b.s.ClaimBatch(b.ctx, ws, tt.lease); err == nil || errors.Is(err, ErrNoTicket) {
			t.Errorf("ClaimBatch(%d workers, %v) = %v; want a refusal", tt.workers, tt.lease, err)
		}
	}
}
