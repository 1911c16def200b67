package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/daemon/github"
	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/pipeline/tools"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/worktree"
)

// workerPool is the state the night's workers share.
type workerPool struct {
	d         *Daemon
	cfg       config.Config
	log       *slog.Logger
	trees     *worktree.Manager
	baselines *baselines
	runner    *pipeline.Runner
	// guard undoes what each run of checks wrote in an attempt's worktree; nil: never.
	guard     *fixGuard
	windowEnd time.Time
	// gate says which model endpoints are down; claims pause while any is (a ticket
	// needs every role's endpoint). nil: never paused.
	gate endpointGate
	// runID and parkUntil park a ticket released too often for transport faults; parkNote
	// says until when, in words ("until the next night (T)").
	runID     int64
	parkUntil time.Time
	parkNote  string
	unhealthy unhealthyRepos
	// envs are the repositories' environments (repos.<name>.setup); nil: none built.
	envs *repoEnvs
	// pending are the repositories whose baseline is still being computed.
	pending pendingBaselines
	// stop ends when work in flight must stop (shutdown, the grace period): a write the
	// database did not take is retried until then. nil: never.
	stop        context.Context
	storeHealth storeHealth
	// stopClaims ends the night's claims with a cause (a systemic failure); nil: never.
	stopClaims context.CancelCauseFunc
	systemic   systemic

	// faults are what the machine failed tonight (storage, the ticket database); pauseOnce
	// stops this node's claims once after a storage fault.
	faults    machineFaults
	pauseOnce sync.Once
	// identity is the ticket database's (store.Identity), written in each results folder.
	identity string
	// calls records the night's model calls; it keeps those the database did not take.
	calls *callRecorder

	mu      sync.Mutex
	touched []int64
	// held are the leases this pool's workers hold now (ticket → token), extended first
	// when the database takes writes again, before anyone may claim.
	held map[int64]int64
}

func (w *workerPool) hold(l store.Lease) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.held == nil {
		w.held = map[int64]int64{}
	}
	w.held[l.Ticket.ID] = l.Token
}

func (w *workerPool) unhold(id int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.held, id)
}

// heldLeases returns the leases held now.
func (w *workerPool) heldLeases() map[int64]int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.held)
}

