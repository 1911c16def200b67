package clocktest

import (
	"testing"
	"time"

	"github.com/ticketd/ticketd/store/clock"
)

// Spy is the machine's clock that also tells a test each time the code arms a timer
// (AfterFunc), so the test waits for the code's own beats instead of for an amount of time.
type Spy struct {
	clock.Real
	armed chan time.Duration
}

var _ clock.Clock = (*Spy)(nil)

// NewSpy is a Spy that keeps up to 1024 arming notices nobody has waited for yet.
func NewSpy() *Spy { return &Spy{armed: make(chan time.Duration, 1024)} }

// AfterFunc arms a real timer and notes its duration.
func (s *Spy) AfterFunc(d time.Duration, f func()) func() bool {
	select {
	case s.armed <- d:
	default: // nobody is counting: the notice is dropped, the timer is not
	}
	return s.Real.AfterFunc(d, f)
}

// Forget drops the notices of the timers armed so far, so WaitArmed counts from now.
func (s *Spy) Forget() {
	for len(s.armed) > 0 {
		<-s.armed
	}
}

// WaitArmed returns once n timers of duration d were armed (since the Spy was made or
// Forget was called); it fails t after limit, which only keeps a broken program from
// hanging the run.
func (s *Spy) WaitArmed(t testing.TB, d time.Duration, n int, limit time.Duration) {
	t.Helper()
	deadline := time.After(limit)
	for n > 0 {
		select {
		case got := <-s.armed:
			if got == d {
				n--
			}
		case <-deadline:
			t.Fatalf("timed out after %v waiting for %d more timers of %v to be armed", limit, n, d)
		}
	}
}
