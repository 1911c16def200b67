package store

import (
	"context"

	"fmt"
	"strings"

	"github.com/ticketd/ticketd/store/storedriver"
)

// Accepted is what a human accepted for an escalated ticket: its kept change, published as
// the ticket's fix on Branch, with its results in ResultDir.
type Accepted struct {
	Branch    string // the fix branch (ticketd/<id>-<slug>)
	ResultDir string
	From      string // the kept branch it was published from
}

// Accept moves an escalated ticket to done with a: a human accepted the change the gate kept
// for them (ticketctl accept, the console's button). It is recorded once, as an "accepted"
// event naming who; any other state, an already accepted ticket included, returns
// ErrInvalidTransition.
func (s *Store) Accept(ctx context.Context, id int64, who string, a Accepted) error {
	if strings.TrimSpace(a.Branch) == "" {
		return fmt.Errorf("accept ticket %d: no branch to publish", id)
	}
	err := s.write(ctx, "accept", func(ctx context.Context, tx storedriver.Tx) error {
		now := s.nowMS()
		st, attempts, err := s.currentState(ctx, tx, id)
		if err != nil {
			return err
		}
		if st != StateEscalated {
			return fmt.Errorf("%w: ticket is %s; only an escalated ticket's kept change can be accepted", ErrInvalidTransition, st)
		}
		reason := fmt.Sprintf("accepted by %s: %s published as the fix %s", who, a.From, a.Branch)
		n, err := tx.Exec(ctx, s.q.Accept, storedriver.AcceptParams{FinishedAt: now, UpdatedAt: now,
			Branch: a.Branch, ResultDir: a.ResultDir, Reason: reason, ID: id}.Args()...)
		if err != nil {
			return err
		}
		if n != 1 {
			return fmt.Errorf("%w: ticket changed meanwhile", ErrInvalidTransition)
		}
		return s.writeEvent(ctx, tx, eventWrite{Ticket: id, At: now, Kind: EventAccepted, From: StateEscalated, To: StateDone, Attempt: attempts, Actor: who, Reason: reason})
	})
	if err != nil {
		return fmt.Errorf("accept ticket %d: %w", id, err)
	}
	return nil
}

// AcceptedBy returns who accepted ticket id's kept change ("" when nobody did), from its
// history.
func (s *Store) AcceptedBy(ctx context.Context, id int64) (string, error) {
	evs, err := s.Events(ctx, id)
	if err != nil {
		return "", err
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == EventAccepted {
			return evs[i].Actor, nil
		}
		if evs[i].Kind == EventRequeued {
			return "", nil // accepted before, then requeued: not this run's
		}
	}
	return "", nil
}
