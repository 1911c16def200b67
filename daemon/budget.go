package daemon

import (
	"context"
	"log/slog"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/store"
)

// attemptDollars is an attempt's dollar budget: the configured one plus what operators
// added to the ticket (ticketctl budget). 0 (no limit) stays 0.
func attemptDollars(configured, extra float64) float64 {
	if configured <= 0 {
		return configured
	}
	return configured + extra
}

// needBudget ends an attempt its dollars stopped (spent, or projected to be by its next
// call): its partial work is kept on its own branch, the attempt is not charged, and the
// ticket waits as needs_budget until an operator adds money (ticketctl budget ID +$X).
func (w *workerPool) needBudget(ctx context.Context, log *slog.Logger, lease store.Lease, fix fixTree, repo config.Repo, out pipeline.Outcome) {
	t := lease.Ticket
	branch := keepAttempt(ctx, log, fix, t.ID, lease.Attempt, out.Reason)
	w.d.pushBranch(ctx, log, repo, t.ID, branch)
	dir := w.writeResult(ctx, log, lease, fix, out, string(store.StateNeedsBudget), branch)
	var state store.State
	err := w.persist(w.stopCtx(), log, "stop for budget", t.ID, func(ctx context.Context) (err error) {
		state, err = w.d.Store.NeedBudget(ctx, t.ID, lease.Token, oneLine(out.Reason), branch, dir)
		return err
	})
	if err != nil {
		log.Error("stop for budget", "err", err)
		return
	}
	log.Warn("ticket needs budget: its dollars stopped it; `ticketctl budget` resumes it", "state", state,
		"spent_usd", out.Dollars, "reason", out.Reason, "branch", branch)
}