func (w *workerPool) touchedIDs() []int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	seen := map[int64]bool{}
	var out []int64
	for _, id := range w.touched {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// endpointGate is the model client's breaker view; *model.Client implements it.
type endpointGate interface {
	Unavailable(ctx context.Context) []model.EndpointStatus
}

var _ endpointGate = (*model.Client)(nil)

// loop claims and works tickets until there is nothing left to do in the window.
func (w *workerPool) loop(claimCtx, workCtx context.Context, worker string) {
	log := w.log.With("worker", worker)
	for claimCtx.Err() == nil {
		if w.gate != nil {
			if down := w.gate.Unavailable(claimCtx); len(down) > 0 {
				wait, more := w.nextWork(claimCtx)
				if !more {
					return
				}
				for _, s := range down {
					wait = min(wait, max(time.Until(s.NextProbe), 10*time.Millisecond))
				}
				if !sleep(claimCtx, wait) {
					return
				}
				continue
			}
		}
		if w.storeDown() {
			// No claims while the database does not take writes. With nothing held, a claim
			// every second is the probe that finds it writable again; while workers hold
			// tickets, their own writes are the probe: a claim that landed first could take
			// over a lease that expired meanwhile, and throw away a finished fix.
			if !sleep(claimCtx, time.Second) {
				return
			}
			if len(w.heldLeases()) > 0 {
				continue
			}
		}
		lease, err := w.d.Store.Claim(claimCtx, worker, w.cfg.Night.Lease)
		if errors.Is(err, store.ErrNoTicket) {
			wait, more := w.nextWork(claimCtx)
			if !more {
				return
			}
			// A notice that a ticket became claimable (an enqueue, a release, on any node),
			// or a repository's baseline becoming ready, ends the wait early; the wait itself
			// is the poll that backs notices up.
			if !w.waitForWork(claimCtx, wait) {
				return
			}
			continue
		}
		if err != nil {
			if claimCtx.Err() == nil {
				if isStoreFault(err) {
					w.writeFailed(log, "claim", 0, err)
				} else {
					log.Error("claim ticket", "err", err)
				}
				sleep(claimCtx, w.cfg.Night.Poll)
			}
			continue
		}
		w.writeOK(claimCtx, log)
		w.mu.Lock()
		w.touched = append(w.touched, lease.Ticket.ID)
		w.mu.Unlock()
		w.hold(lease)
		w.work(workCtx, log.With("ticket", lease.Ticket.ID, "attempt", lease.Attempt), lease)
		w.unhold(lease.Ticket.ID)
	}
}

// nextWork says whether the queue may still give this worker something before the window
// closes, and how long to wait before asking again.
func (w *workerPool) nextWork(ctx context.Context) (time.Duration, bool) {
	// Read before the queue: a baseline unpauses its repository before it stops counting
	// as pending, so with none pending the queue read next shows its tickets claimable.
	pending := len(w.pending.list()) > 0
	due, err := w.d.Store.NextDue(ctx)
	if err != nil {
		return w.cfg.Night.Poll, ctx.Err() == nil
	}
	now := w.d.now()
	// The poll is the back-stop for what no notice announces (a retry's backoff set by
	// another process): where notices reach every node, it can be rare.
	poll := w.cfg.Night.Poll
	if w.d.Store.NoticesReachOtherNodes() {
		poll = max(poll, idleBackstop)
	}
	wait, more := poll, false // a paused (unhealthy) repository's tickets wait for the next night
	if due.Paused > 0 && pending {
		more = true // their baseline is on its way: a baseline that ends wakes the wait
	}
	if due.Running > 0 {
		more = true // it may come back as a retry, or its lease may expire
		if !due.NextLeaseExpiry.IsZero() {
			wait = min(wait, max(due.NextLeaseExpiry.Sub(now), 10*time.Millisecond))
		}
	}
	if due.Queued > 0 && due.NextRunAfter.Before(w.windowEnd) {
		more = true
		wait = min(wait, max(due.NextRunAfter.Sub(now), 10*time.Millisecond))
	}
	return wait, more
}

// waitForWork waits up to wait for a notice of work, or for a pending baseline to end; false
// when ctx ended.
func (w *workerPool) waitForWork(ctx context.Context, wait time.Duration) bool {
	ready := w.pending.waitable()
	if ready == nil {
		return w.d.Store.WaitForWork(ctx, wait)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-ready:
			cancel()
		case <-wctx.Done():
		}
	}()
	w.d.Store.WaitForWork(wctx, wait)
	return ctx.Err() == nil
}

