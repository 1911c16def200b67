package daemon

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ticketd/ticketd/worktree"
)

// processStart is when this process started: a git lock file made before it cannot be one
// of this process's git commands.
var processStart = time.Now()

// removeStaleLocks removes, at the start of a night, the git lock files that git processes
// killed with an earlier ticketd left in ticketd's own branches of the repository name (see
// worktree.Manager.RemoveStaleLocks: older than this process, held by no process, no git
// running there). Each removal is a warning naming the file and counts in
// ticketd_stale_git_locks_removed_total; a lock it leaves is a warning saying why, and an
// attempt that meets it pauses the repository for the night as before, naming the file.
// The caller holds the instance lock.
func (d *Daemon) removeStaleLocks(ctx context.Context, log *slog.Logger, trees *worktree.Manager, name, path string) {
	found, err := trees.RemoveStaleLocks(ctx, path, processStart)
	if err != nil {
		log.Warn("look for git lock files left in ticketd's branches", "repo", name, "err", err)
		return
	}
	for _, l := range found {
		if l.Removed {
			d.staleLocks.Add(1)
			log.Warn("removed a git lock file that a git process killed with an earlier ticketd left in ticketd's branches", "repo", name, "file", l.Path)
			continue
		}
		log.Warn("a git lock file in ticketd's branches is left alone: if no git process runs in that repository, remove the file", "repo", name, "file", l.Path, "why", l.Kept)
	}
}

// Collectors are the daemon's own live figures for /metrics, beside the store's.
func (d *Daemon) Collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "ticketd_stale_git_locks_removed_total",
			Help: "Git lock files that git processes killed with an earlier ticketd left in its own branches (refs/heads/ticketd/), removed at a night's start by this process."},
			func() float64 { return float64(d.staleLocks.Load()) }),
	}
}
