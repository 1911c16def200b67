package daemon

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/ticketd/ticketd/daemon/record"
	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/store"
)

// ender carries out how attempts end, for one night.
type ender struct {
	d       *Daemon // pushes branches, settles duplicates
	st      *store.Store
	health  *storeHealth
	results *resultsFolder
	faults  *machineFaults
	// pauseRepo pauses a repository for the rest of the night.
	pauseRepo func(ctx context.Context, name, reason string)
	limits    limits
	parking   parking
	// suite holds the fixes the selected tests passed for the night's whole suite.
	suite *nightSuite
	// fixes are the night's published fixes, which a new one must agree with.
	fixes *nightFixes
}

// suiteWorking counts an attempt on repo under way for the night's whole suite, until the
// returned func is called: a group is not run while its repository may still add a fix.
func (w *ender) suiteWorking(repo string) (done func()) {
	if w == nil {
		return func() {}
	}
	return w.suite.working(repo)
}

// parking says when a ticket released too often for transport faults (or rate limited past
// the window) is parked, and until when.
type parking struct {
	runID int64
	max   int       // night.max_transport_releases; 0: never parked
	until time.Time // until the next night
	note  string    // until when, in words ("until the next night (T)")
}

// perform carries out decide's ending of an attempt: it keeps the change where the ending
// says, writes the results folder, pushes, and moves the ticket in the store with the
// folder's files in one write (store.EndAttempt): a lost lease keeps neither. A write the
// database does not take is retried until the night stops; the ticket then keeps its last
// recorded state until its lease expires.
func (w *ender) perform(ctx context.Context, log *slog.Logger, a *attemptRun, e ending, out pipeline.Outcome) {
	t := a.lease.Ticket
	if e.PauseRepo != "" {
		w.pauseRepo(ctx, t.Repo, e.PauseRepo)
	}
	switch e.Kind {
	case endDiscarded:
		log.Warn("lease lost: discarding this attempt's work")
		return
	case endDone:
		if _, err := a.fix.commit(ctx, commitMessage(t, out)); err != nil {
			w.perform(ctx, log, a, decide(cause{Stage: stageCommit, Err: err, TreeGone: treeGone(a.tree, t.Repo, a.repo)}, out, a.lease, w.limits), out)
			return
		}
		// Published one at a time per repository, each checked against the night's earlier
		// fixes (agree.go).
		done := w.fixes.turn(a.tree.RepoPath)
		defer done()
		fix := a.pending()
		if w.suite != nil && holds(out) {
			fix.held = out.Gate.Selection
		}
		if err := w.fixes.agree(ctx, log, fix); err != nil {
			refused := out
			refused.Reason = err.Error()
			w.perform(ctx, log, a, decide(cause{Stage: stageAgree, Err: err, Stop: context.Cause(ctx)}, out, a.lease, w.limits), refused)
			return
		}
		if err := moveFixBranch(ctx, a); err != nil {
			w.perform(ctx, log, a, decide(cause{Stage: stageCommit, Err: err, TreeGone: treeGone(a.tree, t.Repo, a.repo)}, out, a.lease, w.limits), out)
			return
		}
	}
	branch := w.keep(ctx, log, a, e, out)
	if e.Push && e.Kind != endDone {
		w.d.pushBranch(ctx, log, a.repo, t.ID, branch)
	}
	dir, files := "", []store.ArtifactFile(nil)
	if e.Report {
		dir, files = w.results.writeResult(ctx, log, a.lease, a.fix, out, record.Ending(e.Kind), branch)
		if f := w.faults.take(t.ID); f != nil {
			switch {
			case e.Charge:
				// A charged attempt without its record would be history lost: the machine's
				// fault, released.
				w.perform(ctx, log, a, decide(cause{Stage: stageResults, Err: f}, out, a.lease, w.limits), out)
				return
			case e.Kind == endDone:
				// The fix is committed on its branch; its results could not all be written.
				mc, _ := machineCause(f)
				w.faults.pauseNode(log, fmt.Sprintf("write the results of ticket %d: %v", t.ID, mc))
			}
		}
	}
	w.record(ctx, log, a, e, out, branch, dir, files)
}