// idleBackstop is the longest an idle worker waits between looks at the queue when notices
// reach every node (PostgreSQL): due times it knows of (a backoff, a lease expiry) wake it
// earlier, and so does any notice.
const idleBackstop = 30 * time.Second

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// work runs one attempt at a leased ticket and records its end. Whatever happens, the
// ticket leaves this function in a state the store allows, or with a lease that expires.
func (w *workerPool) work(workCtx context.Context, log *slog.Logger, lease store.Lease) {
	t := lease.Ticket
	ctx, cancel := context.WithCancelCause(workCtx)
	defer cancel(nil)
	stopBeat := w.heartbeat(ctx, cancel, log, lease)
	defer stopBeat()
	// Writes after the attempt must land even when work is being cancelled.
	bg := context.WithoutCancel(ctx)
	log.Info("attempt started", "title", t.Title, "repo", t.Repo)

	repo, ok := w.cfg.Repos[t.Repo]
	if !ok {
		w.fail(bg, log, lease, store.Failure{Kind: store.FailFix,
			Reason: fmt.Sprintf("repo %q is not configured under repos in %s", t.Repo, w.cfg.File)})
		return
	}
	tree, err := w.trees.Prepare(ctx, repo.Path, repo.BaseRef, workBranch(t))
	switch {
	case errors.Is(err, worktree.ErrNotRepository) || errors.Is(err, worktree.ErrUnknownRef):
		// The repository or its base ref went away during the night: the machine's fault,
		// not the ticket's. The repository is paused as the start-up check pauses it, and
		// the ticket goes back unspent.
		reason := fmt.Sprintf("prepare worktree: %v", err)
		w.pauseRepo(bg, t.Repo, reason)
		w.releaseMachine(bg, log, lease, reason)
		return
	case err != nil:
		w.release(bg, log, lease, ctx, fmt.Errorf("prepare worktree: %w", err))
		return
	}
	w.watchTree(ctx, cancel, tree, repo)
	keepBranch := false
	defer func() {
		if err := w.trees.Remove(bg, tree, keepBranch); err != nil {
			log.Warn("remove worktree", "dir", tree.Dir, "err", err)
		}
	}()
	ws, err := tools.NewWorkspace(tree.Dir)
	if err != nil {
		w.release(bg, log, lease, ctx, fmt.Errorf("open worktree: %w", err))
		return
	}
	ws.SetAllowPaths(repo.AllowPaths)
	fix := newFixTree(tree, ws)
	if w.guard != nil {
		defer w.guard.track(fix)()
	}
	if repo, err = w.repoEnv(ctx, t.Repo, repo, tree); err != nil {
		// The recipe failed (the repository is paused, said once), or a shutdown: the ticket
		// goes back unspent either way.
		w.releaseMachine(bg, log, lease, fmt.Sprintf("environment of %s: %v", t.Repo, err))
		return
	}
	facts, err := w.baselines.get(ctx, repo, tree)
	if err != nil {
		w.release(bg, log, lease, ctx, fmt.Errorf("baseline checks: %w", err))
		return
	}
	if w.markUnhealthy(ctx, t.Repo, tree.BaseCommit, validate.Health(facts.results)) {
		// The base moved to a broken commit during the night (or a check's tool stopped
		// starting): give the ticket back unspent.
		w.release(bg, log, lease, ctx, fmt.Errorf("repository %s is unhealthy at base %s; see the note on this ticket", t.Repo, short(tree.BaseCommit)))
		return
	}
	if reason := validate.Aborted(facts.results); reason != "" {
		// The base commit's own checks broke a limit: no attempt can run them safely.
		w.fail(bg, log, lease, store.Failure{Kind: store.FailFix, Reason: "baseline checks: " + reason})
		return
	}
	asked, err := w.d.Store.Questions(ctx, t.ID)
	if err != nil {
		w.release(bg, log, lease, ctx, fmt.Errorf("%w: read the ticket's questions: %w", ErrMachineFault, err))
		return
	}
	notes, err := requeueNotes(ctx, w.d.Store, t.ID)
	if err != nil {
		w.release(bg, log, lease, ctx, fmt.Errorf("%w: %w", ErrMachineFault, err))
		return
	}
	var questions []pipeline.QA
	for _, q := range asked {
		questions = append(questions, pipeline.QA{Question: q.Text, Answer: q.Answer, By: q.AnsweredBy})
	}
	out := w.runner.Run(ctx, pipeline.Job{
		Ticket: pipeline.Ticket{ID: t.ID, Attempt: lease.Attempt, Title: t.Title, Body: t.Body,
			Labels: t.Labels, Repo: t.Repo, Triage: t.Triage, Notes: notes,
			Questions: questions, QuestionsLeft: max(w.cfg.Budget.MaxQuestions-t.Questions, 0),
			Unverified: w.priorUnverified(ctx, log, t.ID, lease.Attempt)},
		Dir:          tree.Dir,
		RepoMap:      facts.repoMap,
		Instructions: facts.instructions,
		Checks:       facts.checks,
		Tests:        facts.tests,
		Baseline:     facts.results,
		Diff:         fix.diff,
		Workspace:    ws,
		Budget: pipeline.Budget{MaxSteps: w.cfg.Budget.MaxSteps, MaxTokens: w.cfg.Budget.MaxTokens,
			WallClock: w.cfg.Budget.WallClock, MaxDollars: attemptDollars(w.cfg.Budget.MaxDollars, t.BudgetExtra)},
		SaveTriage: func(ctx context.Context, triage string) error {
			err := w.d.Store.SaveTriage(ctx, t.ID, lease.Token, triage)
			if isStoreFault(err) {
				// The database, not the ticket, failed: the attempt ends uncharged.
				w.writeFailed(log, "save triage", t.ID, err)
				cancel(fmt.Errorf("%w: %w: the triage: %w", ErrMachineFault, errDatabaseWrite, err))
			}
			return err
		},
		DiskFault:  w.diskFaultHook(log, cancel),
		BaseFile:   tree.FileAtBase,
		AllowPaths: repo.AllowPaths,
	})
	log.Info("attempt ended", "status", out.Status, "reason", out.Reason, "steps", out.Steps,
		"tokens", out.Tokens, "duration_s", seconds(out.Duration))
	if len(facts.flaky) > 0 {
		out.Flaky = append(slices.Clone(facts.flaky), out.Flaky...)
	}
	if out.DroppedFindings > 0 {
		if err := w.d.Store.AddNote(bg, t.ID, "ticketd", fmt.Sprintf("review: %d checker finding(s) dropped over %d round(s) (evidence not in the diff or changed files, bad schema, or new in round 2)", out.DroppedFindings, out.ReviewRounds)); err != nil {
			log.Warn("note dropped findings", "err", err)
		}
	}
	if len(out.Flaky) > 0 {
		log.Warn("flaky tests: failed, then passed when re-run alone", "tests", strings.Join(out.Flaky, ", "))
		if err := w.d.Store.AddNote(bg, t.ID, "ticketd", "flaky tests (failed, then passed when re-run alone; not blamed on the fix): "+strings.Join(out.Flaky, ", ")); err != nil {
			log.Warn("note flaky tests", "err", err)
		}
	}

	cause := context.Cause(ctx)
	if gone := w.treeGone(tree, t.Repo, repo); gone != "" || errors.Is(cause, errWorktreeGone) {
		// The worktree or the base ref vanished under the attempt (deleted by hand, a
		// clean-up, a force-push): whatever the model saw after that was the machine's
		// fault. The repository is paused until its start-up check passes; the ticket goes
		// back unspent, unless its fix is finished and its worktree still there to commit.
		if gone == "" {
			gone = cause.Error()
		}
		w.pauseRepo(bg, t.Repo, gone)
		if _, err := os.Stat(tree.Dir); err != nil || out.Status != pipeline.StatusFixed || cause != nil {
			w.releaseMachine(bg, log, lease, gone)
			return
		}
	}
	if out.EndpointFault != nil && w.systemicRelease(log, t.ID, out.EndpointFault) {
		w.release(bg, log, lease, ctx, fmt.Errorf("the model endpoint's answer, not this ticket, ended the attempt: %s", oneLine(out.Reason)))
		return
	}
	if out.EndpointFault == nil && (out.Status == pipeline.StatusFixed || out.Status == pipeline.StatusFailed || out.Status == pipeline.StatusBudget) {
		w.systemic.reset()
	}
	switch {
	case errors.Is(cause, errLeaseLost):
		log.Warn("lease lost: discarding this attempt's work")
		return
	case errors.Is(cause, ErrMachineFault):
		// The machine ended the attempt (its storage, the ticket database): what the
		// attempt did is kept as a stopped attempt's is, and the ticket goes back unspent.
		branch := keepReleased(bg, log, fix, t.ID, lease.Attempt, fmt.Sprintf("stopped: %v", cause))
		dir := w.writeResult(bg, log, lease, fix, out, "released", branch)
		w.faults.take(t.ID)
		w.releaseKept(bg, log, lease, ctx, cause, branch, dir)
		return
	case errors.Is(cause, errCancelRequested):
		w.writeResult(bg, log, lease, fix, out, "cancelled", "")
		if err := w.persist(w.stopCtx(), log, "finish cancelled", t.ID, func(ctx context.Context) error {
			return w.d.Store.FinishCancelled(ctx, t.ID, lease.Token, "cancelled by an operator while running")
		}); err != nil {
			log.Error("finish cancelled ticket", "err", err)
		}
		return
	case cause != nil && out.Status != pipeline.StatusFixed:
		// Stopped from outside (window and grace, shutdown, the night's dollars): the work so
		// far is kept like a failed attempt's, and the attempt is not spent.
		branch := keepReleased(bg, log, fix, t.ID, lease.Attempt, fmt.Sprintf("stopped: %v", cause))
		w.d.pushBranch(bg, log, repo, t.ID, branch)
		dir := w.writeResult(bg, log, lease, fix, out, "released", branch)
		w.releaseKept(bg, log, lease, ctx, cause, branch, dir)
		return
	}

	switch out.Status {
	case pipeline.StatusFixed:
		if _, err := fix.commit(bg, commitMessage(t, out)); err != nil {
			if cause, machine := machineCause(err); machine {
				w.releaseFault(bg, log, lease, fmt.Errorf("commit fix: %w", cause))
				return
			}
			w.fail(bg, log, lease, store.Failure{Kind: store.FailFix, Reason: fmt.Sprintf("commit fix: %v", err)})
			return
		}
		dir := w.writeResult(bg, log, lease, fix, out, string(store.StateDone), tree.Branch)
		if f := w.faults.take(t.ID); f != nil {
			// The fix is committed on its branch; its results could not all be written.
			cause, _ := machineCause(f)
			w.pauseNode(log, fmt.Sprintf("write the results of ticket %d: %v", t.ID, cause))
		}
		err := w.persist(w.stopCtx(), log, "complete", t.ID, func(ctx context.Context) error {
			return w.d.Store.Complete(ctx, t.ID, lease.Token, store.Result{Branch: tree.Branch, ResultDir: dir, Summary: out.Summary})
		})
		if isStoreFault(err) {
			// The database never took the result: the fix stays on its branch and in its
			// result folder for a human; the ticket reruns when its lease expires.
			keepBranch = true
			log.Error("complete ticket: the database did not take the result; the fix is kept on its branch", "branch", tree.Branch, "result", dir, "err", err)
			return
		}
		if err != nil {
			log.Error("complete ticket: discarding the fix", "err", err)
			return
		}
		keepBranch = true
		log.Info("ticket done", "branch", tree.Branch, "result", dir)
		w.d.pushBranch(bg, log, repo, t.ID, tree.Branch)
		w.d.settleDuplicates(bg, log, t.ID)
	case pipeline.StatusNeedsInfo:
		// Asking is not a failure: the attempt is not charged, and whatever it changed is
		// kept beside the question for the human who answers.
		branch := keepAttempt(bg, log, fix, t.ID, lease.Attempt, "asked a human: "+out.Question)
		w.d.pushBranch(bg, log, repo, t.ID, branch)
		dir := w.writeResult(bg, log, lease, fix, out, string(store.StateNeedsInfo), branch)
		var state store.State
		err := w.persist(w.stopCtx(), log, "record the question", t.ID, func(ctx context.Context) (err error) {
			state, err = w.d.Store.AskHuman(ctx, t.ID, lease.Token, store.Asked{Question: out.Question, Branch: branch, ResultDir: dir})
			return err
		})
		if err != nil {
			log.Error("record the question", "err", err)
			return
		}
		log.Info("ticket needs info: the maker asked a human", "state", state, "question", out.Question)
	case pipeline.StatusBudget:
		if out.NeedsBudget && w.cfg.Budget.MaxDollars > 0 {
			w.needBudget(bg, log, lease, fix, repo, out)
			return
		}
		w.failAttempt(bg, log, lease, fix, repo, out)
	case pipeline.StatusTransport:
		if !out.RetryAt.IsZero() {
			w.deferRateLimited(bg, log, lease, out.RetryAt, out.Reason)
			return
		}
		w.release(bg, log, lease, ctx, errors.New(out.Reason))
	case pipeline.StatusStopped:
		w.release(bg, log, lease, ctx, errors.New(out.Reason))
	default:
		w.failAttempt(bg, log, lease, fix, repo, out)
	}
}

