package store

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store/storedriver"
	"github.com/ticketd/ticketd/store/storepgxv5"
	"github.com/ticketd/ticketd/store/storesqlite"
)

// settleCounter is an engine that counts the settling statements its writes run.
type settleCounter struct {
	storedriver.Engine
	settles *atomic.Int64
}

func (c settleCounter) Write(ctx context.Context, op string, fn func(ctx context.Context, tx storedriver.Tx) error) error {
	return c.Engine.Write(ctx, op, func(ctx context.Context, tx storedriver.Tx) error {
		return fn(ctx, settleCountingTx{Tx: tx, c: c})
	})
}

// settleCountingTx passes everything on to the engine's Tx, the lease horizon included,
// and counts the Settle statements.
type settleCountingTx struct {
	storedriver.Tx
	c settleCounter
}

func (t settleCountingTx) Query(ctx context.Context, q string, args ...any) (storedriver.Rows, error) {
	if q == t.c.SQL().Settle {
		t.c.settles.Add(1)
	}
	return t.Tx.Query(ctx, q, args...)
}

func (t settleCountingTx) LeasesMayHaveExpired(ctx context.Context, now int64) (bool, error) {
	lh, ok := t.Tx.(storedriver.LeaseHorizon)
	if !ok {
		return true, nil
	}
	return lh.LeasesMayHaveExpired(ctx, now)
}

func TestClaimSettlesOnlyWhenALeaseMayHaveExpired(t *testing.T) {
	forEachEngine(t, testClaimSettlesOnlyWhenALeaseMayHaveExpired)
}

// A claim due to settle expired leases (once a second) runs the settling statement only
// when a lease may have expired: on PostgreSQL that statement turns a claim sent alone, one
// round trip, into four. When one has, it is still settled by that claim.
func testClaimSettlesOnlyWhenALeaseMayHaveExpired(t *testing.T, e engine) {
	clock := newFakeClock()
	opts := Options{Now: clock.Now, Rand: rand.New(rand.NewPCG(1, 2)), BackoffBase: time.Minute, BackoffMax: 10 * time.Minute}
	ctx := context.Background()
	loc := e.location(t)
	var settles atomic.Int64
	s, err := OpenEngine(ctx, opts, func(d storedriver.Options) (storedriver.Engine, error) {
		var eng storedriver.Engine
		var err error
		if IsURL(loc) {
			eng, err = storepgxv5.Open(ctx, loc, storepgxv5.Options{Options: d})
		} else {
			eng, err = storesqlite.Open(ctx, loc, storesqlite.Options{Options: d})
		}
		if err != nil {
			return nil, err
		}
		return settleCounter{Engine: eng, settles: &settles}, nil
	})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	t.Cleanup(func() { auditChains(t, s) })
	b := bundle{s: s, loc: loc, clock: clock, ctx: ctx}

	first := b.enqueue(t, "first")
	b.enqueue(t, "second")
	b.enqueue(t, "third")
	b.claim(t, "w1") // nothing running: no lease to settle
	clock.Advance(2 * time.Second)
	b.claim(t, "w2") // w1's lease runs for another 58 s
	if n := settles.Load(); n != 0 {
		t.Fatalf("claims due to settle, no lease expired: %d settling statements; want 0", n)
	}

	if _, err := s.RequestCancel(ctx, first, "test", "stop it"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Minute) // both leases expired
	b.claim(t, "w3")
	if n := settles.Load(); n != 1 {
		t.Fatalf("claim due to settle after leases expired: %d settling statements; want 1", n)
	}
	got, err := s.Get(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != StateCancelled {
		t.Fatalf("ticket %d, cancel requested, lease expired: state %s after the next claim; want %s", first, got.State, StateCancelled)
	}
}
