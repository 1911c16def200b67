package daemon

import (
	"context"
	"fmt"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/worktree"
)

// A round (store.Revise) goes on from a done ticket's fix: its attempt works in a tree whose
// scratch branch (workBranch) starts at the fix branch's head, with the base commit still
// the base, so the gate judges the whole fix as before. The fix branch itself moves only
// when the round ends done (moveFixBranch): a failed or stopped round never touches what
// the pull request shows.

// prepareTree makes the attempt's worktree: from the base, or for a round from the head of
// the fix branch it goes on from.
func prepareTree(ctx context.Context, trees *worktree.Manager, repo config.Repo, t store.Ticket, round *store.Round) (*worktree.Tree, error) {
	if round == nil {
		return trees.Prepare(ctx, repo.Path, repo.BaseRef, workBranch(t))
	}
	return trees.PrepareFrom(ctx, repo.Path, repo.BaseRef, workBranch(t), round.Branch)
}

// openRound reads the ticket's open round; nil when it has none.
func openRound(ctx context.Context, st *store.Store, id int64) (*store.Round, error) {
	r, ok, err := st.OpenRound(ctx, id)
	if err != nil || !ok {
		return nil, err
	}
	return &r, nil
}

// seedRound makes the earlier fix part of the round's change: the diff, the checks' tree and
// the commit hold the whole fix, and the maker's edits go on top of it.
func seedRound(ctx context.Context, a *attemptRun) error {
	if a.round == nil {
		return nil
	}
	prior, err := a.tree.ChangesSince(ctx)
	if err != nil {
		return fmt.Errorf("read the fix round %d goes on from: %w", a.round.N, err)
	}
	a.fix.prior = prior
	return nil
}

// pipelineRound is what the maker is told of the round.
func pipelineRound(r *store.Round) *pipeline.Round {
	if r == nil {
		return nil
	}
	out := &pipeline.Round{N: r.N, Source: string(r.Source), Note: r.Note}
	for _, th := range r.Threads {
		out.Threads = append(out.Threads, pipeline.RoundThread{ID: th.ID, Author: th.Author, Path: th.Path, Line: th.Line, Body: th.Body})
	}
	return out
}

// fixBranch is where the attempt's fix lives once done: the round's fix branch, or the
// attempt's own.
func (a *attemptRun) fixBranch() string {
	if a.round != nil {
		return a.round.Branch
	}
	return a.tree.Branch
}

// moveFixBranch points a round's fix branch at the round's commit: one commit on top of the
// fix the pull request shows.
func moveFixBranch(ctx context.Context, a *attemptRun) error {
	if a.round == nil {
		return nil
	}
	if err := a.tree.SaveOver(ctx, a.round.Branch); err != nil {
		return fmt.Errorf("move fix branch %s to round %d's commit: %w", a.round.Branch, a.round.N, err)
	}
	return nil
}
