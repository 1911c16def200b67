package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ticketd/ticketd/store"
)

// budgetJSON is the stable shape of budget --json.
type budgetJSON struct {
	ID            int64       `json:"id"`
	PreviousState store.State `json:"previous_state"`
	State         store.State `json:"state"`
	AddedUSD      float64     `json:"added_usd"`
	ExtraUSD      float64     `json:"budget_extra_usd"`
}

// parseDollars reads "+2.50", "2.50", "+$2.50" or "$2.50".
func parseDollars(v string) (float64, error) {
	s := strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(v), "+"), "$")
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 {
		return 0, fmt.Errorf("%q is not an amount of dollars above 0", v)
	}
	return f, nil
}

func cmdBudget(e *env, args []string) error {
	fs := e.flagSet("budget")
	try := "ticketctl budget 12 +2.50"
	pos, err := e.parse(fs, args, 2, 2)
	if err != nil {
		return err
	}
	id, err := e.parseID(pos[0])
	if err != nil {
		return err
	}
	dollars, err := parseDollars(pos[1])
	if err != nil {
		return usagef(try, "budget: %v", err)
	}
	return e.withStore(func(s *store.Store) error {
		before, err := s.Get(e.ctx, id)
		if err != nil {
			return notFoundHint(err)
		}
		if before.State != store.StateNeedsBudget {
			return fmt.Errorf("%w: ticket %d is %s: it is not waiting for money (ticketctl list --state needs_budget lists those that are)", store.ErrInvalidTransition, id, before.State)
		}
		if err := s.AddBudget(e.ctx, id, dollars, e.actor()); err != nil {
			return err
		}
		after, err := s.Get(e.ctx, id)
		if err != nil {
			return err
		}
		if e.g.json {
			return e.printJSON(budgetJSON{ID: id, PreviousState: before.State, State: after.State, AddedUSD: dollars, ExtraUSD: after.BudgetExtra})
		}
		fmt.Fprintf(e.stdout, "ticket %d: %s -> %s (each attempt may now spend $%.2f more than budget.max_dollars; its partial work is on %s)\n",
			id, before.State, after.State, after.BudgetExtra, before.Branch)
		return nil
	})
}
