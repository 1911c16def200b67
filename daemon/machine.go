package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/worktree"
)

// errWorktreeGone stops an attempt whose worktree vanished under it: every tool call after
// that fails for the machine's reason, and the model would be charged for it.
var errWorktreeGone = errors.New("the attempt's worktree vanished")

// treeWatchEvery is how often a running attempt's worktree is checked.
const treeWatchEvery = time.Second

// watchTree cancels the attempt with errWorktreeGone as soon as its worktree folder is gone.
// It ends with ctx.
func watchTree(ctx context.Context, cancel context.CancelCauseFunc, tree *worktree.Tree) {
	go func() {
		t := time.NewTicker(treeWatchEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if _, err := os.Stat(tree.Dir); errors.Is(err, os.ErrNotExist) {
				cancel(fmt.Errorf("%w: %s is gone (removed by hand or by another process?)", errWorktreeGone, tree.Dir))
				return
			}
		}
	}()
}

// treeGone says why an attempt's ground vanished under it (its worktree folder, or the
// repository's base ref), "" when neither did.
func treeGone(tree *worktree.Tree, name string, repo config.Repo) string {
	if _, err := os.Stat(tree.Dir); errors.Is(err, os.ErrNotExist) {
		return fmt.Sprintf("the attempt's worktree %s vanished during the attempt", tree.Dir)
	}
	if reason := baseCheck(name, repo); reason != "" {
		return "during the attempt: " + reason
	}
	return ""
}

// pauseRepo stops claims of a repository for the rest of the night, as a failed start-up
// check does: said once in the log and on each of its open tickets (as failed during the
// night); the next night's start-up check decides whether it runs again.
func (w *workerPool) pauseRepo(ctx context.Context, name, reason string) {
	if w.unhealthy.has(name) {
		return
	}
	w.reportBadRepo(ctx, name, nightFailed, reason)
	w.setPaused()
}