// failAttempt records a charged attempt that did not fix the ticket: retry or escalate.
func (w *workerPool) failAttempt(bg context.Context, log *slog.Logger, lease store.Lease, fix fixTree, repo config.Repo, out pipeline.Outcome) {
	t := lease.Ticket
	{
		kind := store.FailFix
		switch out.Status {
		case pipeline.StatusBudget:
			kind = store.FailBudget
		case pipeline.StatusTestsChanged:
			kind = store.FailHuman // refused by rule: escalated at once, for ticketctl accept
		}
		// The same unverified patch a second time escalates now: a retry would only repeat it;
		// a change refused by rule escalates at once, for ticketctl accept.
		last := lease.Attempt >= t.AttemptLimit() || out.RepeatsUnverified > 0 || kind == store.FailHuman
		state := "retry"
		if last {
			state = string(store.StateEscalated)
		}
		// The next attempt resets the ticket's branch: keep this one's work on its own.
		branch := keepAttempt(bg, log, fix, t.ID, lease.Attempt, out.Reason)
		w.d.pushBranch(bg, log, repo, t.ID, branch)
		dir := w.writeResult(bg, log, lease, fix, out, state, branch)
		if f := w.faults.take(t.ID); f != nil {
			// The attempt's record could not be written: the machine's fault; a charged
			// attempt without its record would be history lost.
			cause, _ := machineCause(f)
			w.releaseFault(bg, log, lease, fmt.Errorf("write the results of attempt %d: %w", lease.Attempt, cause))
			return
		}
		var newState store.State
		err := w.persist(w.stopCtx(), log, "record failed attempt", t.ID, func(ctx context.Context) (err error) {
			newState, err = w.d.Store.Fail(ctx, t.ID, lease.Token, store.Failure{Kind: kind, Reason: oneLine(out.Reason), ResultDir: dir, Branch: branch, Final: out.RepeatsUnverified > 0})
			return err
		})
		if err != nil {
			log.Error("record failed attempt", "err", err)
			return
		}
		if newState == store.StateEscalated {
			log.Warn("ticket escalated: it needs a human", "attempts", lease.Attempt, "reason", out.Reason, "result", dir)
		} else {
			log.Info("attempt failed", "state", newState, "reason", out.Reason)
		}
	}
}

