package daemon

import (
	"context"
	"io/fs"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/pipeline/tools"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/worktree"
)

// fixTree is an attempt's worktree with the maker's view of it. The fix is the files the
// maker's tools wrote and nothing else: the checks run in the same working copy, and what
// they leave there (a report, a cache, a copied secret, an edited tracked file) must never
// reach a branch, a patch or a pull request.
type fixTree struct {
	*worktree.Tree
	ws   *tools.Workspace
	left *leftSet // what the checks wrote, gathered before each restore
	// dirty is set while a check may have left files no clean has removed yet: between the
	// maker's tools (which write only the fix) no clean is needed.
	dirty *atomic.Bool
	// prior is the fix a round goes on from (nil otherwise): part of the change under the
	// maker's writes.
	prior []worktree.Change
}

// leftSet gathers paths, each once. A check may leave tens of thousands of files (a
// virtualenv, node_modules, a build tree), and add runs after every check: a set keeps it
// linear. The zero value is ready.
type leftSet struct {
	mu    sync.Mutex
	paths map[string]struct{}
}

func (l *leftSet) add(paths []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.paths == nil {
		l.paths = make(map[string]struct{}, len(paths))
	}
	for _, p := range paths {
		l.paths[p] = struct{}{}
	}
}

// list returns the paths gathered, sorted.
func (l *leftSet) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Sorted(maps.Keys(l.paths))
}

func newFixTree(tree *worktree.Tree, ws *tools.Workspace) fixTree {
	return fixTree{Tree: tree, ws: ws, left: &leftSet{}, dirty: &atomic.Bool{}}
}

// changes are the files the tools wrote, as last written.
func (f fixTree) changes() []worktree.Change {
	written := f.ws.Written()
	out := make([]worktree.Change, 0, len(f.prior)+len(written))
	for _, p := range f.prior {
		if !slices.ContainsFunc(written, func(w tools.Written) bool { return w.Path == p.Path }) {
			out = append(out, p)
		}
	}
	for _, w := range written {
		out = append(out, worktree.Change{Path: w.Path, Data: w.Data, Executable: w.Mode&fs.FileMode(0o111) != 0})
	}
	return out
}

// diff is the patch of the maker's changes against the base commit.
func (f fixTree) diff(ctx context.Context) (string, error) {
	return f.DiffChanges(ctx, f.changes())
}

// commit commits the maker's changes on the tree's branch.
func (f fixTree) commit(ctx context.Context, message string) (string, error) {
	return f.CommitChanges(ctx, message, f.changes())
}

// toCheckoutForm rewrites each file the tools wrote whose bytes a checkout of the fix's
// commit would not give back (the repository's line-ending and encoding rules,
// worktree.Tree.CheckoutForms) to what that checkout gives: the checks run on what the
// branch will hold.
func (f fixTree) toCheckoutForm(ctx context.Context) error {
	var written []worktree.Change
	for _, w := range f.ws.Written() {
		written = append(written, worktree.Change{Path: w.Path, Data: w.Data})
	}
	forms, err := f.CheckoutForms(ctx, written)
	if err != nil {
		return err
	}
	for _, p := range slices.Sorted(maps.Keys(forms)) {
		if err := f.ws.Rewrite(p, forms[p]); err != nil {
			return err
		}
	}
	return nil
}

// leftovers lists what the checks wrote that the fix leaves out, over the whole attempt.
func (f fixTree) leftovers(ctx context.Context) ([]string, error) {
	now, err := f.Leftovers(ctx, f.changes())
	f.left.add(now)
	return f.left.list(), err
}

// fixGuard runs a night's checks and, in the worktree of a running attempt, runs them one at
// a time, each from exactly the maker's tree: before each check every untracked file that no
// tool wrote is removed, ignored ones included (worktree.Tree.Clean), and after it what it
// wrote in tracked or maker's files is undone (Snapshot before, Undo after), the paths noted
// for the report. What a check writes — a cache, build output, a planted pytest.pyc — never
// reaches the next check, the evidence runs, the maker's next read (and through an edit, its
// fix), or the branch.
type fixGuard struct {
	inner pipeline.CheckRunner
	log   *slog.Logger

	mu    sync.Mutex
	trees map[string]fixTree
}

