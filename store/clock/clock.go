// Package clock is ticketd's one time source: the daemon holds a Clock and hands it down
// (the model client, the night's window, heartbeats, the store's Now), so a test drives
// time with one fake (clock/clocktest) instead of waiting it out. It imports nothing of
// ticketd's and sits under store, the bottom of the import graph (cmd -> daemon ->
// pipeline, worktree, store), so every package may use it without an arrow running up.
package clock

import "time"

// Clock is the time source. Real is the machine's; clocktest.Fake is the tests'.
type Clock interface {
	Now() time.Time
	// After delivers the time on the channel once d has passed (backoff waits).
	After(d time.Duration) <-chan time.Time
	// AfterFunc calls f in its own goroutine once d has passed, unless stop is called
	// first; stop reports whether it prevented the call.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// Real is the machine's clock.
type Real struct{}

var _ Clock = Real{}

func (Real) Now() time.Time                         { return time.Now() }
func (Real) After(d time.Duration) <-chan time.Time { return time.After(d) }
func (Real) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}
