package validate

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"
)

// watchSize measures dirs every poll until ctx ends and returns why the check must stop as
// soon as their total size passes limit; "" when ctx ended first.
func watchSize(ctx context.Context, poll time.Duration, limit int64, dirs ...string) string {
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ""
		case <-t.C:
		}
		var total int64
		for _, d := range dirs {
			total += treeSize(ctx, d, limit-total)
		}
		if total > limit {
			return fmt.Sprintf("the worktree grew past its size limit during the check (more than %s with the check's /tmp, limit %s): the check was stopped and the attempt is abandoned; raise max_worktree_size in the config if the repository's checks legitimately need more",
				formatBytes(total), formatBytes(limit))
		}
	}
}

// treeSize adds up the apparent sizes of the files under dir, stopping early once it passes
// budget (nothing more is needed to know the limit is broken). Unreadable entries count as 0.
func treeSize(ctx context.Context, dir string, budget int64) int64 {
	var total int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if ctx.Err() != nil || total > budget {
			return filepath.SkipAll
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				total += fi.Size()
			}
		}
		return nil
	})
	return total
}

// formatBytes writes n in binary units, e.g. "1.0 GiB".
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
