package store

import (
	"testing"
	"time"
)

// TestNextDueCountsReadyAndParked: NextDue tells the queued tickets that are claimable now
// (Ready) from those backing off, counts parked tickets apart from the queue whether or not
// their repository is paused, and a queue holding only parked tickets is idle: nothing
// comes back before a night unparks them.
func TestNextDueCountsReadyAndParked(t *testing.T) { forEachEngine(t, testNextDueCountsReadyAndParked) }

func testNextDueCountsReadyAndParked(t *testing.T, e engine) {
	b := e.setup(t)
	repo := func(name string, prio int) func(*NewTicket) {
		return func(n *NewTicket) { n.Repo, n.Priority = name, prio }
	}
	// Each claim below takes the ticket just enqueued: it has the highest priority.
	backoff := b.enqueue(t, "backoff", repo("fine", 9))
	l := b.claim(t, "w1")
	if _, err := b.s.Fail(b.ctx, backoff, l.Token, Failure{Kind: FailFix}); err != nil {
		t.Fatal(err)
	}
	until := b.clock.Now().Add(10 * time.Hour)
	for i, r := range []string{"fine", "broken"} {
		id := b.enqueue(t, "parked-"+r, repo(r, 8-i))
		l := b.claim(t, "w1")
		if l.Ticket.ID != id {
			t.Fatalf("claimed %d; want %d", l.Ticket.ID, id)
		}
		if st, err := b.s.Park(b.ctx, id, l.Token, until, "parked: endpoint down"); err != nil || st != StateParked {
			t.Fatalf("Park(%d) = %s, %v", id, st, err)
		}
	}
	b.clock.Advance(time.Second)
	ready := b.enqueue(t, "ready", repo("fine", 0))
	b.enqueue(t, "ready-broken", repo("broken", 0))
	readyAt, err := b.s.Get(b.ctx, ready)
	if err != nil {
		t.Fatal(err)
	}
	backedOff, err := b.s.Get(b.ctx, backoff)
	if err != nil {
		t.Fatal(err)
	}
	if !backedOff.RunAfter.After(b.clock.Now()) {
		t.Fatalf("the failed ticket's run_after %s is not in the future (now %s)", backedOff.RunAfter, b.clock.Now())
	}

	steps := []struct {
		name    string
		paused  []string
		advance time.Duration
		want    Due
	}{
		{"one backing off, two ready, two parked", nil, 0,
			Due{Queued: 3, Ready: 2, Parked: 2, NextRunAfter: readyAt.RunAfter}},
		{"broken paused: its queued ticket apart, its parked one still parked", []string{"broken"}, 0,
			Due{Queued: 2, Ready: 1, Paused: 1, Parked: 2, NextRunAfter: readyAt.RunAfter}},
		{"the backoff over: ready too", nil, backedOff.RunAfter.Sub(b.clock.Now()),
			Due{Queued: 3, Ready: 3, Parked: 2, NextRunAfter: readyAt.RunAfter}},
	}
	for _, st := range steps {
		b.clock.Advance(st.advance)
		b.s.SetPaused(st.paused)
		got, err := b.s.NextDue(b.ctx)
		if err != nil || got != st.want {
			t.Errorf("%s: NextDue = %+v, %v; want %+v", st.name, got, err, st.want)
		}
	}
	b.s.SetPaused(nil)

	// Cancel the queued ones: only the parked tickets are left, and the queue is idle.
	for _, id := range []int64{backoff, ready, ready + 1} {
		if st, err := b.s.RequestCancel(b.ctx, id, "op", "not wanted"); err != nil || st != StateCancelled {
			t.Fatalf("cancel %d = %s, %v", id, st, err)
		}
	}
	got, err := b.s.NextDue(b.ctx)
	if want := (Due{Parked: 2}); err != nil || got != want || !got.Idle() {
		t.Errorf("NextDue with only parked tickets = %+v (idle %v), %v; want %+v, idle", got, got.Idle(), err, want)
	}
}