// commitMessage is the fix commit's message. A GitHub ticket's names its issue ("Fixes #N",
// N the number there, never the ticket id), so merging closes it; a ticket from a
// folder names none. The title, the maker's summary and the trailer are defused: pushed, they
// would otherwise notify whoever they @mention and close any issue they say they fix.
func commitMessage(t store.Ticket, out pipeline.Outcome) string {
	title := github.Defuse(strings.Join(strings.Fields(t.Title), " "))
	if _, n, err := github.ParseExternalID(t.ExternalID); t.Source == github.Source && err == nil {
		title = fmt.Sprintf("Fixes #%d: %s", n, title)
	}
	trailer := github.Defuse(fmt.Sprintf("ticketd ticket %d (%s %s).", t.ID, t.Source, t.ExternalID))
	return fmt.Sprintf("%s\n\n%s\n\n%s", title, github.Defuse(out.Summary), trailer)
}

// release gives the ticket back without burning its attempt: the cause was not the ticket's
// (shutdown, window, dollars, a transport fault, a worktree that could not be made).
func (w *workerPool) release(ctx context.Context, log *slog.Logger, lease store.Lease, attemptCtx context.Context, cause error) {
	w.releaseKept(ctx, log, lease, attemptCtx, cause, "", "")
}

// releaseKept is release for an attempt whose partial work was kept on branch, with its
// report in dir (either may be empty).
func (w *workerPool) releaseKept(ctx context.Context, log *slog.Logger, lease store.Lease, attemptCtx context.Context, cause error, branch, dir string) {
	kind := store.FailTransport
	if c := context.Cause(attemptCtx); c != nil && (errors.Is(c, ErrShutdown) || errors.Is(c, ErrNightBudget) || errors.Is(c, ErrWindowClosed) || errors.Is(c, ErrQuota)) {
		kind, cause = store.FailShutdown, c
	}
	if c, machine := machineCause(cause); machine && kind == store.FailTransport {
		// Not the endpoint's fault either: no count toward parking.
		kind, cause = store.FailMachine, c
		if workspaceFault(c) {
			w.pauseNode(log, c.Error())
		} else {
			w.faults.add(c.Error())
		}
	}
	if kind == store.FailTransport && w.park(ctx, log, lease, cause) {
		return
	}
	if err := w.persist(w.stopCtx(), log, "release ticket", lease.Ticket.ID, func(ctx context.Context) error {
		_, err := w.d.Store.Fail(ctx, lease.Ticket.ID, lease.Token, store.Failure{Kind: kind, Reason: cause.Error(), Branch: branch, ResultDir: dir})
		return err
	}); err != nil {
		log.Error("release ticket", "err", err)
		return
	}
	log.Info("ticket released", "kind", kind, "reason", cause, "kept_branch", branch)
}