// record moves the ticket in the store as the ending says, with the attempt's results files.
func (w *ender) record(ctx context.Context, log *slog.Logger, a *attemptRun, e ending, out pipeline.Outcome, branch, dir string, files []store.ArtifactFile) {
	t := a.lease.Ticket
	switch e.Kind {
	case endDone:
		w.complete(ctx, log, a, out, dir, files)
	case endNeedsInfo:
		w.ask(log, a.lease, out.Question, branch, dir, files)
	case endNeedsBudget:
		w.needBudget(log, a.lease, e, out, branch, dir, files)
	case endCancelled:
		if err := w.health.persist(log, "finish cancelled", t.ID, func(ctx context.Context) error {
			_, err := w.st.EndAttempt(ctx, store.Ending{ID: t.ID, Token: a.lease.Token, Kind: store.EndCancelled, Reason: e.Reason, Artifacts: files})
			return err
		}); err != nil {
			log.Error("finish cancelled ticket", "err", err)
		}
	case endRateLimited:
		w.deferRateLimited(log, a.lease, e, files)
	default:
		w.fail(ctx, log, a.lease, e, branch, dir, files)
	}
}

// keep commits the attempt's change where the ending keeps it, and returns the branch ("" for
// none). The fix's branch is kept past the worktree's removal.
func (w *ender) keep(ctx context.Context, log *slog.Logger, a *attemptRun, e ending, out pipeline.Outcome) string {
	t := a.lease.Ticket
	switch e.Keep {
	case keepFix:
		return a.fixBranch()
	case keepUnpublished:
		a.keepBranch = true
		return a.tree.Branch
	case keepAttemptBranch:
		reason := out.Reason
		if e.Kind == endNeedsInfo {
			reason = "asked a human: " + out.Question
		}
		return keepAttempt(ctx, log, a.fix, t.ID, a.lease.Attempt, reason)
	case keepReleasedBranch:
		return keepReleased(ctx, log, a.fix, t.ID, a.lease.Attempt, fmt.Sprintf("stopped: %v", e.Reason))
	}
	return ""
}

// complete records a fix: the ticket is done, its branch kept and pushed, its duplicates
// settled.
func (w *ender) complete(ctx context.Context, log *slog.Logger, a *attemptRun, out pipeline.Outcome, dir string, files []store.ArtifactFile) {
	t, branch := a.lease.Ticket, a.fixBranch()
	err := w.health.persist(log, "complete", t.ID, func(ctx context.Context) error {
		_, err := w.st.EndAttempt(ctx, store.Ending{ID: t.ID, Token: a.lease.Token, Kind: store.EndComplete,
			Result: store.Result{Branch: branch, ResultDir: dir, Summary: out.Summary}, Artifacts: files})
		return err
	})
	if isStoreFault(err) {
		// The database never took the result: the fix stays on its branch and in its result
		// folder for a human; the ticket reruns when its lease expires.
		a.keepBranch = true
		log.Error("complete ticket: the database did not take the result; the fix is kept on its branch", "branch", branch, "result", dir, "err", err)
		return
	}
	if err != nil {
		log.Error("complete ticket: discarding the fix", "err", err)
		return
	}
	a.keepBranch = true
	w.fixes.published(a.pending())
	log.Info("ticket done", "branch", branch, "result", dir)
	if w.suite != nil && holds(out) {
		w.suite.hold(a)
		note := fmt.Sprintf("%sthe %d test file(s) its change reaches passed it; it is pushed once the whole suite passes over the night's fixes", HeldNote, len(out.Gate.Selection.Files))
		if err := w.st.AddNote(ctx, t.ID, w.st.Node(), note); err != nil {
			log.Warn("note the held fix", "err", err)
		}
	} else {
		w.d.pushFix(ctx, log, a.repo, t.ID, branch)
	}
	w.d.settleDuplicates(ctx, log, t.ID)
}

// ask records the maker's question: asking is not a failure, the attempt is not charged, and
// its change is kept beside the question for the human who answers.
func (w *ender) ask(log *slog.Logger, lease store.Lease, question, branch, dir string, files []store.ArtifactFile) {
	var state store.State
	err := w.health.persist(log, "record the question", lease.Ticket.ID, func(ctx context.Context) (err error) {
		state, err = w.st.EndAttempt(ctx, store.Ending{ID: lease.Ticket.ID, Token: lease.Token, Kind: store.EndAsk,
			Asked: store.Asked{Question: question, Branch: branch, ResultDir: dir}, Artifacts: files})
		return err
	})
	if err != nil {
		log.Error("record the question", "err", err)
		return
	}
	log.Info("ticket needs info: the maker asked a human", "state", state, "question", question)
}

