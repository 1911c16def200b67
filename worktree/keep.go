package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// A fresh worktree checks out every file of the repository: on a 10,000-file repository
// that is seconds of file creation per ticket, a cost that grows with the repository while
// the ticket's change is a file or two. A Manager with Keep set keeps the trees Remove is
// given, as they are, and the next Prepare of the same repository brings one to its new
// base instead: it removes what is untracked or ignored (Clean), lets git rewrite only the
// files that differ from the new base (checkout -f), and then requires git to find nothing
// in the tree that the base does not hold. A kept tree that cannot be brought back exactly
// is removed and a fresh one made.

// keptTree is a worktree Remove kept for reuse (Manager.Keep).
type keptTree struct {
	dir, gitDir, commonDir string
	// dotGit is the tree's .git file as it was when the tree was made: the link to its git
	// directory, which ticketd's git never reads again, must still be the same file.
	dotGit []byte
}

// keep keeps t for the next Prepare of its repository instead of removing it, and reports
// whether it did. The tree is detached from its branch first, so the branch is free to be
// deleted (unless keepBranch), checked out elsewhere or pushed. When Keep trees are kept
// already, the one kept longest is removed to make room: the trees kept never take more
// disk than Keep trees in use do.
func (m *Manager) keep(ctx context.Context, t *Tree, keepBranch bool) bool {
	if m.Keep <= 0 || t.gitDir == "" || ctx.Err() != nil {
		return false
	}
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return false
	}
	dotGit, err := readDotGit(t.Dir)
	if err != nil {
		return false
	}
	unlock, err := lockRepo(t.commonDir)
	if err != nil {
		return false
	}
	err = detach(ctx, t, keepBranch)
	unlock()
	if err != nil {
		m.logger.Debug("worktree not kept for reuse", "dir", t.Dir, "err", err)
		return false
	}
	k := keptTree{dir: t.Dir, gitDir: t.gitDir, commonDir: t.commonDir, dotGit: dotGit}
	m.mu.Lock()
	var evicted []keptTree
	if !m.closed {
		m.kept = append(m.kept, k)
		if over := len(m.kept) - m.Keep; over > 0 {
			evicted = append(evicted, m.kept[:over]...)
			m.kept = append([]keptTree(nil), m.kept[over:]...)
		}
	} else {
		evicted = append(evicted, k)
	}
	m.mu.Unlock()
	for _, e := range evicted {
		if err := m.discard(e); err != nil {
			m.logger.Warn("remove a kept worktree", "dir", e.dir, "err", err)
		}
	}
	m.logger.Debug("worktree kept for reuse", "dir", t.Dir, "branch", t.Branch, "keep_branch", keepBranch)
	return true
}

