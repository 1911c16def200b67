package store

import (
	"errors"
	"testing"
	"time"
)

func TestNeedBudgetAndAddBudget(t *testing.T) { forEachEngine(t, testNeedBudgetAndAddBudget) }

// testNeedBudgetAndAddBudget: a ticket stopped for budget waits outside the queue,
// uncharged, with its partial work; money puts it back, raised for its later attempts.
func testNeedBudgetAndAddBudget(t *testing.T, e engine) {
	b := e.setup(t)
	id := b.enqueue(t, "1")
	if err := b.s.AddBudget(b.ctx, id, 1, "op"); !errors.Is(err, ErrInvalidTransition) {
		t.Errorf("AddBudget on a queued ticket = %v; want ErrInvalidTransition", err)
	}
	l := b.claim(t, "w1")
	to, err := b.s.NeedBudget(b.ctx, id, l.Token, "projected: next call $0.02, $0.01 remains", "ticketd/1-attempt-1", "/results/1")
	if err != nil || to != StateNeedsBudget {
		t.Fatalf("NeedBudget = %s, %v", to, err)
	}
	tk, _ := b.s.Get(b.ctx, id)
	if tk.State != StateNeedsBudget || tk.Attempts != 0 || tk.Branch != "ticketd/1-attempt-1" || !tk.FinishedAt.IsZero() {
		t.Errorf("ticket %s attempts %d branch %q finished %v; want needs_budget, uncharged, its work kept, not finished", tk.State, tk.Attempts, tk.Branch, tk.FinishedAt)
	}
	if _, err := b.s.Claim(b.ctx, "w2", time.Minute); !errors.Is(err, ErrNoTicket) {
		t.Errorf("claim while needs_budget: %v; want ErrNoTicket", err)
	}
	if due, _ := b.s.NextDue(b.ctx); due.Waiting != 1 || due.Running != 0 || due.Queued != 0 {
		t.Errorf("NextDue = %+v; want it waiting", due)
	}
	for _, bad := range []float64{0, -1, 1e9} {
		if err := b.s.AddBudget(b.ctx, id, bad, "op"); err == nil {
			t.Errorf("AddBudget(%v) took it", bad)
		}
	}
	if err := b.s.AddBudget(b.ctx, id, 2.5, "op"); err != nil {
		t.Fatal(err)
	}
	if err := b.s.AddBudget(b.ctx, id, 2.5, "op"); !errors.Is(err, ErrInvalidTransition) {
		t.Errorf("second AddBudget = %v; want ErrInvalidTransition (nothing waits for money)", err)
	}
	tk, _ = b.s.Get(b.ctx, id)
	if tk.State != StateQueued || tk.BudgetExtra != 2.5 {
		t.Errorf("after AddBudget: %s extra $%v; want queued with $2.50 more", tk.State, tk.BudgetExtra)
	}
	if l := b.claim(t, "w1"); l.Attempt != 1 || l.Ticket.BudgetExtra != 2.5 {
		t.Errorf("claim after AddBudget: attempt %d extra %v; want 1 and 2.5", l.Attempt, l.Ticket.BudgetExtra)
	}
	events, _ := b.s.Events(b.ctx, id)
	kinds := map[string]bool{}
	for _, e := range events {
		kinds[string(e.Kind)] = true
	}
	if !kinds["needs_budget"] || !kinds["budget_added"] {
		t.Errorf("events %v; want needs_budget and budget_added", kinds)
	}
}
