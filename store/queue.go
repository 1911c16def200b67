package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Lease is a worker's hold on a claimed ticket.
type Lease struct {
	Ticket    Ticket // as claimed (State running, Attempts already incremented)
	Token     int64  // fence token: every later write names it
	Attempt   int    // == Ticket.Attempts
	Worker    string
	ExpiresAt time.Time
}

// Result is what a successful attempt leaves behind.
type Result struct{ Branch, ResultDir, Summary string }

// FailureKind classifies why an attempt stopped, which decides whether it counts.
type FailureKind string

const (
	FailFix       FailureKind = "fix"       // counts the attempt: retry with backoff or escalate at max
	FailBudget    FailureKind = "budget"    // counts the attempt
	FailTransport FailureKind = "transport" // does not burn the attempt: back to queued (attempt count restored)
	FailShutdown  FailureKind = "shutdown"  // does not burn the attempt
	// FailMachine: the machine failed the attempt (its worktree or the repository's base
	// ref vanished); does not burn the attempt.
	FailMachine FailureKind = "machine"
)

// Failure describes a stopped attempt.
type Failure struct {
	Kind      FailureKind
	Reason    string
	Branch    string // optional: partial work kept for the escalation report
	ResultDir string // optional: where report.md / patch were written
}

// settleEvery bounds how often Claim looks for expired leases that must end rather than
// rerun (see settleExpired).
const settleEvery = time.Second

// transportDelay is how long a ticket released after a transport fault waits, so a dead
// endpoint is not hammered by the same ticket in a tight loop.
func (s *Store) transportDelay() time.Duration { return min(5*time.Second, s.opts.BackoffBase) }

// claimPick finds the ticket Claim leases: the queued branch and the rescue branch each
// walk tickets_open in claim order and yield at most one candidate, reading the state in
// the row. Both repeat the index's WHERE term verbatim (SQLite uses a partial index only on
// a literal match). skipPaused adds the SetPaused filter (a row lookup per candidate). Without
// rescue, only the queued branch runs: Claim uses that while no lease can have expired
// (see leaseHorizon), which spares every claim the second walk and the merge. It binds ?1
// now, ?2 MaxRescues and ?3 the paused set.
func claimPick(skipPaused, rescue bool) string {
	filter := ""
	if skipPaused {
		filter = ` AND repo NOT IN (SELECT value FROM json_each(?3))`
	}
	queued := `SELECT id, priority, run_after FROM tickets
				WHERE finished_at IS NULL AND state = 'queued' AND run_after <= ?1` + filter + `
				ORDER BY priority DESC, run_after, id LIMIT 1`
	if !rescue {
		return `SELECT id FROM (` + queued + `)`
	}
	return `SELECT id FROM (
			SELECT * FROM (` + queued + `)
			UNION ALL
			SELECT * FROM (SELECT id, priority, run_after FROM tickets
				WHERE finished_at IS NULL AND state = 'running' AND lease_expires_at <= ?1
					AND rescues + 1 < ?2 AND cancel_requested = 0` + filter + `
				ORDER BY priority DESC, run_after, id LIMIT 1)
		) ORDER BY priority DESC, run_after, id LIMIT 1`
}

// claimPicks[skipPaused][rescue] are claimPick's four shapes.
var claimPicks = [2][2]string{
	{claimPick(false, false), claimPick(false, true)},
	{claimPick(true, false), claimPick(true, true)},
}

// claimLease leases the picked ticket ?4 to worker ?1 until ?2 (now ?3). A rescue does not
// charge the attempt its expired lease cut short: attempts stay, rescues grows. Claim reads
// the row back with a SELECT instead of RETURNING, which would buffer it in a temporary
// b-tree opened and freed on every execution (an UPDATE ... RETURNING measured 3.5 times
// the instructions of the UPDATE alone).
const claimLease = `UPDATE tickets SET state = 'running', attempts = attempts + (state = 'queued'),
		rescues = rescues + (state = 'running'),
		fence_token = fence_token + 1, lease_owner = ?1, lease_expires_at = ?2, updated_at = ?3,
		rescued_from = CASE WHEN state = 'running' THEN lease_owner END, ` + reserveEvent + `
	WHERE id = ?4`

