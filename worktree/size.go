package worktree

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// largestShown is how many of the largest files the error of a too large checkout names.
const largestShown = 3

// checkCheckoutSize refuses commit, before anything is written, when its files (blobs, as
// git ls-tree -r -l sizes them; submodules are not checked out) add up to more than
// m.MaxCheckout. A commit found small enough once is not listed again.
func (m *Manager) checkCheckoutSize(ctx context.Context, repo repoDirs, commit string) error {
	limit := m.MaxCheckout
	if limit <= 0 {
		return nil
	}
	m.mu.Lock()
	fits := m.fits[commit]
	m.mu.Unlock()
	if fits {
		return nil
	}
	out, err := repo.git(ctx, nil, "ls-tree", "-r", "-l", "-z", "--full-tree", commit)
	if err != nil {
		return fmt.Errorf("prepare worktree of %s: list the files of %s: %w", repo.WorkTree, short(commit), err)
	}
	type file struct {
		path string
		size int64
	}
	var total int64
	var n int
	var largest []file // the largestShown largest, largest first: a big tree is not kept whole
	for _, entry := range strings.Split(out, "\x00") {
		// <mode> SP <type> SP <object> SP+ <size> TAB <path>
		meta, path, ok := strings.Cut(entry, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 4 || f[1] != "blob" {
			continue
		}
		size, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			continue
		}
		total += size
		n++
		if len(largest) < largestShown || size > largest[len(largest)-1].size {
			i, _ := slices.BinarySearchFunc(largest, size, func(f file, s int64) int { return cmp.Compare(s, f.size) })
			largest = slices.Insert(largest, i, file{path, size})
			largest = largest[:min(len(largest), largestShown)]
		}
	}
	if total <= limit {
		m.mu.Lock()
		if m.fits == nil {
			m.fits = map[string]bool{}
		}
		m.fits[commit] = true
		m.mu.Unlock()
		return nil
	}
	var named []string
	for _, f := range largest {
		named = append(named, fmt.Sprintf("%s (%s)", f.path, formatBytes(f.size)))
	}
	return fmt.Errorf("prepare worktree of %s at %s: its %d files add up to %s, more than the %s a worktree may hold (max_worktree_size): %w; the largest: %s; nothing was checked out: remove such files from the base branch (or keep them out of the repository, e.g. with Git LFS), or raise max_worktree_size in the config if the checks need them",
		repo.WorkTree, short(commit), n, formatBytes(total), formatBytes(limit), ErrCheckoutTooLarge, strings.Join(named, ", "))
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
