package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// checkExactlyOnce asserts every ticket is terminal, done at most once, and that its
// attempts match its claimed events (since the last requeue) and its state matches the
// last event.
func checkExactlyOnce(t *testing.T, s *Store, wantDone bool) (done, escalated int) {
	t.Helper()
	ctx := context.Background()
	var bad int
	rows, err := s.r.QueryContext(ctx, `SELECT t.id, t.state, t.attempts,
			(SELECT count(*) FROM events e WHERE e.ticket_id = t.id AND e.kind = 'claimed'),
			(SELECT count(*) FROM events e WHERE e.ticket_id = t.id AND e.kind = 'released'),
			(SELECT count(*) FROM events e WHERE e.ticket_id = t.id AND e.to_state IN ('done','escalated','cancelled')),
			(SELECT to_state FROM events e WHERE e.ticket_id = t.id ORDER BY e.id DESC LIMIT 1)
		FROM tickets t`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id                                    int64
			state, lastTo                         State
			attempts, claimed, released, terminal int
		)
		if err := rows.Scan(&id, &state, &attempts, &claimed, &released, &terminal, &lastTo); err != nil {
			t.Fatal(err)
		}
		switch {
		case !state.Terminal():
			t.Errorf("ticket %d: state %s; want terminal", id, state)
		case terminal != 1:
			t.Errorf("ticket %d: %d terminal events; want exactly 1", id, terminal)
		case attempts != claimed-released:
			t.Errorf("ticket %d: attempts %d; want claimed events %d - released %d", id, attempts, claimed, released)
		case lastTo != state:
			t.Errorf("ticket %d: state %s but last event says %s", id, state, lastTo)
		case wantDone && state != StateDone:
			t.Errorf("ticket %d: state %s; want done", id, state)
		default:
			if state == StateDone {
				done++
			} else if state == StateEscalated {
				escalated++
			}
			continue
		}
		if bad++; bad > 10 {
			t.Fatal("too many bad tickets")
		}
	}
	return done, escalated
}

func TestConcurrentClaimComplete(t *testing.T) {
	n, workers := 2000, 8
	if testing.Short() {
		n = 300
	}
	b := setup(t, func(o *Options) { o.Now = time.Now })
	for i := range n {
		if _, _, err := b.s.Enqueue(b.ctx, NewTicket{Source: "load", ExternalID: fmt.Sprint(i), Priority: i % 3}); err != nil {
			t.Fatal(err)
		}
	}
	var (
		wg        sync.WaitGroup
		completed atomic.Int64
		seen      sync.Map
		dup       atomic.Int64
		errs      = make(chan error, workers)
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("w%d", w)
			for {
				l, err := b.s.Claim(b.ctx, name, time.Minute)
				if errors.Is(err, ErrNoTicket) {
					return
				}
				if err != nil {
					errs <- err
					return
				}
				if _, loaded := seen.LoadOrStore(l.Ticket.ID, name); loaded {
					dup.Add(1)
				}
				if err := b.s.Complete(b.ctx, l.Ticket.ID, l.Token, Result{Summary: name}); err != nil {
					errs <- err
					return
				}
				completed.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("worker error (busy must never escape): %v", err)
	}
	if completed.Load() != int64(n) || dup.Load() != 0 {
		t.Fatalf("completed %d (want %d), claimed twice %d (want 0)", completed.Load(), n, dup.Load())
	}
	if done, _ := checkExactlyOnce(t, b.s, true); done != n {
		t.Errorf("done = %d; want %d", done, n)
	}
	var events int
	b.s.r.QueryRow(`SELECT count(*) FROM events`).Scan(&events)
	if events != 3*n {
		t.Errorf("events = %d; want %d (enqueued, claimed, completed per ticket)", events, 3*n)
	}
}

func TestLeaseExpiry(t *testing.T) {
	b := setup(t)
	id := b.enqueue(t, "1")
	old := b.claim(t, "old")
	if _, err := b.s.Claim(b.ctx, "new", time.Minute); !errors.Is(err, ErrNoTicket) {
		t.Fatalf("claim inside the lease: %v; want ErrNoTicket", err)
	}
	// A heartbeat inside the lease extends it.
	b.clock.Advance(50 * time.Second)
	if _, err := b.s.Heartbeat(b.ctx, id, old.Token, time.Minute); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(50 * time.Second)
	if _, err := b.s.Claim(b.ctx, "new", time.Minute); !errors.Is(err, ErrNoTicket) {
		t.Fatalf("claim after heartbeat extension: %v; want ErrNoTicket", err)
	}
	b.clock.Advance(11 * time.Second) // past the extended lease
	nl := b.claim(t, "new")
	if nl.Ticket.ID != id || nl.Attempt != 2 || nl.Token == old.Token || nl.Ticket.RescuedFrom != "old" {
		t.Fatalf("rescue claim = %+v; want ticket %d attempt 2, new token, rescued from old", nl, id)
	}
	before, _ := b.s.Get(b.ctx, id)
	beforeEvents := eventKinds(t, b, id)
	stale := []struct {
		name string
		call func() error
	}{
		{"complete", func() error { return b.s.Complete(b.ctx, id, old.Token, Result{Branch: "stale"}) }},
		{"heartbeat", func() error { _, err := b.s.Heartbeat(b.ctx, id, old.Token, time.Hour); return err }},
		{"fail", func() error { _, err := b.s.Fail(b.ctx, id, old.Token, Failure{Kind: FailFix}); return err }},
		{"release", func() error { _, err := b.s.Fail(b.ctx, id, old.Token, Failure{Kind: FailShutdown}); return err }},
		{"cancel", func() error { return b.s.FinishCancelled(b.ctx, id, old.Token, "x") }},
		{"triage", func() error { return b.s.SaveTriage(b.ctx, id, old.Token, "{}") }},
	}
	for _, tc := range stale {
		if err := tc.call(); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("stale %s: %v; want ErrLeaseLost", tc.name, err)
		}
	}
	after, _ := b.s.Get(b.ctx, id)
	if fmt.Sprint(after) != fmt.Sprint(before) || !equal(eventKinds(t, b, id), beforeEvents) {
		t.Errorf("stale writes changed the ticket:\nbefore %+v\nafter  %+v", before, after)
	}
	if want := []string{"enqueued", "claimed", "lease_expired", "claimed"}; !equal(beforeEvents, want) {
		t.Errorf("events = %v; want %v", beforeEvents, want)
	}
	if err := b.s.Complete(b.ctx, id, nl.Token, Result{Branch: "good"}); err != nil {
		t.Fatalf("new holder complete: %v", err)
	}
}

