package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/pipeline/tools"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/worktree"
)

// attemptRun is one attempt at a leased ticket: what prepare made ready for the run, and what
// perform ends.
type attemptRun struct {
	lease store.Lease
	repo  config.Repo
	// tree is the attempt's worktree (nil until prepared); fix its change.
	tree  *worktree.Tree
	fix   fixTree
	facts repoFacts
	// notes and questions are what operators and earlier attempts told the ticket.
	notes     []string
	questions []pipeline.QA
	// untrack stops the fix guard watching the worktree; keepBranch keeps the ticket's
	// branch when the worktree goes (a fix).
	untrack    func()
	keepBranch bool
	// round is the ticket's open round (store.Revise), nil for an attempt from the base.
	round *store.Round
}

// close removes the attempt's worktree, keeping the ticket's branch when it holds the fix.
func (a *attemptRun) close(ctx context.Context, log *slog.Logger, trees *worktree.Manager) {
	if a.untrack != nil {
		a.untrack()
	}
	if a.tree == nil {
		return
	}
	if err := trees.Remove(ctx, a.tree, a.keepBranch); err != nil {
		log.Warn("remove worktree", "dir", a.tree.Dir, "err", err)
	}
}

// prepare makes the attempt's worktree, environment and baseline ready and reads what the
// ticket was told; when it cannot, it says why as decide's cause.
func (w *workerPool) prepare(ctx context.Context, cancel context.CancelCauseFunc, a *attemptRun) (cause, bool) {
	t := a.lease.Ticket
	setup := func(err error) (cause, bool) {
		return cause{Stage: stageSetup, Err: err, Stop: context.Cause(ctx)}, false
	}
	repo, ok := w.cfg.Repos[t.Repo]
	if !ok {
		return cause{Stage: stageRefused, Err: fmt.Errorf("repo %q is not configured under repos in %s", t.Repo, w.cfg.File)}, false
	}
	a.repo = repo
	round, err := openRound(ctx, w.d.Store, t.ID)
	if err != nil {
		return setup(fmt.Errorf("%w: read the ticket's round: %w", ErrMachineFault, err))
	}
	a.round = round
	tree, err := prepareTree(ctx, w.trees, repo, t, round)
	switch {
	case errors.Is(err, worktree.ErrNotRepository) || errors.Is(err, worktree.ErrUnknownRef):
		// The repository or its base ref went away during the night: the machine's fault, not
		// the ticket's; the repository is paused as the start-up check pauses it.
		return cause{Stage: stageGone, Err: fmt.Errorf("prepare worktree: %v", err)}, false
	case errors.Is(err, worktree.ErrCheckoutTooLarge):
		// The base's files would not fit max_worktree_size: no attempt can check it out. Not
		// the ticket's fault; the repository is paused for the night, the error naming the
		// largest files and what to do.
		return cause{Stage: stageGone, Err: fmt.Errorf("prepare worktree: %v", err)}, false
	case err != nil:
		return setup(fmt.Errorf("prepare worktree: %w", err))
	}
	a.tree = tree
	watchTree(ctx, cancel, tree)
	if repo.AllowPaths, err = allowAtBase(tree.RepoPath, tree.BaseCommit, repo.AllowPaths); err != nil {
		return setup(err)
	}
	a.repo = repo
	if a.fix, err = openFixTree(tree, repo); err != nil {
		return setup(err)
	}
	if err := seedRound(ctx, a); err != nil {
		return setup(err)
	}
	if w.guard != nil {
		a.untrack = w.guard.track(a.fix)
	}
	if a.repo, err = w.envs.repoEnv(ctx, t.Repo, repo, tree); err != nil {
		// The recipe failed (the repository is paused, said once), or a shutdown.
		return cause{Stage: stageEnv, Err: fmt.Errorf("environment of %s: %v", t.Repo, err)}, false
	}
	if a.facts, err = w.baselines.get(ctx, a.repo, tree); err != nil {
		return setup(fmt.Errorf("baseline checks: %w", err))
	}
	if w.markUnhealthy(ctx, t.Repo, tree.BaseCommit, a.facts.extensions, a.facts.deps, validate.Health(a.facts.results)) {
		// The base moved to a broken commit during the night (or a check's tool stopped
		// starting): give the ticket back unspent.
		return setup(fmt.Errorf("repository %s is unhealthy at base %s; see the note on this ticket", t.Repo, short(tree.BaseCommit)))
	}
	if reason := validate.Aborted(a.facts.results); reason != "" {
		// The base commit's own checks broke a limit: no attempt can run them safely.
		return cause{Stage: stageRefused, Err: errors.New("baseline checks: " + reason)}, false
	}
	if err := a.readTold(ctx, w.d.Store); err != nil {
		return setup(fmt.Errorf("%w: %w", ErrMachineFault, err))
	}
	if err := a.resume(ctx, w.d.Store); err != nil {
		return setup(fmt.Errorf("%w: %w", ErrMachineFault, err))
	}
	return cause{}, true
}

// readTold reads the ticket's questions and answers and its requeue notes.
func (a *attemptRun) readTold(ctx context.Context, st *store.Store) error {
	asked, err := st.Questions(ctx, a.lease.Ticket.ID)
	if err != nil {
		return fmt.Errorf("read the ticket's questions: %w", err)
	}
	if a.notes, err = requeueNotes(ctx, st, a.lease.Ticket.ID); err != nil {
		return err
	}
	for _, q := range asked {
		a.questions = append(a.questions, pipeline.QA{Question: q.Text, Answer: q.Answer, By: q.AnsweredBy})
	}
	return nil
}

