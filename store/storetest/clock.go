package storetest

import (
	"time"

	"github.com/ticketd/ticketd/store/clock/clocktest"
)

// Clock is the tests' clock (clocktest.Fake) for the store's Now hook: the store's and each
// engine's tests move time on (leases expiring, nights ending) without sleeping.
type Clock = clocktest.Fake

// NewClock starts at 2026-11-01 22:00 UTC, a night's usual start.
func NewClock() *Clock {
	return clocktest.New(time.Date(2026, 11, 1, 22, 0, 0, 0, time.UTC))
}
