// Package clocktest holds the tests' clock, Fake, and WaitFor, the one bounded wait for a
// condition no event announces (another process, a file, the kernel's process table).
package clocktest

import (
	"sync"
	"time"

	"github.com/ticketd/ticketd/store/clock"
)

// Fake is a clock.Clock that stands still until Advance, safe for concurrent use.
// Advance runs, before it returns, every AfterFunc and After whose time it passed,
// earliest first. With AutoAdvance every After fires at once and moves the clock on by
// its duration, so code that sleeps out a backoff runs without waiting and the test reads
// the waits back (Waits). With Step every Now moves the clock on by step first, so each
// reading is later than the one before.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	timers map[*timer]bool
	auto   bool
	hold   time.Duration
	step   time.Duration
	waits  []time.Duration
	follow time.Time // when FollowReal was called; zero: the clock stands still
}

var _ clock.Clock = (*Fake)(nil)

type timer struct {
	at time.Time
	f  func()
}

// New is a Fake at now.
func New(now time.Time) *Fake {
	return &Fake{now: now, timers: map[*timer]bool{}}
}

// AutoAdvance makes each After fire at once, moving the clock on by its duration, except
// an After of exactly hold (0: none), which waits for Advance like a real timer.
func (c *Fake) AutoAdvance(hold time.Duration) *Fake {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.auto, c.hold = true, hold
	return c
}

// Step makes each Now move the clock on by d before it reads it.
func (c *Fake) Step(d time.Duration) *Fake {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.step = d
	return c
}

// FollowReal makes Now run on with the machine's clock from here, plus what Advance and
// AutoAdvance add: for a long test of real work whose backoffs alone should not be waited.
func (c *Fake) FollowReal() *Fake {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.follow = time.Now()
	return c
}

// Now is the clock's time.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(c.step)
	if !c.follow.IsZero() {
		return c.now.Add(time.Since(c.follow))
	}
	return c.now
}

// AfterFunc runs f when Advance passes now+d.
func (c *Fake) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	tm := &timer{at: c.now.Add(d), f: f}
	c.timers[tm] = true
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		pending := c.timers[tm]
		delete(c.timers, tm)
		return pending
	}
}

// After delivers the time once Advance passes now+d (at once under AutoAdvance).
func (c *Fake) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.mu.Lock()
	c.waits = append(c.waits, d)
	if c.auto && (c.hold == 0 || d != c.hold) {
		c.now = c.now.Add(d)
		ch <- c.now
		c.mu.Unlock()
		return ch
	}
	c.mu.Unlock()
	c.AfterFunc(d, func() { ch <- c.Now() })
	return ch
}

// Waits are the durations After was asked for, in order.
func (c *Fake) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

// Set moves the clock to t without running timers: for tests that place events in time.
func (c *Fake) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// Advance moves the clock on by d and runs the timers it passed, earliest first.
func (c *Fake) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*timer
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
