package storetest

import (
	"sync"
	"time"
)

// Clock is a settable clock safe for concurrent use, for the store's Now hook: the store's
// and each engine's tests move time on (leases expiring, nights ending) without sleeping.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock starts at 2026-11-01 22:00 UTC, a night's usual start.
func NewClock() *Clock {
	return &Clock{t: time.Date(2026, 11, 1, 22, 0, 0, 0, time.UTC)}
}

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
