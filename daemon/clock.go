package daemon

import "github.com/ticketd/ticketd/store/clock"

// Clock is the night's time (clock.Clock): timestamps, the run window and its grace period,
// and the heartbeats that extend leases and notice cancel requests. Tests drive a
// clocktest.Fake to close a window or beat a heartbeat on an event instead of waiting it out.
type Clock = clock.Clock

func (d *Daemon) clock() Clock { return clockOf([]Clock{d.Clock}) }

// clockOf is the first clock given, or the machine's.
func clockOf(clks []Clock) Clock {
	for _, c := range clks {
		if c != nil {
			return c
		}
	}
	return clock.Real{}
}
