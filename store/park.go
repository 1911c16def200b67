package store

import (
	"context"
	"fmt"
	"math"
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
// but out of the queue: running -> parked, event "parked" with reason, run_after = until
// (when Unpark may bring it back; the past means at the next Unpark). A ticket whose
// cancellation was requested goes to cancelled instead.
func (s *Store) Park(ctx context.Context, id, token int64, until time.Time, reason string) (State, error) {
	return s.EndAttempt(ctx, Ending{ID: id, Token: token, Kind: EndPark, Until: until, Reason: reason})
}

// parkTx is Park's transition, in the write transaction tx; it returns the ticket's new state.
func (s *Store) parkTx(ctx context.Context, tx storedriver.Tx, id, token int64, until time.Time, reason string) (State, error) {
	now := s.nowMS()
	lt, err := s.leased(ctx, tx, id, token)
	if err != nil {
		return "", err
	}
	kind, finished, runAfter, newAttempts := EventParked, any(nil), until.UnixMilli(), max(lt.attempts-1, 0)
	to := StateParked
	if lt.cancel {
		to, kind, finished, runAfter, newAttempts = StateCancelled, EventCancelled, now, now, lt.attempts
	}
	if err := s.fenced(ctx, tx, id, s.q.EndAttempt, storedriver.EndAttemptParams{State: string(to), Attempts: newAttempts,
		RunAfter: runAfter, FinishedAt: finished, UpdatedAt: now, Reason: reason, ID: id, Token: token}.Args()...); err != nil {
		return "", err
	}
	return to, s.writeEvent(ctx, tx, eventWrite{Ticket: id, At: now, Kind: kind, From: StateRunning, To: to, Attempt: lt.attempts, Actor: lt.owner, Reason: reason})
}

// Unpark puts back in the queue every parked ticket whose run_after is not after before (all
// of them when before is zero: under `ticketd once` a park lasts until the next night), with
// an "unparked" event naming who. It returns how many it unparked.
func (s *Store) Unpark(ctx context.Context, before time.Time, who string) (int, error) {
	limit := int64(math.MaxInt64)
	if !before.IsZero() {
		limit = before.UnixMilli()
	}
	var n int
	err := s.write(ctx, "unpark", func(ctx context.Context, tx storedriver.Tx) error {
		n = 0
		now := s.nowMS()
		rows, err := tx.Query(ctx, s.q.ParkedDue, limit)
		if err != nil {
			return err
		}
		type parked struct {
			id       int64
			attempts int
		}
		var ps []parked
		for rows.Next() {
			var p parked
			if err := rows.Scan(&p.id, &p.attempts); err != nil {
				rows.Close()
				return err
			}
			ps = append(ps, p)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, p := range ps {
			if _, err := tx.Exec(ctx, s.q.Unpark, now, now, p.id); err != nil {
				return err
			}
			if err := s.writeEvent(ctx, tx, eventWrite{Ticket: p.id, At: now, Kind: EventUnparked, From: StateParked, To: StateQueued, Attempt: p.attempts, Actor: who, Reason: "a new night: parked tickets go back to the queue"}); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("unpark tickets: %w", err)
	}
	return n, nil
}
