package store

import (
	"context"
	"fmt"
	"time"

	"github.com/ticketd/ticketd/store/storedriver"
)

// TransportReleases counts the times a ticket was released for a transport fault during
// one run (its events after the run's start), so a ticket whose endpoint keeps failing
// can be parked instead of spinning all night.
func (s *Store) TransportReleases(ctx context.Context, ticketID, runID int64) (int, error) {
	var n int
	// The ticket's event chain, newest first, walked back only as far as the run's start.
	err := s.rd.QueryRow(ctx, s.q.TransportReleases, ticketID, runID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("transport releases of ticket %d in run %d: %w", ticketID, runID, err)
	}
	return n, nil
}

// Park gives a leased ticket back without burning its attempt, like a transport release,
// but not claimable before until (the next night): running -> queued, event "parked"
// with reason. A ticket whose cancellation was requested goes to cancelled instead.
func (s *Store) Park(ctx context.Context, id, token int64, until time.Time, reason string) (State, error) {
	var to State
	err := s.write(ctx, "park", func(ctx context.Context, tx storedriver.Tx) error {
		now := s.nowMS()
		lt, err := s.leased(ctx, tx, id, token)
		if err != nil {
			return err
		}
		kind, finished, runAfter, newAttempts := "parked", any(nil), until.UnixMilli(), max(lt.attempts-1, 0)
		to = StateQueued
		if lt.cancel {
			to, kind, finished, runAfter, newAttempts = StateCancelled, "cancelled", now, now, lt.attempts
		}
		if err := s.fenced(ctx, tx, id, s.q.EndAttempt, string(to), newAttempts, runAfter, finished, now, reason,
			"", "", id, token); err != nil {
			return err
		}
		return s.appendEvent(ctx, tx, id, now, kind, StateRunning, to, lt.attempts, lt.owner, reason)
	})
	if err != nil {
		return "", fmt.Errorf("park ticket %d token %d: %w", id, token, err)
	}
	return to, nil
}
