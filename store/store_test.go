package store

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store/storedriver"
	"github.com/ticketd/ticketd/store/storetest"
)

// fakeClock is the store tests' settable clock (storetest.Clock).
type fakeClock = storetest.Clock

func newFakeClock() *fakeClock { return storetest.NewClock() }

type bundle struct {
	s     *Store
	loc   string // where the database is, for a second store on it
	clock *fakeClock
	ctx   context.Context
}

// engine is one database engine the conformance suite runs on.
type engine struct{ name string }

// location is a fresh, empty database of the engine for t.
func (e engine) location(t testing.TB) string { return storetest.Location(t, e.name) }

// forEachEngine runs test once per engine, as subtests named after them. PostgreSQL's skips
// without a test server (see storetest.PostgresURL).
func forEachEngine(t *testing.T, test func(t *testing.T, e engine)) {
	for _, name := range storetest.Engines {
		t.Run(name, func(t *testing.T) { test(t, engine{name}) })
	}
}

// setup opens a fresh store of the engine (a real file in t.TempDir, or a schema of its
// own) with a fake clock.
func (e engine) setup(t *testing.T, mod ...func(*Options)) bundle {
	t.Helper()
	clock := newFakeClock()
	opts := Options{Now: clock.Now, Rand: rand.New(rand.NewPCG(1, 2)), BackoffBase: time.Minute, BackoffMax: 10 * time.Minute}
	for _, m := range mod {
		m(&opts)
	}
	ctx := context.Background()
	loc := e.location(t)
	s, err := OpenLocation(ctx, loc, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	t.Cleanup(func() { auditChains(t, s) }) // before Close: cleanups run last first
	return bundle{s: s, loc: loc, clock: clock, ctx: ctx}
}

// auditChains fails t when a ticket's event chain has a gap once its test is over: a head
// or a prev_id naming an event that was never written. Every store test ends with it, so a
// transition that reserves an event and forgets to write it fails the test that ran it,
// whatever the engine's own guards would have caught.
func auditChains(t *testing.T, s *Store) {
	t.Helper()
	for what, q := range map[string]string{
		"tickets whose newest event was never written": `SELECT count(*) FROM tickets t
			WHERE t.last_event_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM events e WHERE e.id = t.last_event_id)`,
		"events whose previous event was never written": `SELECT count(*) FROM events e
			WHERE e.prev_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM events p WHERE p.id = e.prev_id)`,
	} {
		var n int64
		err := s.write(context.Background(), "audit the event chains", func(ctx context.Context, tx storedriver.Tx) error {
			return tx.QueryRow(ctx, q).Scan(&n)
		})
		if err != nil && !errors.Is(err, storedriver.ErrClosed) {
			t.Errorf("audit the event chains: %v", err)
		} else if n != 0 {
			t.Errorf("%d %s", n, what)
		}
	}
}

func (b bundle) enqueue(t *testing.T, ext string, mod ...func(*NewTicket)) int64 {
	t.Helper()
	nt := NewTicket{Source: "test", ExternalID: ext, Repo: "sample", Title: "ticket " + ext, Body: "body", Labels: []string{"bug"}}
	for _, m := range mod {
		m(&nt)
	}
	id, created, err := b.s.Enqueue(b.ctx, nt)
	if err != nil || !created {
		t.Fatalf("Enqueue(%s) = %d, %v, %v; want created", ext, id, created, err)
	}
	return id
}

func (b bundle) claim(t *testing.T, worker string) Lease {
	t.Helper()
	l, err := b.s.Claim(b.ctx, worker, time.Minute)
	if err != nil {
		t.Fatalf("Claim(%s): %v", worker, err)
	}
	return l
}

func eventKinds(t *testing.T, b bundle, id int64) []string {
	t.Helper()
	evs, err := b.s.Events(b.ctx, id)
	if err != nil {
		t.Fatalf("Events(%d): %v", id, err)
	}
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, string(e.Kind))
	}
	return kinds
}

func TestLifecycleDone(t *testing.T) { forEachEngine(t, testLifecycleDone) }

