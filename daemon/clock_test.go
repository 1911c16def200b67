package daemon

import (
	"time"

	"github.com/ticketd/ticketd/store/clock/clocktest"
)

// fakeClock is the daemon's Clock in tests: Now stands still until Advance, and Advance
// runs, before it returns, every AfterFunc whose time it passed. A test closes the window
// or beats a heartbeat when an event says so, whatever the machine's load.
type fakeClock = clocktest.Fake

func newFakeClock(now time.Time) *fakeClock { return clocktest.New(now) }
