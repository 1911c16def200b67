package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/worktree"
)

// A night's fixes agree with each other (issue 35, docs/night.md). Before a fix is
// published (its ticket done, its branch pushed, its pull request opened), it is checked
// against the fixes already published tonight for the same repository and base commit:
// it must apply cleanly on top of them, and the checks must pass with all of them as the
// gate asks of one fix (no failure the base did not have). A fix that does not is never
// published: its ticket is escalated "conflicts with #N", the fix kept on its branch for a
// human. So no two branches published in one night fail together.
//
// Publishing is one repository at a time: the check and the ticket's move to done are one
// turn, so two fixes finished at once are checked against each other too.

// publishedFix is a fix published tonight: its ticket and the branch that holds it.
type publishedFix struct {
	Ticket int64
	Branch string
}

// pendingFix is a fix about to be published: committed on Branch, made at Base.
type pendingFix struct {
	Ticket   int64
	Branch   string
	Base     string // the base commit it was made at
	RepoPath string
	Repo     string // the repository's name in the config
	facts    repoFacts
	// held is the selection of the tests that decided its gate when the fix is to be held
	// for the night's whole suite (nightsuite.go), nil when it is published at once.
	held *pipeline.Selection
}

// disagreement says why a fix may not be published beside earlier ones.
type disagreement struct {
	With []int64 // the tickets whose published fixes it conflicts with
	Why  string
}

func (d *disagreement) Error() string {
	ids := make([]string, len(d.With))
	for i, id := range d.With {
		ids[i] = fmt.Sprintf("#%d", id)
	}
	return fmt.Sprintf("conflicts with %s, published tonight for the same repository and base: %s; the fix is kept on its branch for a human",
		strings.Join(ids, ", "), d.Why)
}

// fixCheck is one check a fix passes before it is published, given the fixes published
// tonight for its repository and base (oldest first, never empty). nil: it agrees; a
// *disagreement: it does not; any other error: the check could not be run (the machine's
// fault, never the ticket's). The night's whole-suite run (issue 37) is one more.
type fixCheck interface {
	checkFix(ctx context.Context, log *slog.Logger, fix pendingFix, earlier []publishedFix) error
}

// nightFixes are the fixes published tonight, per repository and base, and the checks a
// new one must pass beside them.
type nightFixes struct {
	checks []fixCheck

	mu    sync.Mutex
	turns map[string]*sync.Mutex    // per repository: one publish at a time
	fixes map[string][]publishedFix // per repository@base, in the order published
}

func newNightFixes(checks ...fixCheck) *nightFixes {
	return &nightFixes{checks: checks, turns: map[string]*sync.Mutex{}, fixes: map[string][]publishedFix{}}
}

// turn waits for the repository's turn to publish; the returned func ends it.
func (n *nightFixes) turn(repoPath string) func() {
	n.mu.Lock()
	m, ok := n.turns[repoPath]
	if !ok {
		m = &sync.Mutex{}
		n.turns[repoPath] = m
	}
	n.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// earlier are the fixes published tonight on fix's repository and base.
func (n *nightFixes) earlier(fix pendingFix) []publishedFix {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]publishedFix(nil), n.fixes[fix.RepoPath+"@"+fix.Base]...)
}

// published records fix as published.
func (n *nightFixes) published(fix pendingFix) {
	n.mu.Lock()
	defer n.mu.Unlock()
	key := fix.RepoPath + "@" + fix.Base
	n.fixes[key] = append(n.fixes[key], publishedFix{Ticket: fix.Ticket, Branch: fix.Branch})
}

// agree runs the checks of fix against tonight's earlier fixes (none: it agrees).
func (n *nightFixes) agree(ctx context.Context, log *slog.Logger, fix pendingFix) error {
	earlier := n.earlier(fix)
	if len(earlier) == 0 {
		return nil
	}
	for _, c := range n.checks {
		if err := c.checkFix(ctx, log, fix, earlier); err != nil {
			return err
		}
	}
	return nil
}

// combinedChecks is the agreement check itself: in a scratch worktree at the base, the
// earlier fixes, then this one, applied in turn; then the repository's checks, judged
// against the base's results as the gate judges one fix.
//
// Where the fix and every earlier one wait for the night's whole suite (suite), which runs
// over all of them together before any is pushed, the checks run as the selected gate runs
// them (pipeline.RunReached): the tests the stacked changes reach, the fixes' new tests with
// them. A whole suite per fix published would undo what selection saves (issue 37): with
// three fixes to one repository in a night, two whole-suite runs, each while the
// repository's other fixes wait for their turn. Stacked fixes that fail only outside what
// they reach are left to the whole suite, which refuses them all (judgeGroup).
type combinedChecks struct {
	trees  *worktree.Manager
	checks pipeline.CheckRunner
	suite  *nightSuite // nil: every agreement check runs the whole suite
}

