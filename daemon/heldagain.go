package daemon

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/worktree"
)

// A fix held for the night's whole suite (nightsuite.go) is done and on its branch, but
// published only by the suite's verdict at the night's end. A night that never got there (the
// process killed, the machine rebooted) left it done, unpublished and unjudged, and no later
// night looked at it again: each start only warned that a human should push it or requeue
// the ticket. Now the next night's start holds it again, for tonight's whole suite, at the
// base it was made on, so its verdict (push, or back to its ticket) comes as it would have.

// reholdUnjudged holds again in suite the fixes of this node, done within
// pushLeftoversWithin, that an earlier night held and never judged.
func (w *workerPool) reholdUnjudged(ctx context.Context, log *slog.Logger, suite *nightSuite) {
	done, err := w.d.Store.List(ctx, store.Filter{States: []store.State{store.StateDone}, Limit: 500})
	if err != nil {
		log.Warn("list done tickets whose fix waits for a whole suite", "err", err)
		return
	}
	since := w.d.now().Add(-pushLeftoversWithin)
	atBase := map[string]heldBase{} // repository name + " " + base commit
	for _, t := range done {
		repo, ok := w.cfg.Repos[t.Repo]
		if !ok || t.Branch == "" || t.LeaseNode != w.d.Store.Node() || t.FinishedAt.Before(since) {
			continue
		}
		evs, err := w.d.Store.Events(ctx, t.ID)
		if err != nil {
			log.Warn("events of a done ticket", "ticket", t.ID, "err", err)
			continue
		}
		if !heldUnjudged(evs) {
			continue
		}
		tlog := log.With("ticket", t.ID, "branch", t.Branch)
		base, err := worktree.ForkPoint(ctx, repo.Path, t.Branch, repo.BaseRef)
		if err == nil {
			var head string
			if head, err = worktree.BranchHead(ctx, repo.Path, t.Branch); err == nil && head == base {
				tlog.Info("a fix held for a whole suite that never judged it is already in the base: nothing to publish")
				continue
			}
		}
		key := t.Repo + " " + base
		b, ok := atBase[key]
		if err == nil && !ok {
			b, err = w.baseAt(ctx, t.Repo, base)
			if err == nil {
				atBase[key] = b
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			tlog.Warn("a fix held for a whole suite that never judged it cannot be held again: not published; requeue the ticket or push its branch by hand", "err", err)
			continue
		}
		suite.holdFix(heldFix{id: t.ID, branch: t.Branch, name: t.Repo, repo: b.repo, base: base, facts: b.facts})
		tlog.Info("a fix held for a whole suite that never judged it (its night stopped first) is held for tonight's", "base_commit", short(base))
		if err := w.d.Store.AddNote(ctx, t.ID, w.d.Store.Node(), HeldNote+"held again: the night that held it stopped before its whole suite ran"); err != nil {
			tlog.Warn("note the fix held again", "err", err)
		}
	}
}

// heldBase is a repository's configuration with its environment, and its baseline, at one
// base commit: what a whole suite over fixes made at that base runs with.
type heldBase struct {
	repo  config.Repo
	facts repoFacts
}

// baseAt reads the baseline of repository name at commit base (stored, or computed in a
// worktree of its own as a night's baseline is).
func (w *workerPool) baseAt(ctx context.Context, name, base string) (heldBase, error) {
	repo := w.cfg.Repos[name]
	// Not the night's baseline branch: that one may be checked out beside this at once.
	tree, err := w.trees.Prepare(ctx, repo.Path, base, fmt.Sprintf("ticketd/held-baseline-%s", worktree.BranchName(0, name)[len("ticketd/"):]))
	if err != nil {
		return heldBase{}, fmt.Errorf("baseline worktree of %s at %s: %w", name, short(base), err)
	}
	defer func() {
		if rerr := w.trees.Remove(context.WithoutCancel(ctx), tree, false); rerr != nil {
			w.log.Warn("remove baseline worktree", "repo", name, "dir", tree.Dir, "err", rerr)
		}
	}()
	if repo, err = w.envs.repoEnv(ctx, name, repo, tree); err != nil {
		return heldBase{}, fmt.Errorf("environment of %s: %w", name, err)
	}
	facts, err := w.baselines.get(ctx, repo, tree)
	if err != nil {
		return heldBase{}, fmt.Errorf("baseline of %s at %s: %w", name, short(base), err)
	}
	return heldBase{repo: repo, facts: facts}, nil
}