// detach points t's HEAD at its commit instead of its branch, and deletes the branch unless
// keepBranch. The caller holds the repository's lock.
func detach(ctx context.Context, t *Tree, keepBranch bool) error {
	g := t.dirs()
	head, err := g.git(ctx, nil, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if err != nil {
		return fmt.Errorf("read the head of %s: %w", t.Dir, err)
	}
	if _, err := g.gitRetry(ctx, nil, "update-ref", "--no-deref", "-m", "ticketd: kept for reuse", "HEAD", strings.TrimSpace(head)); err != nil {
		return fmt.Errorf("detach %s from %s: %w", t.Dir, t.Branch, err)
	}
	if keepBranch {
		return nil
	}
	if _, err := g.gitRetry(ctx, nil, "branch", "-D", "--", t.Branch); err != nil {
		var ge *gitError
		if !errors.As(err, &ge) || !strings.Contains(ge.Stderr, "not found") {
			return err
		}
	}
	return nil
}

// reuse returns a kept tree of repo on branch, its files those of from, or nil when none is
// kept or the one taken could not be brought back exactly (it is removed then).
func (m *Manager) reuse(ctx context.Context, repo repoDirs, base, from, branch string) *Tree {
	m.mu.Lock()
	i := len(m.kept) - 1
	for i >= 0 && m.kept[i].commonDir != repo.CommonDir {
		i--
	}
	if i < 0 {
		m.mu.Unlock()
		return nil
	}
	k := m.kept[i]
	m.kept = append(m.kept[:i], m.kept[i+1:]...)
	m.mu.Unlock()
	t := &Tree{Dir: k.dir, Branch: branch, BaseCommit: base, RepoPath: repo.WorkTree, gitDir: k.gitDir, commonDir: k.commonDir,
		authorName: cmpOr(m.AuthorName, DefaultAuthorName), authorEmail: cmpOr(m.AuthorEmail, DefaultAuthorEmail), forms: &formMemo{}, built: &builtMemo{}}
	if err := m.refit(ctx, t, &k, from); err != nil {
		if ctx.Err() == nil {
			m.logger.Info("kept worktree not reused: removed, a fresh one is made", "dir", k.dir, "err", err)
		}
		if err := m.discard(k); err != nil {
			m.logger.Warn("remove a kept worktree", "dir", k.dir, "err", err)
		}
		return nil
	}
	m.logger.Debug("worktree reused", "repo", repo.WorkTree, "dir", t.Dir, "branch", branch, "base_commit", base)
	return t
}

// refit brings kept tree t to branch at from, as a fresh checkout of from would be, in a
// folder named for branch (k.dir follows the folder).
func (m *Manager) refit(ctx context.Context, t *Tree, k *keptTree, from string) error {
	if got, err := readDotGit(t.Dir); err != nil || !bytes.Equal(got, k.dotGit) {
		return fmt.Errorf("its .git file changed or is gone (%v)", err)
	}
	if _, err := t.Clean(ctx, nil); err != nil {
		return err
	}
	for _, name := range []string{scratchIndexName, changesIndexName} {
		if err := os.Remove(filepath.Join(t.gitDir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	unlock, err := lockRepo(t.commonDir)
	if err != nil {
		return err
	}
	err = m.rename(t, k)
	g := t.dirs()
	if err == nil {
		// Only the files that differ between the tree and from are written; -f drops what
		// the last user changed, -B points the branch at from (refused while another tree
		// has it).
		if _, err = g.gitRetry(ctx, nil, "checkout", "-f", "-q", "--no-track", "--no-recurse-submodules", "-B", t.Branch, from); err != nil {
			err = fmt.Errorf("check out %s on %s: %w", short(from), t.Branch, err)
		}
	}
	unlock()
	if err != nil {
		return err
	}
	return asCheckedOut(ctx, g)
}

// asCheckedOut fails unless git finds nothing in the tree that its HEAD does not hold, and
// the tree has no submodule: a submodule's folder can hold files the superproject's git
// does not look into.
func asCheckedOut(ctx context.Context, g repoDirs) error {
	staged, err := g.git(ctx, nil, "ls-files", "-s", "-z")
	if err != nil {
		return err
	}
	if strings.HasPrefix(staged, "160000 ") || strings.Contains(staged, "\x00160000 ") {
		return errors.New("the repository has submodules")
	}
	left, err := g.git(ctx, nil, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored=matching", "--no-renames", "--ignore-submodules=none")
	if err != nil {
		return err
	}
	if left != "" {
		if len(left) > 200 {
			left = left[:200] + "..."
		}
		return fmt.Errorf("git still finds %q after the checkout", strings.ReplaceAll(left, "\x00", " "))
	}
	return nil
}

// rename moves kept tree t's folder to a new one named for t.Branch, as Prepare names a
// fresh tree's, so the workspace still tells which ticket each folder holds; git's record
// of the tree follows it. The caller holds the repository's lock.
func (m *Manager) rename(t *Tree, k *keptTree) error {
	dir, err := os.MkdirTemp(m.root, treePrefix(t.RepoPath, t.Branch))
	if err != nil {
		return err
	}
	m.setLive(dir, true)
	// Onto the empty folder MkdirTemp made, which os.Rename refuses and rename(2) allows.
	if err := syscall.Rename(k.dir, dir); err != nil {
		m.setLive(dir, false)
		os.Remove(dir)
		return fmt.Errorf("rename %s: %w", k.dir, err)
	}
	m.setLive(k.dir, false)
	k.dir, t.Dir = dir, dir
	record := filepath.Join(t.gitDir, "gitdir")
	tmp := record + ".ticketd-new"
	if err := os.WriteFile(tmp, []byte(filepath.Join(dir, ".git")+"\n"), 0o644); err != nil {
		return fmt.Errorf("record the tree's new folder %s: %w", dir, err)
	}
	if err := os.Rename(tmp, record); err != nil {
		return fmt.Errorf("record the tree's new folder %s: %w", dir, err)
	}
	return nil
}

// discard removes kept tree k: its files, then its record in the repository.
func (m *Manager) discard(k keptTree) error {
	m.setLive(k.dir, false)
	errs := []error{removeTree(k.dir)}
	if unlock, err := lockRepo(k.commonDir); err != nil {
		errs = append(errs, err)
	} else {
		errs = append(errs, os.RemoveAll(k.gitDir))
		unlock()
	}
	return errors.Join(errs...)
}

// Close removes the trees kept for reuse; Remove removes every tree from then on. Trees in
// use are not touched.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	kept := m.kept
	m.kept = nil
	m.mu.Unlock()
	var errs []error
	for _, k := range kept {
		if err := m.discard(k); err != nil {
			errs = append(errs, fmt.Errorf("remove kept worktree %s: %w", k.dir, err))
		}
	}
	return errors.Join(errs...)
}

// readDotGit reads dir's .git file as a snapshot reads a file (readSnap): without following
// a symlink or waiting on a FIFO, and only when it is a regular file.
func readDotGit(dir string) ([]byte, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f := readSnap(root, ".git")
	if !f.present {
		return nil, fmt.Errorf("%s/.git is not a regular file", dir)
	}
	return f.data, nil
}
