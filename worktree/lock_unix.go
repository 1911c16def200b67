//go:build unix

package worktree

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockFileName is created in the repository's common git dir; it is never
// committed (it lives inside .git) and is harmless if left behind.
const lockFileName = "ticketd-worktree.lock"

// lockRepoFile takes an exclusive flock on the repository's lock file, so
// that two ticketd processes (a night running and `ticketd once`, say) do
// not interleave worktree add and prune on one repository. Releasing is
// closing the returned file.
func lockRepoFile(commonDir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(commonDir, lockFileName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open repository lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock repository %s: %w", commonDir, err)
	}
	return func() { f.Close() }, nil
}
