package store

import (
	"github.com/ticketd/ticketd/store/storetest"

	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// checkExactlyOnce asserts every ticket is terminal, done at most once, that its attempts
// match its claimed events less the releases and rescues (neither is charged), that its
// rescues match its lease_expired events, that its state matches the last event, and that
// its event chain (what Events reads) holds every event the table has for it. The counts
// come from one grouped pass over events, independent of the chain.
func checkExactlyOnce(t *testing.T, s *Store, wantDone bool) (done, escalated int) {
	t.Helper()
	ctx := context.Background()
	var bad int
	rows, err := s.rd.Query(ctx, `WITH per AS (
			SELECT ticket_id, count(*) AS n, count(CASE WHEN kind = 'claimed' THEN 1 END) AS claimed,
				count(CASE WHEN kind = 'released' THEN 1 END) AS released,
				count(CASE WHEN kind = 'lease_expired' AND to_state = 'queued' THEN 1 END) AS rescued,
				count(CASE WHEN kind = 'lease_expired' THEN 1 END) AS expired,
				count(CASE WHEN to_state IN ('done','escalated','cancelled') THEN 1 END) AS terminal, max(id) AS last
			FROM events GROUP BY ticket_id)
		SELECT t.id, t.state, t.attempts, t.rescues, coalesce(per.claimed, 0), coalesce(per.released, 0),
			coalesce(per.rescued, 0), coalesce(per.expired, 0), coalesce(per.terminal, 0),
			coalesce((SELECT to_state FROM events WHERE id = per.last), ''), coalesce(per.n, 0)
		FROM tickets t LEFT JOIN per ON per.ticket_id = t.id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	counts := map[int64]int{}
	for rows.Next() {
		var (
			id                                                     int64
			state, lastTo                                          State
			attempts, rescues, claimed, released, rescued, expired int
			terminal, n                                            int
		)
		if err := rows.Scan(&id, &state, &attempts, &rescues, &claimed, &released, &rescued, &expired, &terminal, &lastTo, &n); err != nil {
			t.Fatal(err)
		}
		counts[id] = n
		switch {
		case !state.Terminal():
			t.Errorf("ticket %d: state %s; want terminal", id, state)
		case terminal != 1:
			t.Errorf("ticket %d: %d terminal events; want exactly 1", id, terminal)
		case attempts != claimed-released-rescued:
			t.Errorf("ticket %d: attempts %d; want claimed events %d - released %d - rescued %d", id, attempts, claimed, released, rescued)
		case rescues != expired:
			t.Errorf("ticket %d: rescues %d; want its lease_expired events %d", id, rescues, expired)
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
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for id, n := range counts {
		evs, err := s.Events(ctx, id)
		if err != nil || len(evs) != n {
			t.Errorf("ticket %d: its chain holds %d events, %v; the table has %d", id, len(evs), err, n)
		}
	}
	return done, escalated
}

func TestConcurrentClaimComplete(t *testing.T) { forEachEngine(t, testConcurrentClaimComplete) }

func testConcurrentClaimComplete(t *testing.T, e engine) {
	n, workers := 2000, 8
	if testing.Short() {
		n = 300
	}
	b := e.setup(t, func(o *Options) { o.Now = time.Now })
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
	b.s.rd.QueryRow(b.ctx, `SELECT count(*) FROM events`).Scan(&events)
	if events != 3*n {
		t.Errorf("events = %d; want %d (enqueued, claimed, completed per ticket)", events, 3*n)
	}
}

func TestLeaseExpiry(t *testing.T) { forEachEngine(t, testLeaseExpiry) }

func testLeaseExpiry(t *testing.T, e engine) {
	b := e.setup(t)
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
	if nl.Ticket.ID != id || nl.Attempt != 1 || nl.Ticket.Rescues != 1 || nl.Token == old.Token || nl.Ticket.RescuedFrom != "old" {
		t.Fatalf("rescue claim = %+v; want ticket %d attempt 1 (the lost one is not charged), rescues 1, new token, rescued from old", nl, id)
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

// TestLostLeases: a lease that expires (the worker crashed) is rescued without charging the
// attempt, even on the final attempt, however many leases were lost (a lost lease alone does
// not say whose the crash was: SettleDead blames it); a ticket whose cancellation was
// requested is cancelled instead of rerun.
func TestLostLeases(t *testing.T) { forEachEngine(t, testLostLeases) }

func testLostLeases(t *testing.T, e engine) {
	tests := []struct {
		name        string
		maxAttempts int
		maxRescues  int
		crashes     int // leases lost in a row
		cancel      bool
		want        State // after the last lost lease; running = rescued by a new claim
		wantRescues int
		wantReason  string
	}{
		{"final attempt is rescued, not escalated", 1, 5, 1, false, StateRunning, 1, ""},
		{"crashes below the limit are all rescued", 3, 5, 4, false, StateRunning, 4, ""},
		{"lost leases past the limit are rescued too", 3, 3, 4, false, StateRunning, 4, ""},
		{"limit 1 still rescues", 3, 1, 2, false, StateRunning, 2, ""},
		{"cancel requested", 3, 5, 1, true, StateCancelled, 1, "cancel requested"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := e.setup(t, func(o *Options) { o.MaxRescues = tc.maxRescues })
			id := b.enqueue(t, "1", func(n *NewTicket) { n.MaxAttempts = tc.maxAttempts })
			// Charge every attempt but the last one with real failures first.
			for range tc.maxAttempts - 1 {
				l := b.claim(t, "w")
				if _, err := b.s.Fail(b.ctx, id, l.Token, Failure{Kind: FailFix, Reason: "tests fail"}); err != nil {
					t.Fatal(err)
				}
				b.clock.Advance(time.Hour)
			}
			l := b.claim(t, "crashy")
			if tc.cancel {
				if _, err := b.s.RequestCancel(b.ctx, id, "op", "stop"); err != nil {
					t.Fatal(err)
				}
			}
			var last Lease
			var err error
			for i := range tc.crashes {
				b.clock.Advance(2 * time.Minute) // past the lease: the worker died
				last, err = b.s.Claim(b.ctx, fmt.Sprint("next", i), time.Minute)
				if err != nil && (i < tc.crashes-1 || tc.want == StateRunning) {
					t.Fatalf("claim after crash %d: %v; want the ticket rescued", i+1, err)
				}
			}
			got, _ := b.s.Get(b.ctx, id)
			kinds := eventKinds(t, b, id)
			t.Logf("%s: got state %s attempts %d rescues %d reason %q events %v", tc.name, got.State, got.Attempts, got.Rescues, got.Reason, kinds)
			if got.State != tc.want || got.Rescues != tc.wantRescues || got.Attempts != tc.maxAttempts {
				t.Errorf("state %s rescues %d attempts %d; want %s rescues %d attempts %d (lost leases are not charged)",
					got.State, got.Rescues, got.Attempts, tc.want, tc.wantRescues, tc.maxAttempts)
			}
			if tc.want == StateRunning {
				if last.Attempt != tc.maxAttempts || last.Token <= l.Token || last.Ticket.Rescues != tc.wantRescues {
					t.Errorf("rescue lease = attempt %d token %d rescues %d; want attempt %d, a newer token than %d, rescues %d",
						last.Attempt, last.Token, last.Ticket.Rescues, tc.maxAttempts, l.Token, tc.wantRescues)
				}
				if err := b.s.Complete(b.ctx, id, last.Token, Result{}); err != nil {
					t.Errorf("rescuer completes: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrNoTicket) {
				t.Errorf("claim after the settling crash: %v; want ErrNoTicket (the ticket must not run again)", err)
			}
			if got.FinishedAt.IsZero() || kinds[len(kinds)-1] != "lease_expired" || !strings.Contains(got.Reason, tc.wantReason) {
				t.Errorf("finished %v, last event %s, reason %q; want finished with a lease_expired event and reason containing %q",
					got.FinishedAt, kinds[len(kinds)-1], got.Reason, tc.wantReason)
			}
			if err := b.s.Complete(b.ctx, id, l.Token, Result{}); !errors.Is(err, ErrLeaseLost) {
				t.Errorf("crashed worker's late complete: %v; want ErrLeaseLost", err)
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

// TestSetPausedSkipsRepos: Claim hands out no ticket of a paused repository (neither queued
// nor a rescue of an expired lease) until the pause is lifted, and NextDue counts them apart.
func TestSetPausedSkipsRepos(t *testing.T) { forEachEngine(t, testSetPausedSkipsRepos) }

func testSetPausedSkipsRepos(t *testing.T, e engine) {
	b := e.setup(t)
	a := b.enqueue(t, "a", func(n *NewTicket) { n.Repo = "broken"; n.Priority = 9 })
	ok := b.enqueue(t, "ok", func(n *NewTicket) { n.Repo = "fine" })
	crashed := b.enqueue(t, "crashed", func(n *NewTicket) { n.Repo = "down"; n.Priority = 5 })
	b.s.SetPaused([]string{"broken", "down", "broken"})
	if got := b.s.Paused(); !equal(got, []string{"broken", "down"}) {
		t.Errorf("Paused() = %v; want [broken down]", got)
	}
	b.s.SetPaused([]string{"broken"})
	l := b.claim(t, "w1") // "down" is not paused yet: its high priority wins
	if l.Ticket.ID != crashed {
		t.Fatalf("first claim = ticket %d; want %d", l.Ticket.ID, crashed)
	}
	b.s.SetPaused([]string{"broken", "down"})
	b.clock.Advance(2 * time.Minute) // w1 dies holding the "down" ticket
	steps := []struct {
		name   string
		paused []string
		want   int64 // 0: ErrNoTicket
	}{
		{"both paused: only the healthy repo", []string{"broken", "down"}, ok},
		{"both paused: nothing else", []string{"broken", "down"}, 0},
		{"down resumed: its expired lease is rescued", []string{"broken"}, crashed},
		{"broken resumed", nil, a},
	}
	for _, st := range steps {
		b.s.SetPaused(st.paused)
		l, err := b.s.Claim(b.ctx, "w2", time.Hour)
		got := l.Ticket.ID
		t.Logf("%s: paused %v: claimed %d, %v", st.name, st.paused, got, err)
		if st.want == 0 && !errors.Is(err, ErrNoTicket) || st.want != 0 && (err != nil || got != st.want) {
			t.Errorf("%s: claim = %d, %v; want %d", st.name, got, err, st.want)
		}
		if st.want == 0 {
			d, err := b.s.NextDue(b.ctx)
			if err != nil || d.Paused != 1 || d.Queued != 0 || d.Running != 2 || !d.NextLeaseExpiry.Equal(b.clock.Now().Add(time.Hour).Truncate(time.Millisecond)) {
				t.Errorf("NextDue with broken's ticket paused = %+v, %v; want paused 1, queued 0, running 2, next lease expiry in 1h", d, err)
			}
		}
	}
}

func TestNextDue(t *testing.T) { forEachEngine(t, testNextDue) }

func testNextDue(t *testing.T, e engine) {
	b := e.setup(t)
	if d, err := b.s.NextDue(b.ctx); err != nil || !d.Idle() {
		t.Fatalf("NextDue on an empty store = %+v, %v; want idle", d, err)
	}
	start := b.clock.Now().Truncate(time.Millisecond)
	id1 := b.enqueue(t, "1")
	b.clock.Advance(time.Second)
	b.enqueue(t, "2")
	l := b.claim(t, "w1") // ticket 1, lease 1 minute
	if _, err := b.s.Fail(b.ctx, id1, l.Token, Failure{Kind: FailFix}); err != nil {
		t.Fatal(err)
	}
	after, _ := b.s.Get(b.ctx, id1)
	l2 := b.claim(t, "w2") // ticket 2
	d, err := b.s.NextDue(b.ctx)
	want := Due{Queued: 1, Running: 1, NextRunAfter: after.RunAfter, NextLeaseExpiry: l2.ExpiresAt}
	t.Logf("got %+v, want %+v (start %v)", d, want, start)
	if err != nil || d != want {
		t.Errorf("NextDue = %+v, %v; want %+v", d, err, want)
	}
	if err := b.s.Complete(b.ctx, l2.Ticket.ID, l2.Token, Result{}); err != nil {
		t.Fatal(err)
	}
	d, _ = b.s.NextDue(b.ctx)
	if d.Running != 0 || d.Queued != 1 || !d.NextLeaseExpiry.IsZero() {
		t.Errorf("NextDue after complete = %+v; want 1 queued, none running", d)
	}
}

func TestListStatesUseLiterals(t *testing.T) { forEachEngine(t, testListStatesUseLiterals) }

func testListStatesUseLiterals(t *testing.T, e engine) {
	b := e.setup(t)
	for i := range 4 {
		b.enqueue(t, fmt.Sprint(i))
	}
	l := b.claim(t, "w")
	b.s.Complete(b.ctx, l.Ticket.ID, l.Token, Result{})
	b.s.RecordModelCall(b.ctx, ModelCall{TicketID: l.Ticket.ID, PromptTokens: 7, CostUSD: ptr(0.5)})
	l = b.claim(t, "w")
	tests := []struct {
		states []State
		limit  int
		want   int
	}{
		{[]State{StateQueued}, 0, 2},
		{[]State{StateQueued, StateRunning}, 0, 3},
		{[]State{StateRunning}, 0, 1},
		{[]State{StateDone}, 0, 1},
		{[]State{StateDone, StateQueued}, 0, 3},
		{nil, 2, 2},
		{nil, 0, 4},
	}
	for _, tc := range tests {
		got, err := b.s.List(b.ctx, Filter{States: tc.states, Limit: tc.limit})
		if err != nil || len(got) != tc.want {
			t.Errorf("List(%v, limit %d) = %d tickets, %v; want %d", tc.states, tc.limit, len(got), err, tc.want)
		}
	}
	done, _ := b.s.List(b.ctx, Filter{States: []State{StateDone}})
	if len(done) != 1 || done[0].ModelCalls != 1 || done[0].PromptTokens != 7 || done[0].CostUSD != 0.5 {
		t.Errorf("done ticket totals = %+v; want 1 call, 7 prompt tokens, $0.5", done)
	}
	if _, err := b.s.List(b.ctx, Filter{States: []State{"queued') OR 1=1 --"}}); err == nil {
		t.Error("List with a made-up state succeeded; want an error (states are written as literals)")
	}
}

// TestClaimRescuesLeasesOfAnotherProcess: Claim skips the rescue branch before the lease
// horizon, which another process's leases enter only at the next settle. Such a lease that
// expires in between is still rescued: once the queued branch finds nothing (the full claim
// then runs), or at the next settle, from when its priority counts again.
func TestClaimRescuesLeasesOfAnotherProcess(t *testing.T) {
	forEachEngine(t, testClaimRescuesLeasesOfAnotherProcess)
}

func testClaimRescuesLeasesOfAnotherProcess(t *testing.T, e engine) {
	b := e.setup(t)
	other, err := OpenLocation(b.ctx, b.loc, Options{Now: b.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	claim := func(s *Store, worker string, leaseFor time.Duration) int64 {
		t.Helper()
		l, err := s.Claim(b.ctx, worker, leaseFor)
		if err != nil {
			t.Fatalf("%s claim: %v", worker, err)
		}
		return l.Ticket.ID
	}
	if _, err := b.s.Claim(b.ctx, "w1", time.Minute); !errors.Is(err, ErrNoTicket) { // settles: horizon read, no lease
		t.Fatalf("claim on an empty queue: %v", err)
	}
	hot1 := b.enqueue(t, "hot1", func(n *NewTicket) { n.Priority = 9 })
	if got := claim(other, "other", 200*time.Millisecond); got != hot1 {
		t.Fatalf("other process claimed %d; want %d", got, hot1)
	}
	b.clock.Advance(300 * time.Millisecond) // the other process died; no settle yet (settleEvery is 1s)
	a := b.enqueue(t, "a")

	// Before the next settle the queued ticket may come first (the horizon has not seen the
	// lease); the expired lease must follow at the latest when no queued ticket is left.
	got := []int64{claim(b.s, "w1", time.Minute), claim(b.s, "w1", time.Minute)}
	slices.Sort(got)
	if want := []int64{hot1, a}; !slices.Equal(got, want) {
		t.Errorf("two claims before the next settle = %v; want %v (the queued ticket and the rescue)", got, want)
	}

	hot2 := b.enqueue(t, "hot2", func(n *NewTicket) { n.Priority = 9 })
	if got := claim(other, "other", 200*time.Millisecond); got != hot2 {
		t.Fatalf("other process claimed %d; want %d", got, hot2)
	}
	c := b.enqueue(t, "c")
	b.clock.Advance(1500 * time.Millisecond) // past settleEvery: the next claim reads the horizon
	if got := claim(b.s, "w1", time.Minute); got != hot2 {
		t.Errorf("claim after a settle = %d; want the expired high-priority lease %d before queued %d", got, hot2, c)
	}
	if got := claim(b.s, "w1", time.Minute); got != c {
		t.Errorf("last claim = %d; want %d", got, c)
	}
}

// A lease carries the ticket as the claim left it in the database, for a fresh claim and for
// a rescue alike: the claim reads the row back after leasing it.
func TestLeaseTicketIsTheStoredRow(t *testing.T) { forEachEngine(t, testLeaseTicketIsTheStoredRow) }

func testLeaseTicketIsTheStoredRow(t *testing.T, e engine) {
	b := e.setup(t)
	id := b.enqueue(t, "1")
	first := b.claim(t, "w1")
	b.clock.Advance(2 * time.Minute) // w1's lease expires: the next claim rescues
	rescue := b.claim(t, "w2")
	for _, tt := range []struct {
		name string
		l    Lease
	}{{"fresh claim", first}, {"rescue", rescue}} {
		if tt.l.Ticket.ID != id || tt.l.Ticket.State != StateRunning || tt.l.Token != tt.l.Ticket.FenceToken ||
			tt.l.Worker != tt.l.Ticket.LeaseOwner || !tt.l.ExpiresAt.Equal(tt.l.Ticket.LeaseExpiresAt) {
			t.Errorf("%s: lease %+v does not match its own ticket", tt.name, tt.l)
		}
	}
	got, err := b.s.Get(b.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rescue.Ticket, got) {
		t.Errorf("rescue lease ticket\n%+v\nstored row\n%+v", rescue.Ticket, got)
	}
	if first.Ticket.Attempts != 1 || rescue.Ticket.Attempts != 1 || rescue.Ticket.Rescues != 1 || rescue.Ticket.RescuedFrom != "w1" {
		t.Errorf("attempts %d then %d, rescues %d, rescued from %q; want 1, 1, 1, w1",
			first.Ticket.Attempts, rescue.Ticket.Attempts, rescue.Ticket.Rescues, rescue.Ticket.RescuedFrom)
	}
}

// BenchmarkQueueCyclePostgres is BenchmarkQueueCycle on the PostgreSQL engine (a schema of
// its own on the TICKETD_TEST_POSTGRES server): one job in flight per worker, each write
// a durable commit.
//
//	go test ./store -run XXX -bench QueueCyclePostgres
func BenchmarkQueueCyclePostgres(b *testing.B) {
	for _, workers := range []int{1, 8} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			ctx := context.Background()
			s, err := OpenURL(ctx, storetest.FreshPostgres(b), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			var next atomic.Int64
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					name := fmt.Sprintf("w%d", w)
					for next.Add(1) <= int64(b.N) {
						if _, _, err := s.Enqueue(ctx, NewTicket{Source: "bench", ExternalID: fmt.Sprint(next.Load(), name)}); err != nil {
							b.Error(err)
							return
						}
						l, err := s.Claim(ctx, name, time.Minute)
						for errors.Is(err, ErrNoTicket) { // every ready row was locked by claims in flight
							l, err = s.Claim(ctx, name, time.Minute)
						}
						if err != nil {
							b.Error(err)
							return
						}
						if err := s.Complete(ctx, l.Ticket.ID, l.Token, Result{}); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "cycles/s")
		})
	}
}

func TestFailFinal(t *testing.T) { forEachEngine(t, testFailFinal) }

// A final failure escalates with attempts left; a release stays a release, and a failure
// that is not final retries (the controls).
func testFailFinal(t *testing.T, e engine) {
	tests := []struct {
		name string
		f    Failure
		want State
	}{
		{"final fix escalates at once", Failure{Kind: FailFix, Reason: "unverified again", Final: true}, StateEscalated},
		{"a fix failure retries", Failure{Kind: FailFix, Reason: "unverified"}, StateQueued},
		{"a final release is still a release", Failure{Kind: FailShutdown, Reason: "stop", Final: true}, StateQueued},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := e.setup(t)
			id := b.enqueue(t, "1", func(n *NewTicket) { n.MaxAttempts = 3 })
			l := b.claim(t, "w")
			got, err := b.s.Fail(b.ctx, id, l.Token, tc.f)
			if err != nil || got != tc.want {
				t.Fatalf("Fail(%+v) = %s, %v; want %s", tc.f, got, err, tc.want)
			}
		})
	}
}
