package daemon

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/worktree"
)

// repoFacts is what is computed once per repository and base commit: the checks at the base
// (the gate compares against them) and the file map (shared by every ticket's prompt).
type repoFacts struct {
	results []validate.Result
	repoMap string
	flaky   []string // tests that failed at the base, then passed when re-run alone
}

// baselines computes repoFacts once per (repository, base commit), even when several workers
// ask at the same moment: the first computes, the others wait for its answer.
type baselines struct {
	checks pipeline.CheckRunner

	mu    sync.Mutex
	facts map[string]*baselineEntry
}

type baselineEntry struct {
	done  chan struct{}
	facts repoFacts
	err   error
}

func newBaselines(checks pipeline.CheckRunner) *baselines {
	return &baselines{checks: checks, facts: map[string]*baselineEntry{}}
}

// get returns the facts for the tree's base commit, computing them in tree (which must still
// be untouched at the base commit) if nobody has yet.
func (b *baselines) get(ctx context.Context, repo config.Repo, tree *worktree.Tree) (repoFacts, error) {
	key := tree.RepoPath + "@" + tree.BaseCommit
	b.mu.Lock()
	e, ok := b.facts[key]
	if !ok {
		e = &baselineEntry{done: make(chan struct{})}
		b.facts[key] = e
	}
	b.mu.Unlock()
	if ok {
		select {
		case <-e.done:
			return e.facts, e.err
		case <-ctx.Done():
			return repoFacts{}, context.Cause(ctx)
		}
	}
	e.facts, e.err = b.compute(ctx, repo, tree)
	if e.err != nil {
		// Let the next worker try again rather than caching a failure (it may be transient).
		b.mu.Lock()
		delete(b.facts, key)
		b.mu.Unlock()
	}
	close(e.done)
	return e.facts, e.err
}

func (b *baselines) compute(ctx context.Context, repo config.Repo, tree *worktree.Tree) (repoFacts, error) {
	var f repoFacts
	files, err := worktree.FilesAt(tree.RepoPath, tree.BaseCommit)
	if err != nil {
		return f, err
	}
	f.repoMap = pipeline.RepoMap(tree.Dir, files)
	f.results = b.checks.Run(ctx, tree.Dir, repo.Checks)
	// A test failing at the base is run once more alone: a flaky one must neither count as a
	// failure a fix has to make pass nor make a later flake look like a fix.
	f.results, f.flaky = pipeline.Rerun(ctx, b.checks, tree.Dir, repo.Checks, f.results, pipeline.FailingTests(f.results), 1)
	if ctx.Err() != nil {
		return f, context.Cause(ctx)
	}
	return f, nil
}

// preflighter is implemented by a check runner that can tell, before any run, whether a
// check's tool starts (*validate.Runner does).
type preflighter interface {
	Preflight(ctx context.Context, dir string, c validate.Check) error
}

// preflight makes a configured check whose tool is missing a start-up error naming the
// repository, the check and how to install the tool, instead of a check that fails at the
// base and so silently gates nothing.
func preflight(ctx context.Context, checks pipeline.CheckRunner, repos map[string]config.Repo) error {
	pf, ok := checks.(preflighter)
	if !ok {
		return nil
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(repos)) {
		r := repos[name]
		for _, c := range r.Checks {
			if err := pf.Preflight(ctx, r.Path, c); err != nil {
				errs = append(errs, fmt.Errorf("repos.%s: %w", name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// unhealthyRepos is the set of repositories whose baseline cannot gate fixes tonight; their
// tickets are not claimed. Safe for concurrent use.
type unhealthyRepos struct {
	mu    sync.Mutex
	names map[string]string // repo → one-line reason
}

func (u *unhealthyRepos) add(repo, reason string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, seen := u.names[repo]; seen {
		return false
	}
	if u.names == nil {
		u.names = map[string]string{}
	}
	u.names[repo] = reason
	return true
}

func (u *unhealthyRepos) list() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Sorted(maps.Keys(u.names))
}

func (u *unhealthyRepos) has(repo string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	_, ok := u.names[repo]
	return ok
}

// checkRepos computes, before any worker claims, the baseline of every repository that has
// open tickets, and marks unhealthy those whose base cannot gate a fix (see validate.Health):
// said once in the night's log with the failing command and its first error lines, and
// once as a note on each open ticket of the repository (ticketctl show, logs). No attempt
// is spent on them. The computed baselines are cached for the workers.
func (w *workerPool) checkRepos(ctx context.Context) {
	for _, name := range slices.Sorted(maps.Keys(w.cfg.Repos)) {
		repo := w.cfg.Repos[name]
		open, err := w.d.Store.List(ctx, store.Filter{States: []store.State{store.StateQueued, store.StateRunning}, Repo: name})
		if err != nil || len(open) == 0 || len(repo.Checks) == 0 {
			continue
		}
		tree, err := w.trees.Prepare(ctx, repo.Path, repo.BaseRef, fmt.Sprintf("ticketd/baseline-%s", worktree.BranchName(0, name)[len("ticketd/"):]))
		if err != nil {
			// The worker's own Prepare reports this per ticket, with the right failure kind.
			w.log.Warn("baseline worktree", "repo", name, "err", err)
			continue
		}
		facts, err := w.baselines.get(ctx, repo, tree)
		if rerr := w.trees.Remove(context.WithoutCancel(ctx), tree, false); rerr != nil {
			w.log.Warn("remove baseline worktree", "repo", name, "dir", tree.Dir, "err", rerr)
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			w.log.Warn("baseline checks", "repo", name, "err", err)
			continue
		}
		w.markUnhealthy(ctx, name, tree.BaseCommit, validate.Health(facts.results))
	}
}

// markUnhealthy records problems of a repository's baseline once per night.
func (w *workerPool) markUnhealthy(ctx context.Context, repo, base string, problems []validate.Problem) bool {
	if len(problems) == 0 {
		return false
	}
	var b strings.Builder
	fmt.Fprintf(&b, "repository %s is unhealthy at base %s: its tickets are not claimed until it is fixed (no attempt spent).", repo, short(base))
	for _, p := range problems {
		fmt.Fprintf(&b, "\n%s", p)
		for _, l := range p.Lines {
			fmt.Fprintf(&b, "\n    %s", l)
		}
	}
	text := b.String()
	if !w.unhealthy.add(repo, text) {
		return true
	}
	w.d.Store.SetPaused(w.unhealthy.list()) // claims skip its tickets from now on
	for _, p := range problems {
		w.log.Error("repository unhealthy: its tickets are not claimed tonight", "repo", repo, "base_commit", short(base),
			"check", p.Check, "command", strings.Join(p.Command, " "), "reason", p.Reason, "first_lines", strings.Join(p.Lines, "\n"))
	}
	open, err := w.d.Store.List(context.WithoutCancel(ctx), store.Filter{States: []store.State{store.StateQueued, store.StateRunning}, Repo: repo})
	if err != nil {
		w.log.Warn("list tickets of unhealthy repository", "repo", repo, "err", err)
	}
	for _, t := range open {
		if err := w.d.Store.AddNote(context.WithoutCancel(ctx), t.ID, "ticketd", text); err != nil {
			w.log.Warn("note unhealthy repository on ticket", "ticket", t.ID, "err", err)
		}
	}
	return true
}
