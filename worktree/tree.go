package worktree

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Tree is one prepared worktree. Its methods may be called from one goroutine
// at a time (the attempt that owns it); different Trees are independent.
type Tree struct {
	Dir        string // absolute path of the working copy
	Branch     string // e.g. ticketd/12-average-of-an-empty-list-crashes
	BaseCommit string // full hash the tree was made at
	RepoPath   string // top level of the repository it belongs to

	// gitDir is <commonDir>/worktrees/<name>, read from Dir/.git at Prepare
	// and checked; git is always told it, never left to read Dir/.git again.
	gitDir, commonDir string

	authorName, authorEmail string

	// forms keeps CheckoutForms' answers while the tree lives (nil: none kept).
	forms *formMemo
	// built keeps the trees and patches built from changes while the tree lives (nil: none).
	built *builtMemo
}

// dirs is where ticketd's git finds the tree.
func (t *Tree) dirs() repoDirs {
	return repoDirs{GitDir: t.gitDir, CommonDir: t.commonDir, WorkTree: t.Dir}
}

// scratchIndexName is the index Diff and Changed stage the working copy
// into, kept in the tree's git dir (so removing the tree removes it) and
// never the tree's own index, which stays what the maker's `git status`
// would show.
const scratchIndexName = "ticketd-diff-index"

// Diff returns a unified diff (git format, binary-safe, renames as delete
// plus add so plain patch(1) can apply it) from BaseCommit to the current
// contents of the working copy: modified, deleted, and new files that are
// not ignored, committed or not. It is empty when nothing changed. The
// tree's own index is left untouched.
func (t *Tree) Diff(ctx context.Context) (string, error) {
	out, err := t.againstScratch(ctx, "diff-index", "--cached", "-p", "--binary", "--no-renames", "--no-color", "--no-ext-diff", "--no-textconv", t.BaseCommit, "--")
	if err != nil {
		return "", fmt.Errorf("diff worktree %s against %s: %w", t.Dir, short(t.BaseCommit), err)
	}
	return out, nil
}