var _ pipeline.CheckRunner = (*fixGuard)(nil)

func newFixGuard(inner pipeline.CheckRunner, log *slog.Logger) *fixGuard {
	return &fixGuard{inner: inner, log: log, trees: map[string]fixTree{}}
}

// track guards dir's tree until the returned function is called.
func (g *fixGuard) track(f fixTree) func() {
	g.mu.Lock()
	g.trees[f.Dir] = f
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		delete(g.trees, f.Dir)
		g.mu.Unlock()
	}
}

// Run runs the checks and undoes what they wrote in a tracked tree. A cancelled run is not
// undone: the attempt is ending, and its fix is built from the maker's changes anyway.
func (g *fixGuard) Run(ctx context.Context, dir string, checks []validate.Check) []validate.Result {
	g.mu.Lock()
	f, ok := g.trees[dir]
	g.mu.Unlock()
	if !ok {
		return g.inner.Run(ctx, dir, checks)
	}
	res := make([]validate.Result, 0, len(checks))
	// One snapshot serves every check of the run: an Undo that went through puts the tree
	// back to it, and the maker's tools do not write while the checks run. Each snapshot is
	// a walk of the whole worktree (git status), a cost that grows with the repository.
	var snap *worktree.Snapshot
	if err := f.toCheckoutForm(ctx); err != nil && ctx.Err() == nil {
		// The checks would judge bytes the branch may not hold: none runs.
		for _, c := range checks {
			res = append(res, validate.Result{Name: c.Name, Kind: c.Kind, ExitCode: -1, Tests: -1,
				Summary: "not run: " + err.Error(), Abort: "the maker's files could not be put in the form a checkout gives: " + err.Error()})
		}
		return res
	}
	for _, c := range checks {
		if ctx.Err() != nil {
			return append(res, g.inner.Run(ctx, dir, []validate.Check{c})...) // reported as not run
		}
		// A check never starts beside what an earlier one left (the tree is dirty after a
		// check until a clean; the maker's tools write only the fix): else it is not run.
		if f.dirty.Load() {
			if err := g.clean(ctx, f); err != nil {
				res = append(res, validate.Result{Name: c.Name, Kind: c.Kind, ExitCode: -1, Tests: -1,
					Summary: "not run: " + err.Error(), Abort: "the worktree could not be cleaned between checks: " + err.Error()})
				continue
			}
		}
		if snap == nil {
			var err error
			if snap, err = f.Snapshot(ctx); err != nil && ctx.Err() == nil {
				g.log.Warn("snapshot the worktree before the checks", "dir", dir, "err", err)
			}
		}
		f.dirty.Store(true)
		res = append(res, g.inner.Run(ctx, dir, []validate.Check{c})...)
		if snap != nil && ctx.Err() == nil {
			put, err := f.Undo(ctx, snap)
			f.left.add(put)
			if err != nil && ctx.Err() == nil {
				g.log.Warn("undo what the checks wrote in the worktree", "dir", dir, "err", err)
				snap = nil // the tree is not the snapshot's: the next check takes its own
			}
		}
	}
	if ctx.Err() == nil {
		if err := g.clean(ctx, f); err != nil {
			g.log.Warn("clean the worktree after the checks", "dir", dir, "err", err)
		}
	}
	return res
}

// clean removes what earlier checks left in f's worktree besides the maker's files, noting
// the paths for the report.
func (g *fixGuard) clean(ctx context.Context, f fixTree) error {
	var keep []string
	for _, w := range f.ws.Written() {
		keep = append(keep, w.Path)
	}
	removed, err := f.Clean(ctx, keep)
	f.left.add(removed)
	if err == nil {
		f.dirty.Store(false)
	}
	return err
}
