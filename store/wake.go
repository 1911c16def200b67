package store

import (
	"context"
	"time"
)

// woken is the engine's OnNotify: the queue changed somewhere (an enqueue, a requeue, a
// release, a lease that ended), so every WaitForWork in this process returns.
func (s *Store) woken() {
	if s.waiting.Load() == 0 {
		return // nobody to wake: the hot path pays an atomic load, not a channel
	}
	s.wakeMu.Lock()
	close(s.wake)
	s.wake = make(chan struct{})
	s.wakeMu.Unlock()
}

// WaitForWork waits until the queue may have changed for an idle worker — a ticket became
// claimable, or a lease ended — as a notice from any process
// on this database (PostgreSQL's LISTEN/NOTIFY; within one process for SQLite) — or until
// max passes, the poll that backs the notices up. It reports false when ctx ended first.
func (s *Store) WaitForWork(ctx context.Context, max time.Duration) bool {
	s.waiting.Add(1)
	defer s.waiting.Add(-1)
	s.wakeMu.Lock()
	wake := s.wake
	s.wakeMu.Unlock()
	t := time.NewTimer(max)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-wake:
		return true
	case <-t.C:
		return true
	}
}

// NoticesReachOtherNodes reports whether WaitForWork wakes for tickets another process
// made claimable (PostgreSQL), so an idle worker may poll rarely; with SQLite it wakes only
// for this process's own.
func (s *Store) NoticesReachOtherNodes() bool { return s.eng.NoticesReachOtherProcesses() }
