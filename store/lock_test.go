package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestLockExcludesOtherStores: two stores on one database (two nodes) never hold the same
// lock at once; the second waits until the first lets go, and a wait can be given up.
func TestLockExcludesOtherStores(t *testing.T) { forEachEngine(t, testLockExcludesOtherStores) }

func testLockExcludesOtherStores(t *testing.T, e engine) {
	a := e.setup(t)
	b, err := OpenLocation(a.ctx, a.loc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	unlock, err := a.s.Lock(a.ctx, LockIntake)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(a.ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := b.Lock(ctx, LockIntake); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second node's Lock while the first holds it: %v; want it to wait until its context ends", err)
	}
	got := make(chan error, 1)
	go func() {
		unlockB, err := b.Lock(a.ctx, LockIntake)
		if err == nil {
			unlockB()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("second node took the lock while the first held it (err %v)", err)
	case <-time.After(50 * time.Millisecond): // it is waiting; the test does not rely on this window
	}
	unlock()
	if err := <-got; err != nil {
		t.Fatalf("second node's Lock after the first let go: %v", err)
	}
	// Other names are other locks.
	u1, err := a.s.Lock(a.ctx, "one")
	if err != nil {
		t.Fatal(err)
	}
	defer u1()
	u2, err := b.Lock(a.ctx, "two")
	if err != nil {
		t.Fatal(err)
	}
	u2()
}

// TestWaitForWorkWakesOnEnqueue: an idle worker waiting for work returns when a ticket is
// enqueued, long before its poll; on PostgreSQL also when another node enqueues it.
func TestWaitForWorkWakesOnEnqueue(t *testing.T) { forEachEngine(t, testWaitForWorkWakesOnEnqueue) }

func testWaitForWorkWakesOnEnqueue(t *testing.T, e engine) {
	b := e.setup(t)
	waiters := []*Store{b.s}
	if e.name == "postgres" { // SQLite's notices stay in their process
		other, err := OpenLocation(b.ctx, b.loc, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		waiters = append(waiters, other)
	}
	for i, w := range waiters {
		woke := make(chan time.Duration, 1)
		ready := make(chan struct{})
		go func() {
			start := time.Now()
			// The wake channel is taken before ready, so the enqueue cannot slip in between.
			w.waiting.Add(1)
			defer w.waiting.Add(-1)
			w.wakeMu.Lock()
			wake := w.wake
			w.wakeMu.Unlock()
			close(ready)
			select {
			case <-wake:
			case <-time.After(time.Minute):
			}
			woke <- time.Since(start)
		}()
		<-ready
		b.enqueue(t, "wake-"+string(rune('a'+i)))
		if d := <-woke; d >= time.Minute {
			t.Errorf("waiter %d: not woken by the enqueue (waited out the %v poll)", i, d)
		}
	}
	if !b.s.WaitForWork(b.ctx, time.Millisecond) {
		t.Error("WaitForWork returned false with a live context")
	}
	ctx, cancel := context.WithCancel(b.ctx)
	cancel()
	if b.s.WaitForWork(ctx, time.Minute) {
		t.Error("WaitForWork returned true with a cancelled context")
	}
}