func testLifecycleDone(t *testing.T, e engine) {
	b := e.setup(t)
	id := b.enqueue(t, "1")
	l := b.claim(t, "w1")
	if l.Ticket.ID != id || l.Attempt != 1 || l.Ticket.State != StateRunning || l.Token == 0 {
		t.Fatalf("claim got %+v; want ticket %d running attempt 1 with a token", l, id)
	}
	if want := b.clock.Now().Add(time.Minute); !l.ExpiresAt.Equal(want) {
		t.Errorf("lease expires %v; want %v", l.ExpiresAt, want)
	}
	if err := b.s.SaveTriage(b.ctx, id, l.Token, `{"summary":"x"}`); err != nil {
		t.Fatalf("SaveTriage: %v", err)
	}
	if c, err := b.s.Heartbeat(b.ctx, id, l.Token, 2*time.Minute); err != nil || c {
		t.Fatalf("Heartbeat = %v, %v; want false, nil", c, err)
	}
	if err := b.s.Complete(b.ctx, id, l.Token, Result{Branch: "ticketd/1-x", ResultDir: "/r", Summary: "fixed"}); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	got, err := b.s.Get(b.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != StateDone || got.FinishedAt.IsZero() || got.Branch != "ticketd/1-x" || got.Triage != `{"summary":"x"}` ||
		!got.LeaseExpiresAt.IsZero() || got.Attempts != 1 || len(got.Labels) != 1 {
		t.Errorf("after complete got %+v", got)
	}
	if kinds, want := eventKinds(t, b, id), []string{"enqueued", "claimed", "completed"}; !equal(kinds, want) {
		t.Errorf("events = %v; want %v", kinds, want)
	}
	if _, err := b.s.Claim(b.ctx, "w1", time.Minute); !errors.Is(err, ErrNoTicket) {
		t.Errorf("Claim on empty queue: %v; want ErrNoTicket", err)
	}
	if err := b.s.Complete(b.ctx, id, l.Token, Result{}); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("second Complete: %v; want ErrLeaseLost", err)
	}
	if err := b.s.Complete(b.ctx, 999, 1, Result{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("Complete unknown id: %v; want ErrNotFound", err)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestEnqueueIdempotent(t *testing.T) { forEachEngine(t, testEnqueueIdempotent) }

func testEnqueueIdempotent(t *testing.T, e engine) {
	b := e.setup(t)
	id := b.enqueue(t, "gh-7")
	id2, created, err := b.s.Enqueue(b.ctx, NewTicket{Source: "test", ExternalID: "gh-7", Title: "changed"})
	if err != nil || created || id2 != id {
		t.Fatalf("re-Enqueue = %d, %v, %v; want %d, false, nil", id2, created, err, id)
	}
	got, _ := b.s.Get(b.ctx, id)
	if got.Title != "ticket gh-7" || got.MaxAttempts != DefaultMaxAttempts {
		t.Errorf("re-Enqueue changed the ticket: %+v", got)
	}
	other, created, err := b.s.Enqueue(b.ctx, NewTicket{Source: "other", ExternalID: "gh-7"})
	if err != nil || !created || other == id {
		t.Errorf("same external id, other source = %d, %v, %v; want a new ticket", other, created, err)
	}
	if _, _, err := b.s.Enqueue(b.ctx, NewTicket{Source: "test"}); err == nil {
		t.Error("Enqueue without external id succeeded; want an error")
	}
}

func TestClaimOrder(t *testing.T) { forEachEngine(t, testClaimOrder) }

func testClaimOrder(t *testing.T, e engine) {
	b := e.setup(t)
	low := b.enqueue(t, "low")
	high := b.enqueue(t, "high", func(n *NewTicket) { n.Priority = 5 })
	low2 := b.enqueue(t, "low2")
	var got []int64
	for range 3 {
		got = append(got, b.claim(t, "w").Ticket.ID)
	}
	want := []int64{high, low, low2}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("claim order = %v; want %v (priority desc, then id)", got, want)
		}
	}
}

func TestFail(t *testing.T) { forEachEngine(t, testFail) }

func testFail(t *testing.T, e engine) {
	tests := []struct {
		name         string
		kind         FailureKind
		maxAttempts  int
		cancel       bool
		wantState    State
		wantAttempts int
		wantEvent    string
		wantDelayMin time.Duration
		wantDelayMax time.Duration
	}{
		{"fix with attempts left retries after backoff", FailFix, 3, false, StateQueued, 1, "retry", 48 * time.Second, 72 * time.Second},
		{"budget counts too", FailBudget, 3, false, StateQueued, 1, "retry", 48 * time.Second, 72 * time.Second},
		{"fix at max escalates", FailFix, 1, false, StateEscalated, 1, "escalated", 0, 0},
		{"refused by rule escalates with attempts left", FailHuman, 3, false, StateEscalated, 1, "escalated", 0, 0},
		{"transport releases without burning", FailTransport, 1, false, StateQueued, 0, "released", 5 * time.Second, 5 * time.Second},
		{"shutdown releases at once", FailShutdown, 1, false, StateQueued, 0, "released", 0, 0},
		{"cancel requested wins", FailFix, 3, true, StateCancelled, 1, "cancelled", 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := e.setup(t)
			id := b.enqueue(t, "1", func(n *NewTicket) { n.MaxAttempts = tc.maxAttempts })
			l := b.claim(t, "w1")
			if tc.cancel {
				if _, err := b.s.RequestCancel(b.ctx, id, "op", "not needed"); err != nil {
					t.Fatal(err)
				}
			}
			now := b.clock.Now()
			st, err := b.s.Fail(b.ctx, id, l.Token, Failure{Kind: tc.kind, Reason: "tests failed", Branch: "ticketd/1-x"})
			if err != nil {
				t.Fatalf("Fail: %v", err)
			}
			got, _ := b.s.Get(b.ctx, id)
			kinds := eventKinds(t, b, id)
			delay := got.RunAfter.Sub(now)
			t.Logf("input kind=%s max=%d cancel=%v; got state=%s attempts=%d delay=%v events=%v", tc.kind, tc.maxAttempts, tc.cancel, st, got.Attempts, delay, kinds)
			if st != tc.wantState || got.State != tc.wantState {
				t.Errorf("state = %s (stored %s); want %s", st, got.State, tc.wantState)
			}
			if got.Attempts != tc.wantAttempts {
				t.Errorf("attempts = %d; want %d", got.Attempts, tc.wantAttempts)
			}
			if last := kinds[len(kinds)-1]; last != tc.wantEvent {
				t.Errorf("last event = %s; want %s", last, tc.wantEvent)
			}
			if got.State == StateQueued && (delay < tc.wantDelayMin || delay > tc.wantDelayMax) {
				t.Errorf("run_after delay = %v; want within [%v, %v]", delay, tc.wantDelayMin, tc.wantDelayMax)
			}
			if got.State.Terminal() != !got.FinishedAt.IsZero() {
				t.Errorf("finished_at %v with state %s", got.FinishedAt, got.State)
			}
			if got.Branch != "ticketd/1-x" || got.Reason == "" {
				t.Errorf("branch %q reason %q; want partial branch and a reason kept", got.Branch, got.Reason)
			}
			if _, err := b.s.Fail(b.ctx, id, l.Token, Failure{Kind: tc.kind}); !errors.Is(err, ErrLeaseLost) {
				t.Errorf("second Fail: %v; want ErrLeaseLost", err)
			}
		})
	}
}

