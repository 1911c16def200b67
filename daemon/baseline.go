package daemon

import (
	"context"
	"sync"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/worktree"
)

// repoFacts is what is computed once per repository and base commit: the checks at the base
// (the gate compares against them) and the file map (shared by every ticket's prompt).
type repoFacts struct {
	results []validate.Result
	repoMap string
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
	if ctx.Err() != nil {
		return f, context.Cause(ctx)
	}
	return f, nil
}
