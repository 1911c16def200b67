package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ticketd/ticketd/store/storedriver"
)

// ErrConfirmDone refuses to requeue a done ticket without RequeueOptions.Done: its fix was
// validated, and another round is a decision, not a click.
var ErrConfirmDone = errors.New("the ticket is done: requeueing it starts a new round on a new branch (its fix branch is kept); confirm it")

// RequeueOptions say how RequeueTicket puts a ticket back.
type RequeueOptions struct {
	// Force takes a running ticket from its worker (one stuck on a dead worker).
	Force bool
	// Done confirms requeueing a done ticket.
	Done bool
	// Note is the operator's word for the next attempts (what to try, what was wrong); the
	// maker reads every note of the ticket with the issue.
	Note string
}

// Requeued is one requeue of a ticket, as the requeues table keeps it.
type Requeued struct {
	N         int       `json:"n"`
	At        time.Time `json:"at"`
	Actor     string    `json:"actor"`
	FromState State     `json:"from_state"`
	// Attempts is how many attempts the ticket had had: the next one is numbered Attempts+1.
	Attempts int    `json:"attempts"`
	Note     string `json:"note,omitempty"`
	// Branch is the fix branch a requeued done ticket kept: no later round moves it.
	Branch string `json:"branch,omitempty"`
}

// maxNote bounds a requeue note kept for the maker.
const maxNote = 4000

// RequeueTicket puts a ticket back in the queue. History is append-only: a finished ticket
// (escalated, cancelled, done) keeps its attempts, and the next attempt numbers on from
// them, so no attempt's results, records or branch are ever reused; the requeue gives it a
// fresh budget of max attempts from there (Ticket.AttemptLimit), and clears its crashes. A
// done ticket is requeued only with o.Done: its fix branch is recorded with the requeue and
// kept; the next round works on a branch of its own. A parked or needs_info ticket goes back
// at once, its counts kept (neither a park nor a question charged it; a needs_info ticket
// goes on without an answer). A running ticket is requeued only with o.Force (an operator
// rescuing a ticket stuck on a dead worker): the fence token moves on, so the old holder's
// writes are refused. Every requeue is kept (Requeues) with its note, and recorded as a
// requeued event naming who.
func (s *Store) RequeueTicket(ctx context.Context, id int64, who string, o RequeueOptions) error {
	note := strings.TrimSpace(o.Note)
	if len(note) > maxNote {
		return fmt.Errorf("requeue ticket %d: the note has %d bytes; keep it under %d", id, len(note), maxNote)
	}
	note = CleanText(note)
	err := s.write(ctx, "requeue", func(ctx context.Context, tx storedriver.Tx) error {
		now := s.nowMS()
		t, err := scanTicket(tx.QueryRow(ctx, s.q.GetTicket, id))
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		} else if err != nil {
			return err
		}
		st, attempts := t.State, t.Attempts
		reason, kept := "requeued by operator", ""
		switch {
		case st == StateQueued:
			return fmt.Errorf("%w: ticket is already queued", ErrInvalidTransition)
		case st == StateRunning && !o.Force:
			return fmt.Errorf("%w: ticket is running; use force to take it from its worker", ErrInvalidTransition)
		case st == StateRunning:
			reason = "forced requeue of a running ticket"
		case st == StateDone && !o.Done:
			return fmt.Errorf("%w (ticket %d, fix branch %s)", ErrConfirmDone, id, t.Branch)
		case st == StateDone:
			kept = t.Branch
			reason = "requeued by operator after it was done; its fix branch " + kept + " is kept, and the next attempt works on a new branch"
		case st == StateParked:
			reason = "unparked by operator"
		case st == StateNeedsInfo:
			// Going on without an answer: the question stays unanswered on record, its count
			// kept (no second question), and so are the attempts (asking charged none).
			reason = "requeued by operator without an answer to its question"
		}
		if attempts > 0 && st != StateParked && st != StateNeedsInfo {
			reason += fmt.Sprintf("; attempts go on from %d with a fresh budget of %d", attempts+1, t.MaxAttempts)
		}
		if note != "" {
			reason += "; note: " + note
		}
		switch st {
		case StateParked:
			_, err = tx.Exec(ctx, s.q.RequeueParked, storedriver.ToQueueParams{RunAfter: now, UpdatedAt: now, Reason: reason, ID: id}.Args()...)
		case StateNeedsInfo:
			_, err = tx.Exec(ctx, s.q.RequeueNeedsInfo, storedriver.ToQueueParams{RunAfter: now, UpdatedAt: now, Reason: reason, ID: id}.Args()...)
		default:
			_, err = tx.Exec(ctx, s.q.Requeue, storedriver.RequeueParams{RunAfter: now, UpdatedAt: now, Reason: reason, ID: id, From: string(st)}.Args()...)
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, s.q.InsertRequeue, storedriver.InsertRequeueParams{TicketID: id, At: now, Actor: who,
			FromState: string(st), Attempts: attempts, Note: note, Branch: kept}.Args()...); err != nil {
			return err
		}
		return s.writeEvent(ctx, tx, eventWrite{Ticket: id, At: now, Kind: EventRequeued, From: st, To: StateQueued, Attempt: attempts, Actor: who, Reason: reason})
	})
	if err != nil {
		return fmt.Errorf("requeue ticket %d: %w", id, err)
	}
	s.eng.Notify()
	return nil
}

// Requeues returns a ticket's requeues, oldest first.
func (s *Store) Requeues(ctx context.Context, id int64) ([]Requeued, error) {
	rows, err := s.rd.Query(ctx, s.q.Requeues, id)
	if err != nil {
		return nil, fmt.Errorf("requeues of ticket %d: %w", id, err)
	}
	defer rows.Close()
	out := []Requeued{}
	for rows.Next() {
		var r Requeued
		var at sql.NullInt64
		if err := rows.Scan(&r.N, &at, &r.Actor, &r.FromState, &r.Attempts, &r.Note, &r.Branch); err != nil {
			return nil, fmt.Errorf("requeues of ticket %d: %w", id, err)
		}
		r.At = fromMS(at)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("requeues of ticket %d: %w", id, err)
	}
	return out, nil
}

// KeptBranches returns the fix branches requeues of done tickets kept, and those rounds go
// on from, ticket by ticket: a night's clean-up must never take them for a lost attempt's
// (a failed round's attempt records its own branch on the ticket).
func (s *Store) KeptBranches(ctx context.Context) (map[string]int64, error) {
	rows, err := s.rd.Query(ctx, s.q.KeptBranches)
	if err != nil {
		return nil, fmt.Errorf("kept fix branches: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var id int64
		var b string
		if err := rows.Scan(&id, &b); err != nil {
			return nil, fmt.Errorf("kept fix branches: %w", err)
		}
		out[b] = id
	}
	return out, rows.Err()
}