func TestBackoffGrowsAndCaps(t *testing.T) { forEachEngine(t, testBackoffGrowsAndCaps) }

func testBackoffGrowsAndCaps(t *testing.T, e engine) {
	b := e.setup(t)
	for _, tc := range []struct {
		attempt  int
		min, max time.Duration
	}{
		{1, 48 * time.Second, 72 * time.Second},
		{2, 96 * time.Second, 144 * time.Second},
		{3, 192 * time.Second, 288 * time.Second},
		{10, 8 * time.Minute, 12 * time.Minute},
	} {
		got := b.s.backoff(tc.attempt)
		if got < tc.min || got > tc.max {
			t.Errorf("backoff(%d) = %v; want within [%v, %v]", tc.attempt, got, tc.min, tc.max)
		}
	}
}

func TestRetryWaitsForRunAfter(t *testing.T) { forEachEngine(t, testRetryWaitsForRunAfter) }

func testRetryWaitsForRunAfter(t *testing.T, e engine) {
	b := e.setup(t)
	id := b.enqueue(t, "1")
	l := b.claim(t, "w1")
	if _, err := b.s.Fail(b.ctx, id, l.Token, Failure{Kind: FailFix, Reason: "r"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.s.Claim(b.ctx, "w1", time.Minute); !errors.Is(err, ErrNoTicket) {
		t.Fatalf("claim during backoff: %v; want ErrNoTicket", err)
	}
	b.clock.Advance(2 * time.Minute)
	l2 := b.claim(t, "w1")
	if l2.Attempt != 2 || l2.Token == l.Token {
		t.Errorf("second claim attempt %d token %d (old %d); want attempt 2 and a new token", l2.Attempt, l2.Token, l.Token)
	}
}

func TestDatabaseRejectsBadRows(t *testing.T) { forEachEngine(t, testDatabaseRejectsBadRows) }

func testDatabaseRejectsBadRows(t *testing.T, e engine) {
	b := e.setup(t)
	id := b.enqueue(t, "1")
	bad := []string{
		`UPDATE tickets SET state = 'bogus' WHERE id = ?`,
		`UPDATE tickets SET state = 'done' WHERE id = ?`,                                          // terminal without finished_at
		`UPDATE tickets SET finished_at = 1 WHERE id = ?`,                                         // finished while queued
		`UPDATE tickets SET state = 'running' WHERE id = ?`,                                       // running without a lease
		`UPDATE events SET kind = 'x' WHERE ticket_id = ?`,                                        // append-only
		`DELETE FROM events WHERE ticket_id = ?`,                                                  // append-only
		`INSERT INTO events (id, ticket_id, at, kind, prev_id) VALUES (1000, ?, 1, 'loop', 1000)`, // chain loop
		`DELETE FROM tickets WHERE id = ?`,                                                        // its history refers to it
	}
	if e.name == "sqlite" {
		// PostgreSQL's events.ticket_id has no foreign key (migration 025): every statement
		// that writes an event takes the id from the ticket row it updates or reads.
		bad = append(bad, `INSERT INTO events (ticket_id, at, kind) VALUES (? + 1000, 1, 'orphan')`)
	}
	for _, q := range bad {
		err := b.s.write(b.ctx, "bad row", func(ctx context.Context, tx storedriver.Tx) error {
			_, err := tx.Exec(ctx, strings.ReplaceAll(q, "?", strconv.FormatInt(id, 10)))
			return err
		})
		if err == nil {
			t.Errorf("%s: accepted; want the database to refuse it", q)
		}
	}
}
