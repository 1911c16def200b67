package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ticketd/ticketd/store/storedriver"
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
	// FailRateLimit: the provider refused for a rate limit and said when it lifts; does not
	// burn the attempt, does not count toward parking for transport faults, and the ticket
	// waits until Failure.RunAfter.
	FailRateLimit FailureKind = "rate_limit"
	// FailHuman: the gate refused the change by rule (it weakens tests the base passed, or
	// changes the checks themselves), so another attempt would only pay for the same answer:
	// counts the attempt and escalates at once, for a human to accept or requeue.
	FailHuman FailureKind = "human"
)

// Failure describes a stopped attempt.
type Failure struct {
	Kind      FailureKind
	Reason    string
	Branch    string // optional: partial work kept for the escalation report
	ResultDir string // optional: where report.md / patch were written
	// Final escalates a charged failure (fix, budget) now, whatever attempts are left: a
	// retry would only repeat it (the same unverified patch a second time).
	Final bool
	// RunAfter is, for FailRateLimit, the earliest time the ticket may be claimed again.
	RunAfter time.Time
}

// settleEvery bounds how often Claim looks for expired leases that must end rather than
// rerun (see settleExpired).
const settleEvery = time.Second

// transportDelay is how long a ticket released after a transport fault waits, so a dead
// endpoint is not hammered by the same ticket in a tight loop.
func (s *Store) transportDelay() time.Duration { return min(5*time.Second, s.opts.BackoffBase) }

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

