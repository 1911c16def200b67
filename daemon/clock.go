package daemon

import "time"

// Clock is the night's time: timestamps, the run window and its grace period, and the
// heartbeats that extend leases and notice cancel requests. Tests drive one to close a
// window or beat a heartbeat on an event instead of waiting it out.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed, unless stop is called
	// first; stop reports whether it prevented the call.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

func (d *Daemon) clock() Clock {
	if d.Clock != nil {
		return d.Clock
	}
	return realClock{}
}
