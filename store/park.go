package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"
)

// TransportReleases counts the times a ticket was released for a transport fault during
// one run (its events after the run's start), so a ticket whose endpoint keeps failing
// can be parked instead of spinning all night.
func (s *Store) TransportReleases(ctx context.Context, ticketID, runID int64) (int, error) {
	var n int
	// The ticket's event chain, newest first, walked back only as far as the run's start.
	err := s.r.QueryRowContext(ctx, `WITH RECURSIVE
			since(id) AS (SELECT after_event_id FROM runs WHERE id = ?2),
			chain(id) AS (
				SELECT last_event_id FROM tickets WHERE id = ?1 AND last_event_id > (SELECT id FROM since)
				UNION ALL
				SELECT e.prev_id FROM chain CROSS JOIN events e ON e.id = chain.id WHERE e.prev_id > (SELECT id FROM since))
		SELECT count(*) FROM chain CROSS JOIN events e ON e.id = chain.id
		WHERE e.kind = 'released' AND e.reason LIKE 'transport:%'`, ticketID, runID).Scan(&n)
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
	var to State
	err := s.write(ctx, "park", func(ctx context.Context, tx *wtx) error {
		now := s.nowMS()
		var attempts, cancel int
		var owner string
		row, err := s.queryRow(ctx, tx, `SELECT attempts, cancel_requested, lease_owner FROM tickets
			WHERE id = ? AND fence_token = ? AND state = 'running'`, id, token)
		if err != nil {
			return err
		}
		if err := row.Scan(&attempts, &cancel, &owner); errors.Is(err, sql.ErrNoRows) {
			return s.lostOrMissing(ctx, tx, id)
		} else if err != nil {
			return err
		}
		kind, finished, runAfter, newAttempts := "parked", any(nil), until.UnixMilli(), max(attempts-1, 0)
		to = StateParked
		if cancel != 0 {
			to, kind, finished, runAfter, newAttempts = StateCancelled, "cancelled", now, now, attempts
		}
		if err := s.fenced(ctx, tx, id, `UPDATE tickets SET state = ?, attempts = ?, run_after = ?,
				lease_expires_at = NULL, finished_at = ?, updated_at = ?, reason = ?, `+reserveEvent+`
			WHERE id = ? AND fence_token = ? AND state = 'running'`,
			string(to), newAttempts, runAfter, finished, now, reason, id, token); err != nil {
			return err
		}
		return s.appendEvent(ctx, tx, id, now, kind, StateRunning, to, attempts, owner, reason)
	})
	if err != nil {
		return "", fmt.Errorf("park ticket %d token %d: %w", id, token, err)
	}
	return to, nil
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
	err := s.write(ctx, "unpark", func(ctx context.Context, tx *wtx) error {
		n = 0
		now := s.nowMS()
		rows, err := s.query(ctx, tx, `SELECT id, attempts FROM tickets
			WHERE finished_at IS NULL AND state = 'parked' AND run_after <= ?`, limit)
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
			if _, err := s.exec(ctx, tx, `UPDATE tickets SET state = 'queued', run_after = ?, updated_at = ?, `+reserveEvent+`
				WHERE id = ? AND state = 'parked'`, now, now, p.id); err != nil {
				return err
			}
			if err := s.appendEvent(ctx, tx, p.id, now, "unparked", StateParked, StateQueued, p.attempts, who, "a new night: parked tickets go back to the queue"); err != nil {
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