// PassOver replaces the set of tickets claims take only when no other ticket is ready:
// after an attempt ended on an endpoint-side fault that every ticket may meet, the next
// claim must try a different ticket to tell the endpoint's fault from the ticket's own,
// whatever the time between its release and that claim (the claim order alone would hand
// the same ticket back once its short release delay has passed). The set lives in this
// process only; PassOver() clears it.
func (s *Store) PassOver(ids ...int64) {
	if len(ids) == 0 {
		s.passOver.Store(nil)
		return
	}
	ids = slices.Clone(ids)
	s.passOver.Store(&ids)
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
// then id: among the ready tickets the oldest enqueued first, so a ticket that waited out
// a retry's backoff takes its place in line again rather than the end of it. A claim of a
// queued ticket counts the attempt; a rescue reruns the attempt the lost lease cut short
// without charging it, and counts the rescue instead. Every claim issues a fresh fence
// token. An expired lease on a ticket whose cancellation was requested
// is settled (cancelled) instead of rerun; crashes are blamed by SettleDead.
// Returns ErrNoTicket when nothing is ready.
func (s *Store) Claim(ctx context.Context, worker string, leaseFor time.Duration) (Lease, error) {
	if leaseFor <= 0 {
		return Lease{}, fmt.Errorf("claim for %s: lease duration %v: want > 0", worker, leaseFor)
	}
	var l Lease
	err := s.write(ctx, "claim", func(ctx context.Context, tx storedriver.Tx) error {
		l = Lease{}
		p, err := s.claimBase(ctx, tx, worker, leaseFor)
		if err != nil {
			return err
		}
		p.Worker = worker
		l, err = s.claimUnpredicted(ctx, tx, p, true)
		if errors.Is(err, sql.ErrNoRows) {
			if err = s.claimTurn(ctx, tx); err != nil {
				return err
			}
			l, err = s.claimOne(ctx, tx, p, true, true)
		}
		if errors.Is(err, sql.ErrNoRows) {
			// Commit what settling did; ErrNoTicket is reported after the transaction.
			return s.settleExpired(ctx, tx, p.Now, worker)
		}
		return err
	})
	if err == nil && l.Token == 0 {
		return Lease{}, ErrNoTicket
	}
	if err != nil {
		return Lease{}, fmt.Errorf("claim for %s: %w", worker, err)
	}
	return l, nil
}

// claimBase is a claim's parameters (a batch's, or Claim's but for its Worker) at the
// store's now, after settling expired leases in tx when that is due. Settling costs a
// statement, so it runs at most every settleEvery of store time, and then only when the
// engine, reading the earliest lease expiry afresh, finds one at or before now
// (storedriver.LeaseHorizon: a daemon's claims come minutes apart, and each would pay it),
// and whenever the queue looks empty; a claim never rescues a ticket that settling would
// end, so a late settle is only late, never wrong.
func (s *Store) claimBase(ctx context.Context, tx storedriver.Tx, worker string, leaseFor time.Duration) (storedriver.ClaimParams, error) {
	base := storedriver.ClaimParams{MaxRescues: noRescueLimit, Node: s.opts.Node,
		Event: storedriver.ClaimEvent{Kind: string(EventClaimed), From: string(StateQueued), To: string(StateRunning)}}
	if paused := s.paused.Load(); paused != nil {
		base.Paused = paused.json
	}
	now := s.nowMS()
	if last := s.lastSettle.Load(); now-last >= settleEvery.Milliseconds() || now < last {
		may := true
		if lh, ok := tx.(storedriver.LeaseHorizon); ok {
			var err error
			if may, err = lh.LeasesMayHaveExpired(ctx, now); err != nil {
				return base, err
			}
		}
		if may {
			if err := s.settleExpired(ctx, tx, now, worker); err != nil {
				return base, err
			}
		}
		s.lastSettle.Store(now)
	}
	base.Now, base.Expires = now, now+leaseFor.Milliseconds()
	return base, nil
}

// claimOne leases the next ticket to p.Worker inside tx, after claimTurn, and writes its
// events: a fresh claim's came with the lease (p.Event), a rescue's lease reserved the lost
// lease's event and the claim then reserves its own. fallback lets it take a ticket
// overlapping a running one when nothing else is ready; last says nothing follows it in
// tx. sql.ErrNoRows when nothing is ready.
func (s *Store) claimOne(ctx context.Context, tx storedriver.Tx, p storedriver.ClaimParams, fallback, last bool) (Lease, error) {
	var overlap []int64
	if !p.Unpredicted {
		var err error
		if overlap, err = s.overlapping(ctx, tx); err != nil {
			return Lease{}, err
		}
	}
	avoid := s.avoiding(overlap)
	t, err := s.claimPick(ctx, tx, p, avoid, fallback, last)
	if errors.Is(err, sql.ErrNoRows) {
		return Lease{}, err
	}
	if err != nil {
		return Lease{}, fmt.Errorf("read claimed ticket: %w", err)
	}
	worker, now := p.Worker, p.Now
	if t.RescuedFrom != "" {
		if err := s.writeEvent(ctx, tx, eventWrite{Ticket: t.ID, At: now, Kind: EventLeaseExpired, From: StateRunning, To: StateQueued, Attempt: t.Attempts, Actor: worker, Reason: fmt.Sprintf("lease of %s expired; rescued by %s without charging the attempt (lost lease %d; a crash counts against the ticket only when its attempt was the only one running)",
			t.RescuedFrom, worker, t.Rescues)}); err != nil {
			return Lease{}, err
		}
		if err := s.writeEvent(ctx, tx, eventWrite{Ticket: t.ID, At: now, Kind: EventKind(p.Event.Kind), From: State(p.Event.From), To: State(p.Event.To), Attempt: t.Attempts, Actor: worker, Reason: p.Event.Reason, Reserve: true}); err != nil {
			return Lease{}, err
		}
	}
	return Lease{Ticket: t, Token: t.FenceToken, Attempt: t.Attempts, Worker: worker, ExpiresAt: t.LeaseExpiresAt}, nil
}

// claimUnpredicted is a claim's first try on an engine whose overlap-aware claims take
// turns (OverlapSQL.Serialize): the next ticket, leased only when it has no predicted
// files. Such a ticket overlaps nothing, now or when a later claim reads it running, so
// its claim needs neither the turn nor the running tickets' files, and claims run side by
// side. sql.ErrNoRows when the next ticket has predicted files (or none is ready): the
// caller then takes its turn and claims with claimOne.
func (s *Store) claimUnpredicted(ctx context.Context, tx storedriver.Tx, p storedriver.ClaimParams, last bool) (Lease, error) {
	if s.q.Overlap.Serialize == "" {
		return Lease{}, sql.ErrNoRows
	}
	p.Unpredicted = true
	return s.claimOne(ctx, tx, p, false, last)
}

// claimPick leases the next ticket, passing over the tickets of avoid unless no other is
// ready and fallback allows it (the claim's event then says why), and reads it
// (sql.ErrNoRows for none). last says nothing follows the claim in its transaction.
func (s *Store) claimPick(ctx context.Context, tx storedriver.Tx, p storedriver.ClaimParams, avoid avoidSet, fallback, last bool) (Ticket, error) {
	p.Avoid = avoid.ids
	// Nothing follows a fresh claim but, when it passes over tickets and finds nothing, the
	// claim of those: the engine writes its event with the lease.
	p.Last = last && (avoid.ids == "" || !fallback)
	row, err := tx.Claim(ctx, p)
	if err != nil {
		return Ticket{}, err
	}
	t, err := scanTicket(row)
	if !errors.Is(err, sql.ErrNoRows) || avoid.ids == "" || !fallback {
		return t, err
	}
	p.Avoid, p.Last, p.Event.Reason = "", last, avoid.reason
	if row, err = tx.Claim(ctx, p); err != nil {
		return Ticket{}, err
	}
	return scanTicket(row)
}

// noRescueLimit is the rescue limit Claim gives the engine: a lost lease never escalates a
// ticket by itself, since a crash with several attempts in flight is no ticket's; a crash is
// blamed on a ticket only when SettleDead finds it was alone in flight.
const noRescueLimit = 1 << 30

// settleExpired ends tickets whose lease expired when another run would be wrong: their
// cancellation was requested (cancelled). The lost lease is counted.
func (s *Store) settleExpired(ctx context.Context, tx storedriver.Tx, now int64, actor string) error {
	rows, err := tx.Query(ctx, s.q.Settle, now, noRescueLimit)
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
		if err := s.writeEvent(ctx, tx, eventWrite{Ticket: x.id, At: now, Kind: EventLeaseExpired, From: StateRunning, To: x.state, Attempt: x.attempt, Actor: actor, Reason: x.reason, Reserve: true}); err != nil {
			return err
		}
	}
	return nil
}

