package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/daemon/github"
	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/worktree"
)

// ciBlamer tells a red pull request check the fix caused from one it did not: each failing
// test is run alone at the base commit (in the night's sandbox, as the baseline runs), and
// those that pass there are run again with the fix. Failing at the base: the base's break.
// Passing with the fix: flaky. Passing at the base and failing with the fix: the fix's.
type ciBlamer struct {
	trees  *worktree.Manager
	checks pipeline.CheckRunner
	repos  map[string]config.Repo
	// env readies a repository's environment in a tree (the night's repoEnv); nil: the
	// repository as configured.
	env func(ctx context.Context, name string, repo config.Repo, tree *worktree.Tree) (config.Repo, error)
	log *slog.Logger
}

// ciReruns is how many times a test failing on the pull request is run with the fix.
const ciReruns = 2

var _ github.BlameFunc = (*ciBlamer)(nil).blame

func (b *ciBlamer) blame(ctx context.Context, t store.Ticket, head string, tests []string) (github.Blame, error) {
	repo, ok := b.repos[t.Repo]
	if !ok {
		return github.Blame{}, fmt.Errorf("repo %q is not configured", t.Repo)
	}
	var out github.Blame
	var ev strings.Builder
	atBase, err := b.runEach(ctx, t, repo, "", tests, 1, &ev, "base")
	if err != nil {
		return out, err
	}
	var rest []string
	for _, id := range tests {
		if atBase[id] {
			rest = append(rest, id)
		} else {
			out.AtBase = append(out.AtBase, id)
		}
	}
	if len(rest) > 0 {
		withFix, err := b.runEach(ctx, t, repo, head, rest, ciReruns, &ev, "fix "+short(head))
		if err != nil {
			return out, err
		}
		for _, id := range rest {
			if withFix[id] {
				out.Flaky = append(out.Flaky, id)
			} else {
				out.Caused = append(out.Caused, id)
			}
		}
	}
	out.Evidence = strings.TrimSpace(ev.String())
	return out, nil
}

// runEach runs each test alone, up to times, in a tree at the base (start "") or at start,
// and reports those that passed; the evidence gets one line per run.
func (b *ciBlamer) runEach(ctx context.Context, t store.Ticket, repo config.Repo, start string, tests []string, times int, ev *strings.Builder, where string) (map[string]bool, error) {
	branch := fmt.Sprintf("ticketd/%d-ci-base", t.ID)
	tree, err := b.trees.Prepare(ctx, repo.Path, repo.BaseRef, branch)
	if start != "" {
		branch = fmt.Sprintf("ticketd/%d-ci-fix", t.ID)
		tree, err = b.trees.PrepareFrom(ctx, repo.Path, repo.BaseRef, branch, start)
	}
	if err != nil {
		return nil, fmt.Errorf("prepare a tree at the %s: %w", where, err)
	}
	defer func() {
		if err := b.trees.Remove(context.WithoutCancel(ctx), tree, false); err != nil {
			b.log.Warn("remove the red check's tree", "dir", tree.Dir, "err", err)
		}
	}()
	if b.env != nil {
		if repo, err = b.env(ctx, t.Repo, repo, tree); err != nil {
			return nil, fmt.Errorf("environment at the %s: %w", where, err)
		}
	}
	check, ok := testCheck(repo.Checks)
	if !ok {
		return nil, fmt.Errorf("repo %q has no pytest or unittest check to re-run the tests with", t.Repo)
	}
	passed := map[string]bool{}
	for _, id := range tests {
		for range times {
			alone := check
			alone.Only = []string{id}
			res := b.checks.Run(ctx, tree.Dir, []validate.Check{alone})
			ok := len(res) == 1 && res[0].Passed && res[0].Tests > 0
			summary := "no result"
			if len(res) == 1 {
				summary = res[0].Summary
			}
			fmt.Fprintf(ev, "%s at the %s: %s\n", id, where, summary)
			if ok {
				passed[id] = true
				break
			}
		}
	}
	return passed, ctx.Err()
}

// testCheck is the repository's first pytest or unittest check.
func testCheck(checks []validate.Check) (validate.Check, bool) {
	for _, c := range checks {
		if c.Kind == validate.KindPytest || c.Kind == validate.KindUnittest {
			return c, true
		}
	}
	return validate.Check{}, false
}

// blameRedChecks gives the GitHub watch of pull request checks this night's sandbox, so a
// red check's failing tests are re-run at the base.
func (d *Daemon) blameRedChecks(log *slog.Logger, trees *worktree.Manager, checks pipeline.CheckRunner, w *workerPool) {
	if d.GitHub == nil || d.GitHub.Publisher == nil {
		return
	}
	b := &ciBlamer{trees: trees, checks: checks, repos: w.cfg.Repos, env: w.envs.repoEnv, log: log.With("component", "ci_blame")}
	d.GitHub.Publisher.Blame = b.blame
}