// Changed returns the paths (relative to the tree, slash-separated) that
// differ from BaseCommit, in git's order, including new and deleted files.
func (t *Tree) Changed(ctx context.Context) ([]string, error) {
	out, err := t.againstScratch(ctx, "diff-index", "--cached", "--name-only", "-z", "--no-renames", t.BaseCommit, "--")
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

// ErrNotRegularAtBase is returned by FileAtBase for a path that is a symlink, a submodule
// or a folder at the base commit.
var ErrNotRegularAtBase = errors.New("not a regular file at the base commit")

// ErrTooLargeAtBase is returned by FileAtBase for a file larger than MaxFileAtBase.
var ErrTooLargeAtBase = errors.New("too large to read at the base commit")

// MaxFileAtBase bounds the file FileAtBase reads, the size of the largest file the maker's
// tools rewrite (tools.MaxEditBytes): what ticketd reads at the base (instructions, test
// configuration, the base version of a file the fix changed) is never larger, while a
// committed blob can be gigabytes that compress to a few kilobytes, read whole into the
// daemon's memory (three times over) otherwise.
const MaxFileAtBase = 16 << 20

// FileAtBase returns the content of rel (slash-separated, relative to the tree) at
// BaseCommit; found is false when the base commit has no such path. The blob is read as
// stored (cat-file runs no filter or textconv), so a Git LFS file reads as its pointer, as
// it is checked out. A file larger than MaxFileAtBase is not read: ErrTooLargeAtBase.
// Answers are kept (basecache.go): a file at a commit does not change.
func (t *Tree) FileAtBase(ctx context.Context, rel string) (data []byte, found bool, err error) {
	if !fullHash(t.BaseCommit) { // a name, which can move: read it each time
		return t.readAtBase(ctx, rel)
	}
	key := baseKey{commonDir: t.commonDir, commit: t.BaseCommit, rel: rel}
	if ans, ok := baseFiles.get(key); ok {
		return ans.data, ans.found, nil
	}
	data, found, err = t.readAtBase(ctx, rel)
	if err == nil {
		baseFiles.put(key, baseAnswer{data: data, found: found})
	}
	return data, found, err
}

// readAtBase is FileAtBase from git.
func (t *Tree) readAtBase(ctx context.Context, rel string) (data []byte, found bool, err error) {
	// Literal pathspecs: a file named ":(glob)x.py" or ":!x.py" is that file, not magic.
	// -l: the blob's size, known before it is read.
	out, err := t.dirs().git(ctx, literalPathspecs, "ls-tree", "-z", "-l", "--full-tree", t.BaseCommit, "--", rel)
	if err != nil {
		return nil, false, fmt.Errorf("look up %s at %s: %w", rel, short(t.BaseCommit), err)
	}
	entry, _, _ := strings.Cut(out, "\x00")
	if entry == "" {
		return nil, false, nil
	}
	meta, name, _ := strings.Cut(entry, "\t")
	fields := strings.Fields(meta) // mode, type, object, size ("-" for a folder or submodule)
	if len(fields) != 4 || name != rel {
		return nil, false, nil // a folder of that name lists its entries, not itself
	}
	if fields[1] != "blob" || fields[0] == "120000" {
		return nil, false, fmt.Errorf("%s (mode %s): %w", rel, fields[0], ErrNotRegularAtBase)
	}
	if size, err := strconv.ParseInt(fields[3], 10, 64); err != nil || size > MaxFileAtBase {
		return nil, false, fmt.Errorf("%s is %s bytes at %s, more than the %d ticketd reads: %w", rel, fields[3], short(t.BaseCommit), MaxFileAtBase, ErrTooLargeAtBase)
	}
	blob, err := t.dirs().git(ctx, nil, "cat-file", "blob", fields[2])
	if err != nil {
		return nil, false, fmt.Errorf("read %s at %s: %w", rel, short(t.BaseCommit), err)
	}
	return []byte(blob), true, nil
}

// literalPathspecs is the environment of a git command handed a path as it is named, never
// a pattern: git reads a path starting with ":" as pathspec magic otherwise.
var literalPathspecs = []string{"GIT_LITERAL_PATHSPECS=1"}

// againstScratch stages the whole working copy into the tree's scratch
// index and runs git with args against it: two git processes. The scratch
// index persists across calls, so its stat cache means only files changed
// since the last call are read and hashed.
func (t *Tree) againstScratch(ctx context.Context, args ...string) (string, error) {
	idx := filepath.Join(t.gitDir, scratchIndexName)
	fresh, err := seedScratchIndex(idx, filepath.Join(t.gitDir, "index"))
	if err != nil {
		return "", err
	}
	env := []string{"GIT_INDEX_FILE=" + idx}
	if fresh {
		if _, err := t.dirs().git(ctx, env, "read-tree", "HEAD"); err != nil {
			return "", err
		}
	}
	if _, err := t.dirs().git(ctx, env, "add", "--all", "--", "."); err != nil {
		return "", err
	}
	return t.dirs().git(ctx, env, args...)
}

// seedScratchIndex creates the scratch index at idx, the first time, as a
// copy of the tree's index (its stat cache spares hashing every file once),
// and reports fresh when there was no index to copy. The copy keeps the
// index's mtime: git trusts an entry's stat data unless the entry is "racily
// clean" (not older than the index file). A file checked out and then edited
// to the same size within one second has the same stat as its entry; only
// the racy check catches that, and a fresh mtime on the copy would switch it
// off, so the edit would never show in the diff. From then on only git writes
// the scratch index, and git's own racy-entry handling covers it.
func seedScratchIndex(idx, treeIndex string) (fresh bool, err error) {
	if _, err := os.Stat(idx); err == nil {
		return false, nil
	}
	src, err := os.Open(treeIndex)
	if errors.Is(err, os.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("open index: %w", err)
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil {
		return false, fmt.Errorf("open index: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(idx), scratchIndexName+"-*")
	if err != nil {
		return false, fmt.Errorf("create scratch index: %w", err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	_, err = io.Copy(tmp, src)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chtimes(tmp.Name(), fi.ModTime(), fi.ModTime())
	}
	if err == nil {
		err = os.Rename(tmp.Name(), idx)
	}
	if err != nil {
		return false, fmt.Errorf("copy index to scratch: %w", err)
	}
	return false, nil
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
	g := t.dirs()
	if _, err := g.gitRetry(ctx, nil, "add", "--all", "--", "."); err != nil {
		return "", fmt.Errorf("commit in worktree %s: stage changes: %w", t.Dir, err)
	}
	_, err := g.git(ctx, nil, "diff-index", "--cached", "--quiet", "HEAD", "--")
	switch {
	case err == nil:
		return "", fmt.Errorf("commit in worktree %s on %s: %w", t.Dir, t.Branch, ErrNothingToCommit)
	case exitCode(err) != 1:
		return "", fmt.Errorf("commit in worktree %s: compare index with HEAD: %w", t.Dir, err)
	}
	name := cmpOr(t.authorName, DefaultAuthorName)
	email := cmpOr(t.authorEmail, DefaultAuthorEmail)
	// The identity is fixed in the environment, which beats any user.* of
	// the repository; the daemon's own GIT_AUTHOR_* never reach git.
	env := []string{
		"GIT_AUTHOR_NAME=" + name, "GIT_AUTHOR_EMAIL=" + email,
		"GIT_COMMITTER_NAME=" + name, "GIT_COMMITTER_EMAIL=" + email,
	}
	if _, err := g.gitRetry(ctx, env, "commit", "--quiet", "--no-verify", "--no-gpg-sign", "--cleanup=whitespace", "-m", message); err != nil {
		return "", fmt.Errorf("commit in worktree %s on %s: %w", t.Dir, t.Branch, err)
	}
	out, err := g.git(ctx, nil, "rev-parse", "HEAD")
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
