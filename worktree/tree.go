package worktree

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Tree is one prepared worktree. Its methods may be called from one goroutine
// at a time (the attempt that owns it); different Trees are independent.
type Tree struct {
	Dir        string // absolute path of the working copy
	Branch     string // e.g. ticketd/12-average-of-an-empty-list-crashes
	BaseCommit string // full hash the tree was made at
	RepoPath   string // top level of the repository it belongs to

	authorName, authorEmail string
}

// Diff returns a unified diff (git format, binary-safe, renames as delete
// plus add so plain patch(1) can apply it) from BaseCommit to the current
// contents of the working copy: modified, deleted, and new files that are
// not ignored, committed or not. It is empty when nothing changed. The
// tree's own index is left untouched.
func (t *Tree) Diff(ctx context.Context) (string, error) {
	out, err := t.withScratchIndex(ctx, "diff", "--cached", "--no-color", "--no-ext-diff", "--no-renames", "--binary", t.BaseCommit, "--")
	if err != nil {
		return "", fmt.Errorf("diff worktree %s against %s: %w", t.Dir, short(t.BaseCommit), err)
	}
	return out, nil
}

// Changed returns the paths (relative to the tree, slash-separated) that
// differ from BaseCommit, in git's order, including new and deleted files.
func (t *Tree) Changed(ctx context.Context) ([]string, error) {
	out, err := t.withScratchIndex(ctx, "diff", "--cached", "--no-renames", "--name-only", "-z", t.BaseCommit, "--")
	if err != nil {
		return nil, fmt.Errorf("list changed files in worktree %s: %w", t.Dir, err)
	}
	var paths []string
	for _, p := range strings.Split(out, "\x00") {
		if p != "" {
			paths = append(paths, p)
		}
	}
	return paths, nil
}

// withScratchIndex stages everything into a copy of the tree's index and
// runs git with args against that copy, so that untracked files show in the
// diff without Diff having side effects. Copying (rather than read-tree)
// keeps the stat cache, so unchanged files are not re-hashed.
func (t *Tree) withScratchIndex(ctx context.Context, args ...string) (string, error) {
	idxPath, err := runGit(ctx, t.Dir, nil, "rev-parse", "--path-format=absolute", "--git-path", "index")
	if err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp("", "ticketd-index-")
	if err != nil {
		return "", fmt.Errorf("create scratch index: %w", err)
	}
	tmpPath := tmp.Name()
	defer os.Remove(tmpPath)
	defer os.Remove(tmpPath + ".lock")
	var idxTime time.Time
	if src, err := os.Open(strings.TrimSpace(idxPath)); err == nil {
		if fi, err := src.Stat(); err == nil {
			idxTime = fi.ModTime()
		}
		_, err = io.Copy(tmp, src)
		src.Close()
		if err != nil {
			tmp.Close()
			return "", fmt.Errorf("copy index to scratch: %w", err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		tmp.Close()
		return "", fmt.Errorf("open index: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("write scratch index: %w", err)
	}
	// The copy must keep the index's mtime: git trusts an entry's stat data unless the
	// entry is "racily clean" (not older than the index file). A file checked out and
	// then edited to the same size within one second has the same stat as its entry; only
	// the racy check catches that, and a fresh mtime on the copy would switch it off, so
	// such an edit would never show in the diff.
	if !idxTime.IsZero() {
		if err := os.Chtimes(tmpPath, idxTime, idxTime); err != nil {
			return "", fmt.Errorf("keep the scratch index's time: %w", err)
		}
	}
	env := []string{"GIT_INDEX_FILE=" + tmpPath}
	if fi, err := os.Stat(tmpPath); err == nil && fi.Size() == 0 {
		if _, err := runGit(ctx, t.Dir, env, "read-tree", "HEAD"); err != nil {
			return "", err
		}
	}
	if _, err := runGit(ctx, t.Dir, env, "add", "--all", "--", "."); err != nil {
		return "", err
	}
	return runGit(ctx, t.Dir, env, args...)
}

// Commit stages every change in the tree (new files included, ignored files
// excluded, deletions recorded) and commits it on the tree's branch with the
// Manager's identity, as both author and committer. Repository hooks do not
// run: the validators are ticketd's gate. It returns the new commit's hash,
// or ErrNothingToCommit when the tree equals HEAD.
func (t *Tree) Commit(ctx context.Context, message string) (string, error) {
	if strings.TrimSpace(message) == "" {
		return "", fmt.Errorf("commit in worktree %s: empty commit message", t.Dir)
	}
	if _, err := runGitRetry(ctx, t.Dir, nil, "add", "--all", "--", "."); err != nil {
		return "", fmt.Errorf("commit in worktree %s: stage changes: %w", t.Dir, err)
	}
	_, err := runGit(ctx, t.Dir, nil, "diff", "--cached", "--quiet", "HEAD", "--")
	switch {
	case err == nil:
		return "", fmt.Errorf("commit in worktree %s on %s: %w", t.Dir, t.Branch, ErrNothingToCommit)
	case exitCode(err) != 1:
		return "", fmt.Errorf("commit in worktree %s: compare index with HEAD: %w", t.Dir, err)
	}
	name := cmpOr(t.authorName, DefaultAuthorName)
	email := cmpOr(t.authorEmail, DefaultAuthorEmail)
	// The environment beats any GIT_AUTHOR_* inherited by the daemon, and
	// -c user.* makes git never consult a (possibly missing) global identity.
	env := []string{
		"GIT_AUTHOR_NAME=" + name, "GIT_AUTHOR_EMAIL=" + email,
		"GIT_COMMITTER_NAME=" + name, "GIT_COMMITTER_EMAIL=" + email,
	}
	if _, err := runGitRetry(ctx, t.Dir, env,
		"-c", "user.name="+name, "-c", "user.email="+email,
		"commit", "--quiet", "--no-verify", "--cleanup=whitespace", "-m", message); err != nil {
		return "", fmt.Errorf("commit in worktree %s on %s: %w", t.Dir, t.Branch, err)
	}
	out, err := runGit(ctx, t.Dir, nil, "rev-parse", "HEAD")
	if err != nil {
		return "", fmt.Errorf("commit in worktree %s: read new HEAD: %w", t.Dir, err)
	}
	return strings.TrimSpace(out), nil
}

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}