// leaseHorizonQuery is the earliest lease expiry among running tickets (math.MaxInt64 when
// none), through tickets_open: Claim skips the rescue branch before it.
const leaseHorizonQuery = `SELECT coalesce(min(lease_expires_at), 9223372036854775807) FROM tickets
	WHERE finished_at IS NULL AND state = 'running'`

// pausedRepos is the set SetPaused installed, as Claim binds it.
type pausedRepos struct {
	repos []string
	json  string
}

// SetPaused replaces the set of repositories whose tickets Claim must not hand out now: a
// repository whose baseline checks are broken, or whose model endpoint is down. Their queued
// tickets wait (and expired leases on them wait to be rescued) until a later SetPaused drops
// them; NextDue counts them apart. The set lives in this process only, starts empty, and
// SetPaused(nil) clears it. The claim's pick stays one statement on the open-tickets index.
func (s *Store) SetPaused(repos []string) {
	if len(repos) == 0 {
		s.paused.Store(nil)
		return
	}
	rs := slices.Clone(repos)
	slices.Sort(rs)
	rs = slices.Compact(rs)
	j, _ := json.Marshal(rs) // []string always encodes
	s.paused.Store(&pausedRepos{repos: rs, json: string(j)})
}

// Paused returns the repositories SetPaused installed, sorted (nil when none).
func (s *Store) Paused() []string {
	if p := s.paused.Load(); p != nil {
		return slices.Clone(p.repos)
	}
	return nil
}

// Claim leases the next ready ticket to worker for leaseFor: a queued ticket whose
// run_after has passed, or a running one whose lease expired (a rescue, recorded as a
// lease_expired event), skipping repositories paused by SetPaused. Order: priority desc,
// run_after, id. A claim of a queued ticket counts the attempt; a rescue reruns the attempt
// the lost lease cut short without charging it, and counts the rescue instead. Every claim
// issues a fresh fence token. An expired lease that reaches MaxRescues, or on a ticket whose
// cancellation was requested, is settled (escalated / cancelled) instead of rerun.
// Returns ErrNoTicket when nothing is ready.
func (s *Store) Claim(ctx context.Context, worker string, leaseFor time.Duration) (Lease, error) {
	if leaseFor <= 0 {
		return Lease{}, fmt.Errorf("claim for %s: lease duration %v: want > 0", worker, leaseFor)
	}
	var l Lease
	paused := s.paused.Load()
	err := s.write(ctx, "claim", func(ctx context.Context, tx *wtx) error {
		l = Lease{}
		now := s.nowMS()
		// Settling costs a statement, so it runs at most every settleEvery of store time, and
		// whenever the queue looks empty; the claim below never rescues a ticket that settling
		// would end, so a late settle is only late, never wrong.
		if last := s.lastSettle.Load(); now-last >= settleEvery.Milliseconds() || now < last {
			if err := s.settleExpired(ctx, tx, now, worker); err != nil {
				return err
			}
			if err := s.refreshLeaseHorizon(ctx, tx); err != nil {
				return err
			}
			s.lastSettle.Store(now)
		}
		exp := now + leaseFor.Milliseconds()
		args := []any{now, s.opts.MaxRescues}
		skip := 0
		if paused != nil {
			skip, args = 1, append(args, paused.json)
		}
		// Before the horizon no lease this store knows of has expired: the queued branch
		// alone gives the same answer. Should it find nothing, the full statement runs, so
		// a lease the horizon missed (another process's, until the next refresh) is only
		// rescued after the ready queued tickets, never left behind.
		rescue := now >= s.leaseHorizon.Load()
		id, err := s.claimPickOne(ctx, tx, skip, rescue, args)
		if errors.Is(err, sql.ErrNoRows) && !rescue {
			id, err = s.claimPickOne(ctx, tx, skip, true, args)
		}
		if errors.Is(err, sql.ErrNoRows) {
			// Commit what settling did; ErrNoTicket is reported after the transaction.
			return s.settleExpired(ctx, tx, now, worker)
		}
		if err != nil {
			return err
		}
		if res, err := s.exec(ctx, tx, claimLease, worker, exp, now, id); err != nil {
			return err
		} else if n, err := res.RowsAffected(); err != nil || n != 1 {
			return fmt.Errorf("lease picked ticket %d: %d rows changed (%v)", id, n, err)
		}
		row, err := s.queryRow(ctx, tx, `SELECT `+ticketCols+` FROM tickets WHERE id = ?`, id)
		if err != nil {
			return err
		}
		t, err := scanTicket(row)
		if err != nil {
			return fmt.Errorf("read claimed ticket %d: %w", id, err)
		}
		s.lowerLeaseHorizon(exp)
		// The lease's UPDATE reserved one event: the claim's, or on a rescue the lost lease's,
		// after which the claim reserves its own.
		claimed := s.appendEvent
		if t.RescuedFrom != "" {
			if err := s.appendEvent(ctx, tx, t.ID, now, "lease_expired", StateRunning, StateQueued, t.Attempts, worker,
				fmt.Sprintf("lease of %s expired; rescued by %s without charging the attempt (lost lease %d of at most %d)",
					t.RescuedFrom, worker, t.Rescues, s.opts.MaxRescues-1)); err != nil {
				return err
			}
			claimed = s.event
		}
		if err := claimed(ctx, tx, t.ID, now, "claimed", StateQueued, StateRunning, t.Attempts, worker, ""); err != nil {
			return err
		}
		l = Lease{Ticket: t, Token: t.FenceToken, Attempt: t.Attempts, Worker: worker, ExpiresAt: t.LeaseExpiresAt}
		return nil
	})
	if err == nil && l.Token == 0 {
		return Lease{}, ErrNoTicket
	}
	if err != nil {
		return Lease{}, fmt.Errorf("claim for %s: %w", worker, err)
	}
	return l, nil
}