// needBudget records an attempt its dollars stopped (spent, or projected to be by its next
// call): not charged, the ticket waits as needs_budget until an operator adds money
// (ticketctl budget ID +$X).
func (w *ender) needBudget(log *slog.Logger, lease store.Lease, e ending, out pipeline.Outcome, branch, dir string, files []store.ArtifactFile) {
	var state store.State
	err := w.health.persist(log, "stop for budget", lease.Ticket.ID, func(ctx context.Context) (err error) {
		state, err = w.st.EndAttempt(ctx, store.Ending{ID: lease.Ticket.ID, Token: lease.Token, Kind: store.EndNeedBudget,
			Reason: e.Reason, Branch: branch, ResultDir: dir, Artifacts: files})
		return err
	})
	if err != nil {
		log.Error("stop for budget", "err", err)
		return
	}
	log.Warn("ticket needs budget: its dollars stopped it; `ticketctl budget` resumes it", "state", state,
		"spent_usd", out.Dollars, "reason", out.Reason, "branch", branch)
}

// deferRateLimited records a rate limit's ending: back to the queue until the provider's
// reset, or parked until the next night when that falls after the window.
func (w *ender) deferRateLimited(log *slog.Logger, lease store.Lease, e ending, files []store.ArtifactFile) {
	end := store.Ending{ID: lease.Ticket.ID, Token: lease.Token, Kind: store.EndFail,
		Failure: store.Failure{Kind: e.Fail, Reason: e.Reason, RunAfter: e.RunAfter}, Artifacts: files}
	if e.Park {
		end = store.Ending{ID: lease.Ticket.ID, Token: lease.Token, Kind: store.EndPark, Until: w.parking.until,
			Reason: fmt.Sprintf("parked %s: rate limited; %s", cmp.Or(w.parking.note, "until the next night"), e.Reason), Artifacts: files}
	}
	err := w.health.persist(log, "defer a rate-limited ticket", lease.Ticket.ID, func(ctx context.Context) error {
		_, err := w.st.EndAttempt(ctx, end)
		return err
	})
	if err != nil {
		log.Error("defer a rate-limited ticket", "err", err)
		return
	}
	log.Warn("ticket rate limited: waits for the reset", "retry_at", e.RunAfter, "parked", e.Park)
}

// fail records a failure: charged (retried or escalated) or a release, which never spends
// the attempt.
func (w *ender) fail(ctx context.Context, log *slog.Logger, lease store.Lease, e ending, branch, dir string, files []store.ArtifactFile) {
	switch e.Fault {
	case faultPauseNode:
		w.faults.pauseNode(log, e.Reason)
	case faultNoted:
		w.faults.add(e.Reason)
	}
	if e.MayPark && w.park(ctx, log, lease, e.Reason, files) {
		return
	}
	var state store.State
	err := w.health.persist(log, "record the attempt's end", lease.Ticket.ID, func(ctx context.Context) (err error) {
		state, err = w.st.EndAttempt(ctx, store.Ending{ID: lease.Ticket.ID, Token: lease.Token, Kind: store.EndFail,
			Failure: store.Failure{Kind: e.Fail, Reason: e.Reason, Branch: branch, ResultDir: dir, Final: e.Final}, Artifacts: files})
		return err
	})
	switch {
	case err != nil:
		log.Error("record the attempt's end", "kind", e.Fail, "err", err)
	case e.Fail == store.FailMachine:
		log.Warn("ticket released: the machine failed the attempt, not the ticket", "reason", e.Reason, "kept_branch", branch)
	case !e.Charge:
		log.Info("ticket released", "kind", e.Fail, "reason", e.Reason, "kept_branch", branch)
	case state == store.StateEscalated:
		log.Warn("ticket escalated: it needs a human", "attempts", lease.Attempt, "reason", e.Reason, "result", dir)
	default:
		log.Info("attempt failed", "state", state, "reason", e.Reason)
	}
}

// park keeps a ticket released too often for transport faults tonight out of the queue
// until the next night, so the queue moves on; it reports whether it parked the ticket.
func (w *ender) park(ctx context.Context, log *slog.Logger, lease store.Lease, cause string, files []store.ArtifactFile) bool {
	if w.parking.runID == 0 || w.parking.max <= 0 {
		return false
	}
	n, err := w.st.TransportReleases(ctx, lease.Ticket.ID, w.parking.runID)
	if err != nil {
		log.Warn("count transport releases", "err", err)
		return false
	}
	if n < w.parking.max {
		return false
	}
	reason := fmt.Sprintf("parked %s: released %d times tonight for transport faults (night.max_transport_releases), last: %v",
		cmp.Or(w.parking.note, "until the next night"), n, cause)
	if _, err := w.st.EndAttempt(ctx, store.Ending{ID: lease.Ticket.ID, Token: lease.Token, Kind: store.EndPark,
		Until: w.parking.until, Reason: reason, Artifacts: files}); err != nil {
		log.Error("park ticket", "err", err)
		return true
	}
	log.Warn("ticket parked", "until", w.parking.until, "transport_releases", n, "reason", cause)
	return true
}