// fenced runs a worker's UPDATE, which must change the row only under
// "id = ? AND fence_token = ? AND state = 'running'". No row changed means the lease is gone
// (ErrLeaseLost) or the ticket never existed (ErrNotFound). It reads nothing back: what the
// event needs, writeEvent with FromRow reads.
func (s *Store) fenced(ctx context.Context, tx storedriver.Tx, id int64, query string, args ...any) error {
	n, err := tx.Exec(ctx, query, args...)
	if err != nil || n > 0 {
		return err
	}
	return s.lostOrMissing(ctx, tx, id)
}

// lostOrMissing explains why a fenced write matched no row.
func (s *Store) lostOrMissing(ctx context.Context, q storedriver.Reader, id int64) error {
	var one int
	if err := q.QueryRow(ctx, s.q.TicketExists, id).Scan(&one); errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	} else if err != nil {
		return err
	}
	return ErrLeaseLost
}

// Heartbeat extends the lease to now+leaseFor and reports whether cancellation was
// requested. ErrLeaseLost means stop work and discard the result.
func (s *Store) Heartbeat(ctx context.Context, id, token int64, leaseFor time.Duration) (cancelRequested bool, err error) {
	err = s.write(ctx, "heartbeat", func(ctx context.Context, tx storedriver.Tx) error {
		now := s.nowMS()
		if err := s.fenced(ctx, tx, id, s.q.Heartbeat, storedriver.HeartbeatParams{LeaseExpiresAt: now + leaseFor.Milliseconds(),
			UpdatedAt: now, ID: id, Token: token}.Args()...); err != nil {
			return err
		}
		var c int
		if err := tx.QueryRow(ctx, s.q.CancelRequested, id).Scan(&c); err != nil {
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
	_, err := s.EndAttempt(ctx, Ending{ID: id, Token: token, Kind: EndComplete, Result: r})
	return err
}

// completeTx is Complete's transition, in the write transaction tx.
// last says nothing follows it in tx, so it may commit with its statement.
func (s *Store) completeTx(ctx context.Context, tx storedriver.Tx, id, token int64, r Result, last bool) error {
	now := s.nowMS()
	cp := storedriver.CompleteParams{FinishedAt: now, UpdatedAt: now, Branch: r.Branch, ResultDir: r.ResultDir, Summary: r.Summary, ID: id, Token: token}
	if s.q.CompleteEnded != "" { // the engine writes the event and ends the round with it
		args := storedriver.CompleteEndedParams{CompleteParams: cp,
			Kind: string(EventCompleted), From: string(StateRunning), To: string(StateDone)}.Args()
		if le, ok := tx.(storedriver.LastExecer); ok && last {
			if n, err := le.ExecLast(ctx, s.q.CompleteEnded, args...); err != nil || n > 0 {
				return err
			}
			return s.lostOrMissing(ctx, tx, id)
		}
		return s.fenced(ctx, tx, id, s.q.CompleteEnded, args...)
	}
	if err := s.fenced(ctx, tx, id, s.q.Complete, cp.Args()...); err != nil {
		return err
	}
	return s.writeEvent(ctx, tx, eventWrite{Ticket: id, At: now, Kind: EventCompleted, From: StateRunning, To: StateDone, FromRow: true})
}

// Fail ends an attempt and returns where the ticket went. Fix and budget failures count the
// attempt: queued again after backoff (BackoffBase*2^(attempt-1), capped, ±20% jitter), or
// escalated at max attempts. Transport, shutdown, machine and rate-limit failures release the
// ticket without burning the attempt (event "released"); a rate-limit one is claimable at
// its RunAfter. A ticket whose cancellation was requested goes to
// cancelled instead of back to the queue.
func (s *Store) Fail(ctx context.Context, id, token int64, f Failure) (State, error) {
	return s.EndAttempt(ctx, Ending{ID: id, Token: token, Kind: EndFail, Failure: f})
}

// checkFailure refuses a failure kind Fail does not know.
func checkFailure(id int64, f Failure) error {
	switch f.Kind {
	case FailFix, FailBudget, FailTransport, FailShutdown, FailMachine, FailRateLimit, FailHuman:
		return nil
	}
	return fmt.Errorf("fail ticket %d: unknown failure kind %q: want fix, budget, transport, shutdown, machine, rate_limit or human", id, f.Kind)
}

// failTx is Fail's transition, in the write transaction tx; it returns the ticket's new state.
func (s *Store) failTx(ctx context.Context, tx storedriver.Tx, id, token int64, f Failure) (State, error) {
	now := s.nowMS()
	lt, err := s.leased(ctx, tx, id, token)
	if err != nil {
		return "", err
	}
	var (
		to         State
		kind       EventKind
		runAfter   = now
		newAttempt = lt.attempts
		finished   any
	)
	released := f.Kind == FailTransport || f.Kind == FailShutdown || f.Kind == FailMachine || f.Kind == FailRateLimit
	switch {
	case lt.cancel:
		to, kind, finished = StateCancelled, EventCancelled, now
	case released:
		to, kind, newAttempt = StateQueued, EventReleased, max(lt.attempts-1, 0)
		switch f.Kind {
		case FailTransport:
			runAfter = now + s.transportDelay().Milliseconds()
		case FailRateLimit:
			runAfter = max(now, f.RunAfter.UnixMilli())
		}
	case lt.attempts >= lt.maxAttempts || f.Final || f.Kind == FailHuman:
		to, kind, finished = StateEscalated, EventEscalated, now
	default:
		to, kind = StateQueued, EventRetry
		runAfter = now + s.backoff(lt.attempts).Milliseconds()
	}
	reason := fmt.Sprintf("%s: %s", f.Kind, f.Reason)
	if err := s.fenced(ctx, tx, id, s.q.EndAttempt, storedriver.EndAttemptParams{State: string(to), Attempts: newAttempt,
		RunAfter: runAfter, FinishedAt: finished, UpdatedAt: now, Reason: reason, Branch: f.Branch, ResultDir: f.ResultDir,
		ID: id, Token: token}.Args()...); err != nil {
		return "", err
	}
	return to, s.writeEvent(ctx, tx, eventWrite{Ticket: id, At: now, Kind: kind, From: StateRunning, To: to, Attempt: lt.attempts, Actor: lt.owner, Reason: reason})
}

// leasedTicket is what a worker's ending write reads of its own lease.
type leasedTicket struct {
	attempts, maxAttempts int
	cancel                bool
	owner                 string
}

// leased reads the lease (id, token) inside tx: ErrLeaseLost or ErrNotFound when it is gone.
func (s *Store) leased(ctx context.Context, tx storedriver.Tx, id, token int64) (leasedTicket, error) {
	var lt leasedTicket
	var cancel int
	err := tx.QueryRow(ctx, s.q.Leased, id, token).Scan(&lt.attempts, &lt.maxAttempts, &cancel, &lt.owner)
	if errors.Is(err, sql.ErrNoRows) {
		return lt, s.lostOrMissing(ctx, tx, id)
	}
	lt.cancel = cancel != 0
	return lt, err
}

// FinishCancelled records that the worker saw cancel_requested and stopped: -> cancelled.
func (s *Store) FinishCancelled(ctx context.Context, id, token int64, reason string) error {
	_, err := s.EndAttempt(ctx, Ending{ID: id, Token: token, Kind: EndCancelled, Reason: reason})
	return err
}

// finishCancelledTx is FinishCancelled's transition, in the write transaction tx.
func (s *Store) finishCancelledTx(ctx context.Context, tx storedriver.Tx, id, token int64, reason string) error {
	now := s.nowMS()
	if err := s.fenced(ctx, tx, id, s.q.FinishCancelled, storedriver.FinishCancelledParams{FinishedAt: now, UpdatedAt: now, Reason: reason, ID: id, Token: token}.Args()...); err != nil {
		return err
	}
	return s.writeEvent(ctx, tx, eventWrite{Ticket: id, At: now, Kind: EventCancelled, From: StateRunning, To: StateCancelled, Reason: reason, FromRow: true})
}

// SaveTriage caches the triage JSON on the ticket so later attempts reuse it.
func (s *Store) SaveTriage(ctx context.Context, id, token int64, triageJSON string) error {
	err := s.write(ctx, "save triage", func(ctx context.Context, tx storedriver.Tx) error {
		return s.fenced(ctx, tx, id, s.q.SaveTriage, storedriver.SaveTriageParams{Triage: triageJSON, UpdatedAt: s.nowMS(), ID: id, Token: token}.Args()...)
	})
	if err != nil {
		return fmt.Errorf("save triage for ticket %d token %d: %w", id, token, err)
	}
	return nil
}

// currentState reads a ticket's state inside tx (ErrNotFound when missing).
func (s *Store) currentState(ctx context.Context, tx storedriver.Tx, id int64) (State, int, error) {
	var st State
	var attempts int
	if err := tx.QueryRow(ctx, s.q.CurrentState, id).Scan(&st, &attempts); errors.Is(err, sql.ErrNoRows) {
		return "", 0, ErrNotFound
	} else if err != nil {
		return "", 0, err
	}
	return st, attempts, nil
}

// RequestCancel cancels a queued or needs_info ticket at once and flags a running one (its worker sees the
// flag on its next Heartbeat and calls FinishCancelled). Cancelling a cancelled ticket is a
// no-op; done and escalated tickets return ErrInvalidTransition. Returns the state after.
func (s *Store) RequestCancel(ctx context.Context, id int64, who, reason string) (State, error) {
	var after State
	err := s.write(ctx, "request cancel", func(ctx context.Context, tx storedriver.Tx) error {
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
		case StateQueued, StateParked, StateNeedsInfo, StateNeedsBudget:
			after = StateCancelled
			if _, err := tx.Exec(ctx, s.q.CancelQueued, storedriver.CancelQueuedParams{FinishedAt: now, UpdatedAt: now, Reason: reason, ID: id, From: string(st)}.Args()...); err != nil {
				return err
			}
			return s.writeEvent(ctx, tx, eventWrite{Ticket: id, At: now, Kind: EventCancelled, From: st, To: StateCancelled, Attempt: attempts, Actor: who, Reason: reason})
		default: // running
			if _, err := tx.Exec(ctx, s.q.FlagCancel, now, reason, id); err != nil {
				return err
			}
			return s.writeEvent(ctx, tx, eventWrite{Ticket: id, At: now, Kind: EventCancelRequested, From: StateRunning, To: StateRunning, Attempt: attempts, Actor: who, Reason: reason})
		}
	})
	if err != nil {
		return "", fmt.Errorf("cancel ticket %d: %w", id, err)
	}
	return after, nil
}

// Requeue is RequeueTicket with no note: a done ticket needs RequeueTicket's Done.
func (s *Store) Requeue(ctx context.Context, id int64, who string, force bool) error {
	return s.RequeueTicket(ctx, id, who, RequeueOptions{Force: force})
}

// Event is one row of a ticket's append-only history.
type Event struct {
	ID        int64     `json:"id"`
	TicketID  int64     `json:"ticket_id"`
	At        time.Time `json:"at"`
	Kind      EventKind `json:"kind"`
	FromState State     `json:"from_state"`
	ToState   State     `json:"to_state"`
	Attempt   int       `json:"attempt"`
	Actor     string    `json:"actor"`
	Reason    string    `json:"reason"`
}

// AddNote appends an operator note to a ticket's history without changing its state.
func (s *Store) AddNote(ctx context.Context, id int64, actor, text string) error {
	err := s.write(ctx, "add note", func(ctx context.Context, tx storedriver.Tx) error {
		st, attempts, err := s.currentState(ctx, tx, id)
		if err != nil {
			return err
		}
		return s.writeEvent(ctx, tx, eventWrite{Ticket: id, At: s.nowMS(), Kind: EventNote, From: st, To: st, Attempt: attempts, Actor: actor, Reason: text, Reserve: true})
	})
	if err != nil {
		return fmt.Errorf("add note to ticket %d: %w", id, err)
	}
	return nil
}

// Events returns a ticket's history, oldest first (ErrNotFound for an unknown id).
func (s *Store) Events(ctx context.Context, id int64) ([]Event, error) {
	rows, err := s.rd.Query(ctx, s.q.Events, id)
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