func (w *workerPool) fail(ctx context.Context, log *slog.Logger, lease store.Lease, f store.Failure) {
	var state store.State
	err := w.persist(w.stopCtx(), log, "record failure", lease.Ticket.ID, func(ctx context.Context) (err error) {
		state, err = w.d.Store.Fail(ctx, lease.Ticket.ID, lease.Token, f)
		return err
	})
	if err != nil {
		log.Error("record failure", "err", err)
		return
	}
	log.Warn("attempt failed", "state", state, "reason", f.Reason)
}

// heartbeat extends the lease until stopped. A lost lease or a cancel request cancels the
// attempt with that cause; the check runs every heartbeat (on the daemon's clock), well
// inside the 15 s promise. The first beat is armed before heartbeat returns.
func (w *workerPool) heartbeat(ctx context.Context, cancel context.CancelCauseFunc, log *slog.Logger, lease store.Lease) func() {
	done := make(chan struct{})
	stopped := make(chan struct{})
	tick := make(chan struct{}, 1)
	arm := func() func() bool {
		return w.d.clock().AfterFunc(w.cfg.Night.Heartbeat, func() {
			select {
			case tick <- struct{}{}:
			default:
			}
		})
	}
	disarm := arm()
	go func() {
		defer close(stopped)
		defer func() { disarm() }()
		failures := 0
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick:
				disarm = arm()
			}
			cancelReq, err := w.d.Store.Heartbeat(context.WithoutCancel(ctx), lease.Ticket.ID, lease.Token, w.cfg.Night.Lease)
			switch {
			case errors.Is(err, store.ErrLeaseLost):
				cancel(errLeaseLost)
				return
			case isStoreFault(err):
				// The database does not take writes: the attempt rides the outage out (the
				// promise of docs/operating.md); once it takes writes again the lease is extended
				// before anyone may claim, and a lost lease says so at the next beat.
				w.writeFailed(log, "heartbeat", lease.Ticket.ID, err)
			case err != nil:
				failures++
				log.Warn("heartbeat", "err", err, "failures", failures)
				if failures >= 3 {
					cancel(fmt.Errorf("%w: %v", errHeartbeatFailing, err))
					return
				}
			case cancelReq:
				log.Info("cancel requested: stopping the attempt")
				cancel(errCancelRequested)
				return
			default:
				failures = 0
				w.writeOK(ctx, log)
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}

// park keeps a ticket released too often for transport faults tonight out of the queue
// until the next night, so the queue moves on; it reports whether it parked the ticket.
func (w *workerPool) park(ctx context.Context, log *slog.Logger, lease store.Lease, cause error) bool {
	if w.runID == 0 || w.cfg.Night.MaxTransportReleases <= 0 {
		return false
	}
	n, err := w.d.Store.TransportReleases(ctx, lease.Ticket.ID, w.runID)
	if err != nil {
		log.Warn("count transport releases", "err", err)
		return false
	}
	if n < w.cfg.Night.MaxTransportReleases {
		return false
	}
	reason := fmt.Sprintf("parked %s: released %d times tonight for transport faults (night.max_transport_releases), last: %v",
		cmp.Or(w.parkNote, "until the next night"), n, cause)
	if _, err := w.d.Store.Park(ctx, lease.Ticket.ID, lease.Token, w.parkUntil, reason); err != nil {
		log.Error("park ticket", "err", err)
		return true
	}
	log.Warn("ticket parked", "until", w.parkUntil, "transport_releases", n, "reason", cause)
	return true
}

// stopCtx is w.stop, or a context that never ends.
func (w *workerPool) stopCtx() context.Context {
	if w.stop != nil {
		return w.stop
	}
	return context.Background()
}