// claimPickOne runs one of the claimPick statements and returns the ticket's id
// (sql.ErrNoRows when none is ready).
func (s *Store) claimPickOne(ctx context.Context, tx *wtx, skip int, rescue bool, args []any) (int64, error) {
	row, err := s.queryRow(ctx, tx, claimPicks[skip][b2i(rescue)], args...)
	if err != nil {
		return 0, err
	}
	var id int64
	err = row.Scan(&id)
	return id, err
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// refreshLeaseHorizon reads the earliest lease expiry of the running tickets, every
// settleEvery: leases taken by other processes on the same database enter it then.
func (s *Store) refreshLeaseHorizon(ctx context.Context, tx *wtx) error {
	row, err := s.queryRow(ctx, tx, leaseHorizonQuery)
	if err != nil {
		return err
	}
	var h int64
	if err := row.Scan(&h); err != nil {
		return fmt.Errorf("lease horizon: %w", err)
	}
	s.leaseHorizon.Store(h)
	return nil
}

// lowerLeaseHorizon takes in a lease this store just granted.
func (s *Store) lowerLeaseHorizon(exp int64) {
	for {
		h := s.leaseHorizon.Load()
		if exp >= h || s.leaseHorizon.CompareAndSwap(h, exp) {
			return
		}
	}
}

// settleExpired ends tickets whose lease expired when another run would be wrong: the lost
// lease is the MaxRescues-th (escalated: a ticket that keeps killing its worker must not
// loop), or cancellation was requested (cancelled). Either way the lost lease is counted.
func (s *Store) settleExpired(ctx context.Context, tx *wtx, now int64, actor string) error {
	rows, err := s.query(ctx, tx, `UPDATE tickets SET
			state = CASE WHEN cancel_requested = 1 THEN 'cancelled' ELSE 'escalated' END,
			reason = CASE WHEN cancel_requested = 1
				THEN 'cancel requested; lease of ' || lease_owner || ' expired'
				ELSE 'lease of ' || lease_owner || ' expired: ' || (rescues + 1) || ' lost leases reach the limit of ' || ?2 ||
					' (the ticket may be crashing its worker; see its events and the daemon log)' END,
			rescues = rescues + 1, lease_expires_at = NULL, finished_at = ?1, updated_at = ?1
		WHERE finished_at IS NULL AND state = 'running' AND lease_expires_at <= ?1
			AND (rescues + 1 >= ?2 OR cancel_requested = 1)
		RETURNING id, state, attempts, reason`, now, s.opts.MaxRescues)
	if err != nil {
		return err
	}
	type settled struct {
		id      int64
		state   State
		attempt int
		reason  string
	}
	var done []settled
	for rows.Next() {
		var x settled
		if err := rows.Scan(&x.id, &x.state, &x.attempt, &x.reason); err != nil {
			rows.Close()
			return err
		}
		done = append(done, x)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, x := range done {
		if err := s.event(ctx, tx, x.id, now, "lease_expired", StateRunning, x.state, x.attempt, actor, x.reason); err != nil {
			return err
		}
	}
	return nil
}

// fenced runs a worker's UPDATE, which must change the row only under
// "id = ? AND fence_token = ? AND state = 'running'". No row changed means the lease is gone
// (ErrLeaseLost) or the ticket never existed (ErrNotFound). It reads nothing back (see
// claimLease for why not RETURNING): what the event needs, eventFromRow reads.
func (s *Store) fenced(ctx context.Context, tx *wtx, id int64, query string, args ...any) error {
	res, err := s.exec(ctx, tx, query, args...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		return err
	}
	return s.lostOrMissing(ctx, tx, id)
}

// lostOrMissing explains why a fenced write matched no row.
func (s *Store) lostOrMissing(ctx context.Context, tx *wtx, id int64) error {
	var one int
	row, err := s.queryRow(ctx, tx, `SELECT 1 FROM tickets WHERE id = ?`, id)
	if err != nil {
		return err
	}
	if err := row.Scan(&one); errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	} else if err != nil {
		return err
	}
	return ErrLeaseLost
}

// Heartbeat extends the lease to now+leaseFor and reports whether cancellation was
// requested. ErrLeaseLost means stop work and discard the result.
func (s *Store) Heartbeat(ctx context.Context, id, token int64, leaseFor time.Duration) (cancelRequested bool, err error) {
	err = s.write(ctx, "heartbeat", func(ctx context.Context, tx *wtx) error {
		now := s.nowMS()
		if err := s.fenced(ctx, tx, id, `UPDATE tickets SET lease_expires_at = ?, updated_at = ?
			WHERE id = ? AND fence_token = ? AND state = 'running'`,
			now+leaseFor.Milliseconds(), now, id, token); err != nil {
			return err
		}
		row, err := s.queryRow(ctx, tx, `SELECT cancel_requested FROM tickets WHERE id = ?`, id)
		if err != nil {
			return err
		}
		var c int
		if err := row.Scan(&c); err != nil {
			return err
		}
		cancelRequested = c != 0
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("heartbeat ticket %d token %d: %w", id, token, err)
	}
	return cancelRequested, nil
}

// Complete moves a running ticket to done with its result.
func (s *Store) Complete(ctx context.Context, id, token int64, r Result) error {
	err := s.write(ctx, "complete", func(ctx context.Context, tx *wtx) error {
		now := s.nowMS()
		if err := s.fenced(ctx, tx, id, `UPDATE tickets SET state = 'done', lease_expires_at = NULL,
				finished_at = ?, updated_at = ?, branch = ?, result_dir = ?, summary = ?, reason = '', `+reserveEvent+`
			WHERE id = ? AND fence_token = ? AND state = 'running'`,
			now, now, r.Branch, r.ResultDir, r.Summary, id, token); err != nil {
			return err
		}
		return s.appendEventFromRow(ctx, tx, id, now, "completed", StateRunning, StateDone, "")
	})
	if err != nil {
		return fmt.Errorf("complete ticket %d token %d: %w", id, token, err)
	}
	return nil
}

// Fail ends an attempt and returns where the ticket went. Fix and budget failures count the
// attempt: queued again after backoff (BackoffBase*2^(attempt-1), capped, ±20% jitter), or
// escalated at max attempts. Transport and shutdown failures release the ticket without
// burning the attempt (event "released"). A ticket whose cancellation was requested goes to
// cancelled instead of back to the queue.
func (s *Store) Fail(ctx context.Context, id, token int64, f Failure) (State, error) {
	switch f.Kind {
	case FailFix, FailBudget, FailTransport, FailShutdown, FailMachine:
	default:
		return "", fmt.Errorf("fail ticket %d: unknown failure kind %q: want fix, budget, transport, shutdown or machine", id, f.Kind)
	}
	var to State
	err := s.write(ctx, "fail", func(ctx context.Context, tx *wtx) error {
		now := s.nowMS()
		var attempts, maxAttempts, cancel int
		var owner string
		row, err := s.queryRow(ctx, tx, `SELECT attempts, max_attempts, cancel_requested, lease_owner FROM tickets
			WHERE id = ? AND fence_token = ? AND state = 'running'`, id, token)
		if err != nil {
			return err
		}
		if err := row.Scan(&attempts, &maxAttempts, &cancel, &owner); errors.Is(err, sql.ErrNoRows) {
			return s.lostOrMissing(ctx, tx, id)
		} else if err != nil {
			return err
		}
		var (
			kind       string
			runAfter   = now
			newAttempt = attempts
			finished   any
		)
		released := f.Kind == FailTransport || f.Kind == FailShutdown || f.Kind == FailMachine
		switch {
		case cancel != 0:
			to, kind, finished = StateCancelled, "cancelled", now
		case released:
			to, kind, newAttempt = StateQueued, "released", max(attempts-1, 0)
			if f.Kind == FailTransport {
				runAfter = now + s.transportDelay().Milliseconds()
			}
		case attempts >= maxAttempts:
			to, kind, finished = StateEscalated, "escalated", now
		default:
			to, kind = StateQueued, "retry"
			runAfter = now + s.backoff(attempts).Milliseconds()
		}
		reason := fmt.Sprintf("%s: %s", f.Kind, f.Reason)
		if err := s.fenced(ctx, tx, id, `UPDATE tickets SET state = ?, attempts = ?, run_after = ?,
				lease_expires_at = NULL, finished_at = ?, updated_at = ?, reason = ?,
				branch = CASE WHEN ? != '' THEN ? ELSE branch END,
				result_dir = CASE WHEN ? != '' THEN ? ELSE result_dir END, `+reserveEvent+`
			WHERE id = ? AND fence_token = ? AND state = 'running'`,
			string(to), newAttempt, runAfter, finished, now, reason, f.Branch, f.Branch, f.ResultDir, f.ResultDir, id, token); err != nil {
			return err
		}
		return s.appendEvent(ctx, tx, id, now, kind, StateRunning, to, attempts, owner, reason)
	})
	if err != nil {
		return "", fmt.Errorf("fail ticket %d token %d (%s): %w", id, token, f.Kind, err)
	}
	return to, nil
}

// FinishCancelled records that the worker saw cancel_requested and stopped: -> cancelled.
func (s *Store) FinishCancelled(ctx context.Context, id, token int64, reason string) error {
	err := s.write(ctx, "finish cancelled", func(ctx context.Context, tx *wtx) error {
		now := s.nowMS()
		if err := s.fenced(ctx, tx, id, `UPDATE tickets SET state = 'cancelled', lease_expires_at = NULL,
				finished_at = ?, updated_at = ?, reason = ?, `+reserveEvent+`
			WHERE id = ? AND fence_token = ? AND state = 'running'`,
			now, now, reason, id, token); err != nil {
			return err
		}
		return s.appendEventFromRow(ctx, tx, id, now, "cancelled", StateRunning, StateCancelled, reason)
	})
	if err != nil {
		return fmt.Errorf("finish cancelled ticket %d token %d: %w", id, token, err)
	}
	return nil
}

// SaveTriage caches the triage JSON on the ticket so later attempts reuse it.
func (s *Store) SaveTriage(ctx context.Context, id, token int64, triageJSON string) error {
	err := s.write(ctx, "save triage", func(ctx context.Context, tx *wtx) error {
		return s.fenced(ctx, tx, id, `UPDATE tickets SET triage = ?, updated_at = ?
			WHERE id = ? AND fence_token = ? AND state = 'running'`,
			triageJSON, s.nowMS(), id, token)
	})
	if err != nil {
		return fmt.Errorf("save triage for ticket %d token %d: %w", id, token, err)
	}
	return nil
}

// currentState reads a ticket's state inside tx (ErrNotFound when missing).
func (s *Store) currentState(ctx context.Context, tx *wtx, id int64) (State, int, error) {
	row, err := s.queryRow(ctx, tx, `SELECT state, attempts FROM tickets WHERE id = ?`, id)
	if err != nil {
		return "", 0, err
	}
	var st State
	var attempts int
	if err := row.Scan(&st, &attempts); errors.Is(err, sql.ErrNoRows) {
		return "", 0, ErrNotFound
	} else if err != nil {
		return "", 0, err
	}
	return st, attempts, nil
}

// RequestCancel cancels a queued ticket at once and flags a running one (its worker sees the
// flag on its next Heartbeat and calls FinishCancelled). Cancelling a cancelled ticket is a
// no-op; done and escalated tickets return ErrInvalidTransition. Returns the state after.
func (s *Store) RequestCancel(ctx context.Context, id int64, who, reason string) (State, error) {
	var after State
	err := s.write(ctx, "request cancel", func(ctx context.Context, tx *wtx) error {
		now := s.nowMS()
		st, attempts, err := s.currentState(ctx, tx, id)
		if err != nil {
			return err
		}
		after = st
		switch st {
		case StateCancelled:
			return nil
		case StateDone, StateEscalated:
			return fmt.Errorf("%w: ticket is %s; requeue it first if it should run again", ErrInvalidTransition, st)
		case StateQueued, StateParked:
			after = StateCancelled
			if _, err := s.exec(ctx, tx, `UPDATE tickets SET state = 'cancelled', finished_at = ?, updated_at = ?, reason = ?,
				`+reserveEvent+` WHERE id = ? AND state = ?`, now, now, reason, id, string(st)); err != nil {
				return err
			}
			return s.appendEvent(ctx, tx, id, now, "cancelled", st, StateCancelled, attempts, who, reason)
		default: // running
			if _, err := s.exec(ctx, tx, `UPDATE tickets SET cancel_requested = 1, updated_at = ?, reason = ?,
				`+reserveEvent+` WHERE id = ? AND state = 'running'`, now, reason, id); err != nil {
				return err
			}
			return s.appendEvent(ctx, tx, id, now, "cancel_requested", StateRunning, StateRunning, attempts, who, reason)
		}
	})
	if err != nil {
		return "", fmt.Errorf("cancel ticket %d: %w", id, err)
	}
	return after, nil
}

// Requeue puts a finished ticket (escalated, cancelled, done) back in the queue with its
// attempts and rescues reset to 0. A parked ticket goes back to the queue at once, its
// counts kept (a park never charged it). A running ticket is requeued only with force (an
// operator rescuing a ticket stuck on a dead worker): the fence token moves on, so the old
// holder's writes are refused. Every case is recorded as a requeued event naming who.
func (s *Store) Requeue(ctx context.Context, id int64, who string, force bool) error {
	err := s.write(ctx, "requeue", func(ctx context.Context, tx *wtx) error {
		now := s.nowMS()
		st, attempts, err := s.currentState(ctx, tx, id)
		if err != nil {
			return err
		}
		reason := "requeued by operator"
		switch {
		case st == StateQueued:
			return fmt.Errorf("%w: ticket is already queued", ErrInvalidTransition)
		case st == StateRunning && !force:
			return fmt.Errorf("%w: ticket is running; use force to take it from its worker", ErrInvalidTransition)
		case st == StateRunning:
			reason = "forced requeue of a running ticket"
		case st == StateParked:
			if _, err := s.exec(ctx, tx, `UPDATE tickets SET state = 'queued', run_after = ?, updated_at = ?, reason = ?, `+reserveEvent+`
				WHERE id = ? AND state = 'parked'`, now, now, "unparked by operator", id); err != nil {
				return err
			}
			return s.appendEvent(ctx, tx, id, now, "requeued", st, StateQueued, attempts, who, "unparked by operator")
		}
		if _, err := s.exec(ctx, tx, `UPDATE tickets SET state = 'queued', attempts = 0, rescues = 0, run_after = ?,
				fence_token = fence_token + 1, lease_expires_at = NULL, cancel_requested = 0,
				finished_at = NULL, updated_at = ?, reason = ?, `+reserveEvent+`
			WHERE id = ? AND state = ?`, now, now, reason, id, string(st)); err != nil {
			return err
		}
		return s.appendEvent(ctx, tx, id, now, "requeued", st, StateQueued, attempts, who, reason)
	})
	if err != nil {
		return fmt.Errorf("requeue ticket %d: %w", id, err)
	}
	return nil
}

// Event is one row of a ticket's append-only history.
type Event struct {
	ID        int64     `json:"id"`
	TicketID  int64     `json:"ticket_id"`
	At        time.Time `json:"at"`
	Kind      string    `json:"kind"` // enqueued, claimed, completed, retry, escalated, released, parked, unparked, lease_expired, cancel_requested, cancelled, requeued, note
	FromState State     `json:"from_state"`
	ToState   State     `json:"to_state"`
	Attempt   int       `json:"attempt"`
	Actor     string    `json:"actor"`
	Reason    string    `json:"reason"`
}

// AddNote appends an operator note to a ticket's history without changing its state.
func (s *Store) AddNote(ctx context.Context, id int64, actor, text string) error {
	err := s.write(ctx, "add note", func(ctx context.Context, tx *wtx) error {
		st, attempts, err := s.currentState(ctx, tx, id)
		if err != nil {
			return err
		}
		return s.event(ctx, tx, id, s.nowMS(), "note", st, st, attempts, actor, text)
	})
	if err != nil {
		return fmt.Errorf("add note to ticket %d: %w", id, err)
	}
	return nil
}

// Events returns a ticket's history, oldest first (ErrNotFound for an unknown id).
func (s *Store) Events(ctx context.Context, id int64) ([]Event, error) {
	rows, err := s.r.QueryContext(ctx, `WITH RECURSIVE chain(id) AS (
			SELECT last_event_id FROM tickets WHERE id = ?1
			UNION ALL
			SELECT e.prev_id FROM chain CROSS JOIN events e ON e.id = chain.id WHERE e.prev_id IS NOT NULL)
		SELECT e.id, e.ticket_id, e.at, e.kind, e.from_state, e.to_state, e.attempt, e.actor, e.reason
		FROM chain CROSS JOIN events e ON e.id = chain.id ORDER BY e.id`, id)
	if err != nil {
		return nil, fmt.Errorf("events of ticket %d: %w", id, err)
	}
	defer rows.Close()
	out := []Event{}
	for rows.Next() {
		var e Event
		var at sql.NullInt64
		if err := rows.Scan(&e.ID, &e.TicketID, &at, &e.Kind, &e.FromState, &e.ToState, &e.Attempt, &e.Actor, &e.Reason); err != nil {
			return nil, fmt.Errorf("events of ticket %d: %w", id, err)
		}
		e.At = fromMS(at)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("events of ticket %d: %w", id, err)
	}
	if len(out) == 0 {
		if _, err := s.Get(ctx, id); err != nil {
			return nil, fmt.Errorf("events of ticket %d: %w", id, ErrNotFound)
		}
	}
	return out, nil
}
