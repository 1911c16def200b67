package store

import (
	"context"
	"fmt"
	"math"

	"github.com/ticketd/ticketd/store/storedriver"
)

// NeedBudget ends a leased attempt that its dollars stopped: running -> needs_budget,
// outside the queue until AddBudget (or a requeue). The attempt is not charged (the money
// ran out, not the ticket's chances); its partial work is kept on branch (optional) with
// its report in resultDir; the event "needs_budget" carries reason. A ticket whose
// cancellation was requested goes to cancelled instead.
func (s *Store) NeedBudget(ctx context.Context, id, token int64, reason, branch, resultDir string) (State, error) {
	return s.EndAttempt(ctx, Ending{ID: id, Token: token, Kind: EndNeedBudget, Reason: reason, Branch: branch, ResultDir: resultDir})
}

// needBudgetTx is NeedBudget's transition, in the write transaction tx; it returns the
// ticket's new state.
func (s *Store) needBudgetTx(ctx context.Context, tx storedriver.Tx, id, token int64, reason, branch, resultDir string) (State, error) {
	now := s.nowMS()
	lt, err := s.leased(ctx, tx, id, token)
	if err != nil {
		return "", err
	}
	if lt.cancel {
		why := "cancel requested; the attempt had stopped for budget: " + reason
		if err := s.fenced(ctx, tx, id, s.q.FinishCancelled, storedriver.FinishCancelledParams{FinishedAt: now, UpdatedAt: now, Reason: why, ID: id, Token: token}.Args()...); err != nil {
			return "", err
		}
		return StateCancelled, s.writeEvent(ctx, tx, eventWrite{Ticket: id, At: now, Kind: EventCancelled, From: StateRunning, To: StateCancelled, Attempt: lt.attempts, Actor: lt.owner, Reason: why})
	}
	if err := s.fenced(ctx, tx, id, s.q.NeedBudget, storedriver.NeedBudgetParams{Attempts: max(lt.attempts-1, 0), UpdatedAt: now,
		Reason: "needs budget: " + reason, Branch: branch, ResultDir: resultDir, ID: id, Token: token}.Args()...); err != nil {
		return "", err
	}
	return StateNeedsBudget, s.writeEvent(ctx, tx, eventWrite{Ticket: id, At: now, Kind: EventNeedsBudget, From: StateRunning, To: StateNeedsBudget, Attempt: lt.attempts, Actor: lt.owner, Reason: reason})
}

// AddBudget adds dollars to each later attempt of a needs_budget ticket and puts it back in
// the queue, ready at once, its next attempt starting from its kept work: needs_budget ->
// queued, event "budget_added" by who. Any other state is ErrInvalidTransition.
func (s *Store) AddBudget(ctx context.Context, id int64, dollars float64, who string) error {
	if math.IsNaN(dollars) || math.IsInf(dollars, 0) || dollars <= 0 || dollars > 10_000 {
		return fmt.Errorf("add budget to ticket %d: $%v: want more than 0 and at most 10000 (ticketctl budget %d +2.50)", id, dollars, id)
	}
	err := s.write(ctx, "add budget", func(ctx context.Context, tx storedriver.Tx) error {
		now := s.nowMS()
		st, attempts, err := s.currentState(ctx, tx, id)
		if err != nil {
			return err
		}
		if st != StateNeedsBudget {
			return fmt.Errorf("%w: ticket is %s, not needs_budget: nothing is waiting for money", ErrInvalidTransition, st)
		}
		reason := fmt.Sprintf("budget raised by $%.2f per attempt by %s", dollars, who)
		if _, err := tx.Exec(ctx, s.q.AddBudget, storedriver.AddBudgetParams{RunAfter: now, UpdatedAt: now, Reason: reason, Dollars: dollars, ID: id}.Args()...); err != nil {
			return err
		}
		return s.writeEvent(ctx, tx, eventWrite{Ticket: id, At: now, Kind: EventBudgetAdded, From: StateNeedsBudget, To: StateQueued, Attempt: attempts, Actor: who, Reason: reason})
	})
	if err != nil {
		return fmt.Errorf("add budget to ticket %d: %w", id, err)
	}
	s.eng.Notify()
	return nil
}
