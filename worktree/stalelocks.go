package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// OwnRefs is the namespace of the branches ticketd makes (refs/heads/ticketd/...): no one
// else writes there, so a lock file in it is a git process of ticketd's.
const OwnRefs = "refs/heads/ticketd/"

// StaleLock is a git lock file RemoveStaleLocks found in ticketd's own branches.
type StaleLock struct {
	Path    string
	Removed bool
	// Kept says why it was left, when it was not removed.
	Kept string
}

// RemoveStaleLocks removes the lock files (refs/heads/ticketd/**.lock) that git processes
// killed with an earlier ticketd left in the repository at repoPath, and reports every lock
// file it found there. git never removes a lock it did not make, and one left on a branch
// refuses every later update of it (ErrLocked), which pauses the repository for the night.
// A git killed at a random moment can leave one (see ownProcessGroup), and so can the OOM
// killer or a stop's SIGKILL of what was left of ticketd's processes.
//
// Call it at start-up only, holding the instance lock: no other ticketd works with this
// workspace and database then, and none of this process's git has run on the repository
// yet. A lock is removed only when all of these hold:
//   - it is in ticketd's own namespace: the user's refs, packed-refs and the main index are
//     never touched (their lock stays the operator's, as ErrLocked says);
//   - it was last modified before started (this process's start): a lock made since is a
//     live process's;
//   - no process on this machine holds it open (/proc/*/fd);
//   - no git process runs in the repository, in ticketd's worktrees or with the repository
//     as its GIT_DIR (/proc/*/cwd and environ): a git that holds a ref lock closes its
//     descriptor before it renames the lock into place. A git whose directory this process
//     may not read counts as running there.
//
// Where the system cannot tell (no /proc), nothing is removed. The worktrees' own locks
// (index.lock under <common>/worktrees/<name>) need no such care: CollectLeftovers removes
// a leftover tree's metadata whole.
func (m *Manager) RemoveStaleLocks(ctx context.Context, repoPath string, started time.Time) ([]StaleLock, error) {
	repo, err := m.repo(ctx, repoPath)
	if err != nil {
		return nil, fmt.Errorf("look for stale git locks: %w", err)
	}
	locks, err := ownLockFiles(repo.CommonDir)
	if err != nil || len(locks) == 0 {
		return nil, err
	}
	procs, scanErr := scanProcesses()
	busy := ""
	if scanErr == nil {
		busy = procs.gitIn(m.gitPlaces(repo))
	}
	var found []StaleLock
	for _, path := range locks {
		l := StaleLock{Path: path}
		switch fi, err := os.Lstat(path); {
		case errors.Is(err, fs.ErrNotExist):
			continue // its git ended meanwhile
		case err != nil:
			l.Kept = fmt.Sprintf("cannot read it: %v", err)
		case !fi.ModTime().Before(started):
			l.Kept = fmt.Sprintf("made at %s, after this ticketd started (%s): a live process's", fi.ModTime().Format(time.RFC3339), started.Format(time.RFC3339))
		case scanErr != nil:
			l.Kept = fmt.Sprintf("cannot tell whether a process holds it: %v", scanErr)
		case procs.holder(path) != "":
			l.Kept = "held open by " + procs.holder(path)
		case busy != "":
			l.Kept = busy
		default:
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				l.Kept = fmt.Sprintf("remove it: %v", err)
			} else {
				l.Removed = true
			}
		}
		found = append(found, l)
	}
	return found, nil
}

// ownLockFiles lists the regular files named *.lock under <commonDir>/refs/heads/ticketd.
func ownLockFiles(commonDir string) ([]string, error) {
	root := filepath.Join(commonDir, filepath.FromSlash(OwnRefs))
	var locks []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll // no ticketd branch yet
			}
			return err
		}
		if d.Type().IsRegular() && strings.HasSuffix(d.Name(), ".lock") {
			locks = append(locks, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("look for stale git locks under %s: %w", root, err)
	}
	return locks, nil
}

// gitPlaces are the directories a git process working on repo runs in or names as its git
// directory: the repository's work tree and git dir, and the root of ticketd's worktrees.
func (m *Manager) gitPlaces(repo repoDirs) []string {
	places := []string{repo.WorkTree, repo.CommonDir, m.root}
	for _, p := range slices.Clone(places) {
		if r, err := filepath.EvalSymlinks(p); err == nil && r != p {
			places = append(places, r)
		}
	}
	return places
}

// within says whether path is dir or under it.
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}
