package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Due is what an idle worker needs to decide how long to sleep before claiming again, read
// from the active tickets alone (the tickets_open index), so its cost does not grow with
// the history of finished tickets.
type Due struct {
	Queued  int // queued tickets outside paused repositories, whether ready or backing off
	Running int // tickets leased now, expired leases included
	// Paused counts queued tickets in repositories SetPaused holds back (not in Queued).
	Paused int
	// Parked counts parked tickets: out of the queue until a night unparks them.
	Parked int
	// Ready counts the Queued tickets whose run_after has passed: claimable now.
	Ready int
	// NextRunAfter is the earliest run_after among the Queued tickets (zero when none): a
	// time in the past means one is ready now.
	NextRunAfter time.Time
	// NextLeaseExpiry is the earliest lease expiry among the Running tickets outside paused
	// repositories (zero when none): when it passes, that ticket can be rescued or settled.
	// Running counts tickets of paused repositories too: their workers still hold them.
	NextLeaseExpiry time.Time
	// Waiting counts the needs_info tickets: they wait for an answer, not for a worker.
	Waiting int
}

// Idle reports whether no ticket is queued or running at all.
func (d Due) Idle() bool { return d.Queued == 0 && d.Running == 0 && d.Paused == 0 }

// NextDue summarizes the active tickets for a worker that found nothing to claim: the
// daemon's idle poll. It is one read on the read pool and never waits for the writer.
func (s *Store) NextDue(ctx context.Context) (Due, error) {
	q, args := s.q.Due, []any{s.nowMS()}
	if p := s.paused.Load(); p != nil {
		q, args = s.q.DuePaused, []any{p.json, s.nowMS()}
	}
	rows, err := s.rd.Query(ctx, q, args...)
	if err != nil {
		return Due{}, fmt.Errorf("next due ticket: %w", err)
	}
	defer rows.Close()
	var d Due
	for rows.Next() {
		var (
			state         State
			paused, n     int
			ready         int
			runAfter, exp sql.NullInt64
		)
		if err := rows.Scan(&state, &paused, &n, &runAfter, &exp, &ready); err != nil {
			return Due{}, fmt.Errorf("next due ticket: %w", err)
		}
		switch {
		case state == StateParked:
			d.Parked += n
		case state == StateQueued && paused != 0:
			d.Paused += n
		case state == StateQueued:
			d.Queued, d.NextRunAfter, d.Ready = n, fromMS(runAfter), ready
		case state == StateNeedsInfo || state == StateNeedsBudget || state == StateDuplicate:
			d.Waiting += n // outside the queue until answered, or given money
		default:
			d.Running += n
			if paused == 0 {
				d.NextLeaseExpiry = fromMS(exp)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return Due{}, fmt.Errorf("next due ticket: %w", err)
	}
	return d, nil
}
