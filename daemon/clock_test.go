package daemon

import (
	"sync"
	"testing"
	"time"
)

// fakeClock is the daemon's Clock in tests: Now stands still until Advance, and Advance
// runs, before it returns, every AfterFunc whose time it passed. A test closes the window
// or beats a heartbeat when an event says so, whatever the machine's load.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers map[*fakeTimer]bool
}

type fakeTimer struct {
	at time.Time
	f  func()
}

func newFakeClock(now time.Time) *fakeClock {
	return &fakeClock{now: now, timers: map[*fakeTimer]bool{}}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	tm := &fakeTimer{at: c.now.Add(d), f: f}
	c.timers[tm] = true
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		pending := c.timers[tm]
		delete(c.timers, tm)
		return pending
	}
}

// Advance moves the clock by d and runs the timers it passed, earliest first.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	for tm := range c.timers {
		if !tm.at.After(c.now) {
			due = append(due, tm)
			delete(c.timers, tm)
		}
	}
	c.mu.Unlock()
	for len(due) > 0 {
		first := 0
		for i, tm := range due {
			if tm.at.Before(due[first].at) {
				first = i
			}
		}
		due[first].f()
		due = append(due[:first], due[first+1:]...)
	}
}

func TestFakeClock(t *testing.T) {
	c := newFakeClock(time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC))
	var fired []string
	c.AfterFunc(2*time.Second, func() { fired = append(fired, "b") })
	c.AfterFunc(time.Second, func() { fired = append(fired, "a") })
	stop := c.AfterFunc(time.Second, func() { fired = append(fired, "stopped") })
	if !stop() || stop() {
		t.Error("stop: want true once, then false")
	}
	c.Advance(999 * time.Millisecond)
	if len(fired) != 0 {
		t.Fatalf("fired %v before their time", fired)
	}
	c.Advance(1001 * time.Millisecond)
	if got := c.Now(); !got.Equal(time.Date(2026, 12, 1, 2, 0, 2, 0, time.UTC)) || len(fired) != 2 || fired[0] != "a" || fired[1] != "b" {
		t.Errorf("now %s, fired %v; want 02:00:02 and [a b]", got, fired)
	}
}