// run runs the pipeline on the prepared attempt and notes what the ticket should know of it.
func (w *workerPool) run(ctx context.Context, cancel context.CancelCauseFunc, log *slog.Logger, a *attemptRun) pipeline.Outcome {
	t, lease := a.lease.Ticket, a.lease
	out := w.runner.Run(ctx, pipeline.Job{
		Ticket: pipeline.Ticket{ID: t.ID, Attempt: lease.Attempt, Title: t.Title, Body: t.Body,
			Labels: t.Labels, Repo: t.Repo, Triage: t.Triage, Notes: a.notes,
			Questions: a.questions, QuestionsLeft: max(w.cfg.Budget.MaxQuestions-t.Questions, 0),
			Unverified: w.results.priorUnverified(ctx, log, t.ID, lease.Attempt), Round: pipelineRound(a.round)},
		Dir:          a.tree.Dir,
		RepoMap:      a.facts.repoMap,
		Instructions: a.facts.instructions,
		Checks:       a.facts.checks,
		Tests:        a.facts.tests,
		Imports:      a.facts.imports,
		Baseline:     a.facts.results,
		Diff:         a.fix.diff,
		Workspace:    a.fix.ws,
		Budget: pipeline.Budget{MaxSteps: w.cfg.Budget.MaxSteps, MaxTokens: w.cfg.Budget.MaxTokens,
			WallClock: w.cfg.Budget.WallClock, MaxDollars: attemptDollars(w.cfg.Budget.MaxDollars, t.BudgetExtra)},
		SaveTriage: func(ctx context.Context, triage string) error {
			err := w.d.Store.SaveTriage(ctx, t.ID, lease.Token, triage)
			if isStoreFault(err) {
				// The database, not the ticket, failed: the attempt ends uncharged.
				w.health.writeFailed(log, "save triage", t.ID, err)
				cancel(fmt.Errorf("%w: %w: the triage: %w", ErrMachineFault, errDatabaseWrite, err))
			}
			if err == nil {
				w.d.predictFromTriage(ctx, log, t.ID, triage)
			}
			return err
		},
		DiskFault:  diskFaultHook(log, cancel),
		BaseFile:   a.tree.FileAtBase,
		AllowPaths: a.repo.AllowPaths,
	})
	log.Info("attempt ended", "status", out.Status, "reason", out.Reason, "steps", out.Steps,
		"tokens", out.Tokens, "duration_s", seconds(out.Duration))
	if len(a.facts.flaky) > 0 {
		out.Flaky = append(slices.Clone(a.facts.flaky), out.Flaky...)
	}
	noteOutcome(context.WithoutCancel(ctx), log, w.d.Store, t.ID, out)
	return out
}

// noteOutcome notes on the ticket what the review dropped and which tests were flaky.
func noteOutcome(ctx context.Context, log *slog.Logger, st *store.Store, id int64, out pipeline.Outcome) {
	if out.DroppedFindings > 0 {
		if err := st.AddNote(ctx, id, "ticketd", fmt.Sprintf("review: %d checker finding(s) dropped over %d round(s) (evidence not in the diff or changed files, bad schema, or new in round 2)", out.DroppedFindings, out.ReviewRounds)); err != nil {
			log.Warn("note dropped findings", "err", err)
		}
	}
	if len(out.Flaky) > 0 {
		log.Warn("flaky tests: failed, then passed when re-run alone", "tests", strings.Join(out.Flaky, ", "))
		if err := st.AddNote(ctx, id, "ticketd", "flaky tests (failed, then passed when re-run alone; not blamed on the fix): "+strings.Join(out.Flaky, ", ")); err != nil {
			log.Warn("note flaky tests", "err", err)
		}
	}
}

// runCause is what ended the run, for decide: the attempt's stop cause, a worktree or base
// ref that vanished under it, an endpoint fault every ticket meets.
func (w *workerPool) runCause(ctx context.Context, log *slog.Logger, a *attemptRun, out pipeline.Outcome) cause {
	t := a.lease.Ticket
	c := cause{Stage: stageRun, Stop: context.Cause(ctx), TreeGone: treeGone(a.tree, t.Repo, a.repo)}
	if _, err := os.Stat(a.tree.Dir); err == nil {
		c.TreeLeft = true
	}
	if treeRelease(c, out) {
		return c
	}
	c.Systemic = out.EndpointFault != nil && w.systemic.release(log, t.ID, out.EndpointFault, w.stopClaims)
	if out.EndpointFault == nil && (out.Status == pipeline.StatusFixed || out.Status == pipeline.StatusFailed || out.Status == pipeline.StatusBudget) {
		w.systemic.reset()
	}
	if id := w.systemic.suspect(); id != 0 {
		w.d.Store.PassOver(id)
	} else {
		w.d.Store.PassOver()
	}
	return c
}

// openFixTree opens the worktree for the maker's tools, within the repository's allowed paths.
func openFixTree(tree *worktree.Tree, repo config.Repo) (fixTree, error) {
	ws, err := tools.NewWorkspace(tree.Dir)
	if err != nil {
		return fixTree{}, fmt.Errorf("open worktree: %w", err)
	}
	ws.SetAllowPaths(repo.AllowPaths)
	return newFixTree(tree, ws), nil
}