func TestLeaseExpiryOnFinalAttemptEscalates(t *testing.T) {
	tests := []struct {
		name   string
		cancel bool
		want   State
	}{
		{"final attempt", false, StateEscalated},
		{"cancel requested", true, StateCancelled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := setup(t)
			id := b.enqueue(t, "1", func(n *NewTicket) { n.MaxAttempts = 1 })
			if !tc.cancel {
				b.claim(t, "crashy")
			} else {
				b.s.Enqueue(b.ctx, NewTicket{Source: "test", ExternalID: "1"}) // no-op
				l := b.claim(t, "crashy")
				_ = l
				b.s.RequestCancel(b.ctx, id, "op", "stop")
			}
			b.clock.Advance(2 * time.Minute)
			if _, err := b.s.Claim(b.ctx, "next", time.Minute); !errors.Is(err, ErrNoTicket) {
				t.Fatalf("claim: %v; want ErrNoTicket (the ticket must not run again)", err)
			}
			got, _ := b.s.Get(b.ctx, id)
			kinds := eventKinds(t, b, id)
			t.Logf("got state %s reason %q events %v", got.State, got.Reason, kinds)
			if got.State != tc.want || got.FinishedAt.IsZero() || kinds[len(kinds)-1] != "lease_expired" {
				t.Errorf("state %s; want %s with a lease_expired event", got.State, tc.want)
			}
		})
	}
}

// BenchmarkQueueCycle measures enqueue + claim + complete on a file database with
// synchronous=NORMAL, from 1 and 3 concurrent workers.
func BenchmarkQueueCycle(b *testing.B) {
	for _, workers := range []int{1, 3} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			ctx := context.Background()
			s, err := Open(ctx, filepath.Join(b.TempDir(), "bench.db"), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			var next atomic.Int64
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					name := fmt.Sprintf("w%d", w)
					for next.Add(1) <= int64(b.N) {
						if _, _, err := s.Enqueue(ctx, NewTicket{Source: "bench", ExternalID: fmt.Sprint(next.Load(), name)}); err != nil {
							b.Error(err)
							return
						}
						l, err := s.Claim(ctx, name, time.Minute)
						if err != nil {
							b.Error(err)
							return
						}
						if err := s.Complete(ctx, l.Ticket.ID, l.Token, Result{}); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "cycles/s")
		})
	}
}

func TestClaimExceptSkipsRepos(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "q.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for i, repo := range []string{"broken", "ok"} {
		if _, _, err := s.Enqueue(ctx, NewTicket{Source: "t", ExternalID: strconv.Itoa(i), Repo: repo, Title: repo, Priority: 10 - i}); err != nil {
			t.Fatal(err)
		}
	}
	l, err := s.ClaimExcept(ctx, "w", time.Minute, []string{"broken"})
	if err != nil || l.Ticket.Repo != "ok" {
		t.Fatalf("ClaimExcept(skip broken) = repo %q, %v; want the ok repo's ticket", l.Ticket.Repo, err)
	}
	if _, err := s.ClaimExcept(ctx, "w", time.Minute, []string{"broken"}); !errors.Is(err, ErrNoTicket) {
		t.Fatalf("second ClaimExcept = %v, want ErrNoTicket (only the skipped repo's ticket is left)", err)
	}
	if l, err := s.Claim(ctx, "w", time.Minute); err != nil || l.Ticket.Repo != "broken" {
		t.Fatalf("Claim = repo %q, %v; want the broken repo's ticket once nothing is skipped", l.Ticket.Repo, err)
	}
}
