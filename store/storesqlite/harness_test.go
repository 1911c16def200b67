package storesqlite_test

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/store/storedriver"
	"github.com/ticketd/ticketd/store/storesqlite"
	"github.com/ticketd/ticketd/store/storetest"
)

// fakeClock is the store tests' settable clock (storetest.Clock).
type fakeClock = storetest.Clock

func newFakeClock() *fakeClock { return storetest.NewClock() }

type bundle struct {
	s     *store.Store
	e     *storesqlite.Engine
	clock *fakeClock
	ctx   context.Context
}

// setup opens a fresh store on a real file in t.TempDir with a fake clock; mod adjusts the
// store's options and emod the engine's.
func setup(t *testing.T, mod func(*store.Options), emod func(*storesqlite.Options)) bundle {
	t.Helper()
	clock := newFakeClock()
	opts := store.Options{Now: clock.Now, Rand: rand.New(rand.NewPCG(1, 2)), BackoffBase: time.Minute, BackoffMax: 10 * time.Minute}
	if mod != nil {
		mod(&opts)
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ticketd.db")
	var e *storesqlite.Engine
	s, err := store.OpenEngine(ctx, opts, func(d storedriver.Options) (storedriver.Engine, error) {
		eo := storesqlite.Options{Options: d, Synchronous: opts.Synchronous}
		if emod != nil {
			emod(&eo)
		}
		var err error
		e, err = storesqlite.Open(ctx, path, eo)
		return e, err
	})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return bundle{s: s, e: e, clock: clock, ctx: ctx}
}

func (b bundle) enqueue(t *testing.T, ext string, mod ...func(*store.NewTicket)) int64 {
	t.Helper()
	nt := store.NewTicket{Source: "test", ExternalID: ext, Repo: "sample", Title: "ticket " + ext, Body: "body", Labels: []string{"bug"}}
	for _, m := range mod {
		m(&nt)
	}
	id, created, err := b.s.Enqueue(b.ctx, nt)
	if err != nil || !created {
		t.Fatalf("Enqueue(%s) = %d, %v, %v; want created", ext, id, created, err)
	}
	return id
}

func (b bundle) claim(t *testing.T, worker string) store.Lease {
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

// checkExactlyOnce checks, through the store's API, that every ticket ended in a terminal
// state with exactly one terminal event, its attempts are its claims less its releases and
// rescues, and (wantDone) that each is done; it returns the done and escalated counts.
func checkExactlyOnce(t *testing.T, b bundle, wantDone bool) (done, escalated int) {
	t.Helper()
	all, err := b.s.List(b.ctx, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, sm := range all {
		evs, err := b.s.Events(b.ctx, sm.ID)
		if err != nil {
			t.Fatal(err)
		}
		var claimed, released, rescued, terminal int
		for _, e := range evs {
			switch {
			case e.Kind == "claimed":
				claimed++
			case e.Kind == "released":
				released++
			case e.Kind == "lease_expired" && e.ToState == store.StateQueued:
				rescued++
			}
			if e.ToState.Terminal() {
				terminal++
			}
		}
		switch {
		case !sm.State.Terminal() || terminal != 1:
			t.Errorf("ticket %d: state %s with %d terminal events; want terminal, exactly 1", sm.ID, sm.State, terminal)
		case sm.Attempts != claimed-released-rescued:
			t.Errorf("ticket %d: attempts %d; want claimed %d - released %d - rescued %d", sm.ID, sm.Attempts, claimed, released, rescued)
		case wantDone && sm.State != store.StateDone:
			t.Errorf("ticket %d: state %s; want done", sm.ID, sm.State)
		case sm.State == store.StateDone:
			done++
		case sm.State == store.StateEscalated:
			escalated++
		}
	}
	return done, escalated
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