func (c combinedChecks) checkFix(ctx context.Context, log *slog.Logger, fix pendingFix, earlier []publishedFix) error {
	tree, err := c.trees.Prepare(ctx, fix.RepoPath, fix.Base, fmt.Sprintf("ticketd/agree-%d", fix.Ticket))
	if err != nil {
		return fmt.Errorf("%w: prepare the worktree of the agreement check: %w", ErrMachineFault, err)
	}
	defer func() {
		if err := c.trees.Remove(context.WithoutCancel(ctx), tree, false); err != nil {
			log.Warn("remove the agreement check's worktree", "dir", tree.Dir, "err", err)
		}
	}()
	var with []int64
	for _, e := range earlier {
		with = append(with, e.Ticket)
		if err := tree.ApplyBranch(ctx, e.Branch); err != nil {
			// Published fixes agreed when published: one that no longer applies is a fact
			// about this machine's clone, not about this fix.
			return fmt.Errorf("%w: stack #%d's published fix: %w", ErrMachineFault, e.Ticket, err)
		}
	}
	if err := tree.ApplyBranch(ctx, fix.Branch); errors.Is(err, worktree.ErrDoesNotApply) {
		return &disagreement{With: overlapping(ctx, fix, earlier), Why: "its change does not apply on top of theirs"}
	} else if err != nil {
		return fmt.Errorf("%w: %w", ErrMachineFault, err)
	}
	run := c.runner(ctx, log, tree, fix, earlier)
	g := pipeline.Compare(fix.facts.results, run())
	if !g.Passed && !g.Cancelled {
		// A flaky test must not keep a good fix back: the checks run once more, and a pass
		// then is a pass (the gate, too, re-runs what failed before it refuses).
		log.Info("the agreement check failed; running it once more", "new", clipped(g.New, 3))
		g = pipeline.Compare(fix.facts.results, run())
	}
	if g.Cancelled {
		return fmt.Errorf("the agreement check's checks were cut short: %w", context.Cause(ctx))
	}
	if !g.Passed {
		why := "the checks fail with all of them applied"
		if len(g.New) > 0 {
			why += ": " + strings.Join(clipped(g.New, 3), "; ")
		}
		return &disagreement{With: with, Why: why}
	}
	log.Info("fix agrees with tonight's published fixes", "with", with)
	return nil
}

// runner is how the agreement check runs the checks on tree, where fix is stacked on
// earlier: the tests the stack reaches when all of them wait for the night's whole suite,
// else the whole suite.
func (c combinedChecks) runner(ctx context.Context, log *slog.Logger, tree *worktree.Tree, fix pendingFix, earlier []publishedFix) func() []validate.Result {
	whole := func() []validate.Result { return c.checks.Run(ctx, tree.Dir, fix.facts.checks) }
	if fix.held == nil || !c.suite.holdsAll(fix.Repo, fix.Base, earlier) {
		return whole
	}
	changed, err := tree.Changed(ctx)
	if err != nil {
		log.Warn("the agreement check cannot list the stacked changes: running the whole suite", "err", err)
		return whole
	}
	return func() []validate.Result {
		res, sel := pipeline.RunReached(ctx, c.checks, tree.Dir, fix.facts.tests, fix.facts.imports, fix.facts.checks, fix.facts.results, changed, fix.held.Targets)
		if sel.Whole != "" {
			log.Info("agreement check: the whole suite ran", "why", sel.Whole)
		} else {
			log.Info("agreement check: the tests the stacked fixes reach ran; the night's whole suite runs over them before any is pushed", "test_files", len(sel.Files))
		}
		return res
	}
}

// overlapping are the earlier fixes that change a path fix changes (all of them when
// that cannot be read): what a change that does not apply conflicts with.
func overlapping(ctx context.Context, fix pendingFix, earlier []publishedFix) []int64 {
	mine, err := worktree.BranchChanges(ctx, fix.RepoPath, fix.Base, fix.Branch)
	var out, all []int64
	for _, e := range earlier {
		all = append(all, e.Ticket)
		theirs, terr := worktree.BranchChanges(ctx, fix.RepoPath, fix.Base, e.Branch)
		if err != nil || terr != nil {
			continue
		}
		for _, p := range mine {
			if slices.Contains(theirs, p) {
				out = append(out, e.Ticket)
				break
			}
		}
	}
	if len(out) == 0 {
		return all
	}
	return out
}

// clipped keeps the first n lines, each on one line.
func clipped(xs []string, n int) []string {
	out := make([]string, 0, min(n, len(xs)))
	for i, x := range xs {
		if i == n {
			out = append(out, fmt.Sprintf("and %d more", len(xs)-n))
			break
		}
		out = append(out, oneLine(x))
	}
	return out
}

// pending is the attempt's committed fix, as the agreement check reads it.
func (a *attemptRun) pending() pendingFix {
	return pendingFix{Ticket: a.lease.Ticket.ID, Branch: a.tree.Branch, Base: a.tree.BaseCommit, RepoPath: a.tree.RepoPath, Repo: a.lease.Ticket.Repo, facts: a.facts}
}
