package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestCommitChangesOnlyToolPaths: what a check wrote into the working copy — a new file (the
// stolen keys, in issue 19's probe), an edit of a tracked file, an edit of a file the maker
// changed, a FIFO in place of a tracked file — never reaches the commit or the patch; they are
// exactly the maker's changes, and Leftovers lists the rest.
func TestCommitChangesOnlyToolPaths(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, true)
	m := NewManager(filepath.Join(t.TempDir(), "trees"), nil)
	tree, err := m.Prepare(ctx, repo, "main", "ticketd/1-mean")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tree.CommitChanges(ctx, "nothing", nil); !errors.Is(err, ErrNothingToCommit) {
		t.Fatalf("CommitChanges without changes: %v, want ErrNothingToCommit", err)
	}
	fixed := "def mean(xs):\n    if not xs:\n        return 0.0\n    return sum(xs) / len(xs)\n"
	changes := []Change{
		{Path: "stats.py", Data: []byte(fixed)},
		{Path: "tests/test_stats.py", Data: []byte("from stats import mean\n")},
		{Path: "tools/run.sh", Data: []byte("#!/bin/sh\n"), Executable: true},
	}
	// The maker's files as written, then what the checks did on top.
	for _, c := range changes {
		writeFile(t, filepath.Join(tree.Dir, c.Path), string(c.Data))
	}
	writeFile(t, filepath.Join(tree.Dir, "stolen.txt"), "OPENAI_API_KEY=sk-...\n")
	writeFile(t, filepath.Join(tree.Dir, "old.py"), "x = 2  # a check edited a tracked file\n")
	writeFile(t, filepath.Join(tree.Dir, "tests", "test_stats.py"), "from stats import mean\nimport os  # edited by a check after the maker\n")
	writeFile(t, filepath.Join(tree.Dir, "run.log"), "ignored\n")
	os.Remove(filepath.Join(tree.Dir, ".gitignore"))
	if err := syscall.Mkfifo(filepath.Join(tree.Dir, "pipe.py"), 0o644); err != nil {
		t.Fatal(err)
	}

	diff, err := tree.DiffChanges(ctx, changes)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"+    if not xs:", "b/tests/test_stats.py", "new file mode 100755"} {
		if !strings.Contains(diff, want) {
			t.Errorf("the patch lacks %q:\n%s", want, diff)
		}
	}
	for _, bad := range []string{"stolen", "x = 2", "import os", ".gitignore", "pipe.py", "run.log"} {
		if strings.Contains(diff, bad) {
			t.Errorf("the patch holds what a check wrote (%q):\n%s", bad, diff)
		}
	}
	left, err := tree.Leftovers(ctx, changes)
	if want := []string{".gitignore", "old.py", "run.log", "stolen.txt", "tests/test_stats.py"}; err != nil || !slices.Equal(left, want) {
		t.Errorf("Leftovers = %q, %v; want %q", left, err, want)
	}
	if err := tree.Restore(ctx, changes); err != nil {
		t.Fatal(err)
	}
	if left, err := tree.Leftovers(ctx, changes); err != nil || len(left) != 0 {
		t.Errorf("after Restore the working copy still differs from the fix: %q, %v", left, err)
	}
	if _, err := os.Stat(filepath.Join(tree.Dir, "run.log")); err != nil {
		t.Errorf("Restore removed an ignored file, the checks' own state: %v", err)
	}
	for _, gone := range []string{"stolen.txt"} { // git clean leaves a FIFO: harmless, never read or committed
		if _, err := os.Lstat(filepath.Join(tree.Dir, gone)); err == nil {
			t.Errorf("Restore left %s", gone)
		}
	}
	if fi, err := os.Stat(filepath.Join(tree.Dir, "tools", "run.sh")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("Restore did not put the maker's executable back: %v %v", fi, err)
	}
	commit, err := tree.CommitChanges(ctx, "Fix the mean  \n\n\nof nothing\n", changes)
	if err != nil {
		t.Fatal(err)
	}
	files := git(t, repo, "diff-tree", "-r", "--name-only", "--no-commit-id", commit)
	if files != "stats.py\ntests/test_stats.py\ntools/run.sh" {
		t.Errorf("the commit changes %q, want exactly the maker's three paths", files)
	}
	if got := git(t, repo, "rev-parse", "ticketd/1-mean"); got != commit {
		t.Errorf("the branch is at %s, want the new commit %s", got, commit)
	}
	if msg := git(t, repo, "log", "-1", "--format=%B", commit); msg != "Fix the mean\n\nof nothing" {
		t.Errorf("commit message %q, want it cleaned like git commit does", msg)
	}
	if got := git(t, repo, "show", commit+":tests/test_stats.py"); got != "from stats import mean" {
		t.Errorf("the committed test is %q, want the maker's version, not the check's", got)
	}
	if diff2, err := tree.DiffChanges(ctx, changes); err != nil || diff2 != diff {
		t.Errorf("the patch after the commit differs: %v", err)
	}
	for _, bad := range []Change{{Path: "../x"}, {Path: ".git/config"}, {Path: "/etc/passwd"}, {Path: "a/../b"}, {Path: "sub/.GIT/hooks/x"}} {
		if _, err := tree.DiffChanges(ctx, []Change{bad}); err == nil {
			t.Errorf("DiffChanges accepted the path %q", bad.Path)
		}
	}
}

// TestRemoveUnreadableDirs: directories a check made unreadable (0300) or unwritable (0500)
// do not keep a worktree on disk, neither at Remove nor in the next start's clean-up. As root
// nothing is unreadable, so run the test binary as a user (setpriv --reuid=nobody) to see the
// case issue 19 found.
func TestRemoveUnreadableDirs(t *testing.T) {
	ctx := context.Background()
	litter := func(t *testing.T, dir string) {
		t.Helper()
		writeFile(t, filepath.Join(dir, "hide", "sealed", "big.bin"), "data")
		for _, d := range []struct {
			p    string
			mode os.FileMode
		}{{filepath.Join(dir, "hide", "sealed"), 0o500}, {filepath.Join(dir, "hide"), 0o300}} {
			if err := os.Chmod(d.p, d.mode); err != nil {
				t.Fatal(err)
			}
		}
		t.Cleanup(func() {
			os.Chmod(filepath.Join(dir, "hide"), 0o700)
			os.Chmod(filepath.Join(dir, "hide", "sealed"), 0o700)
		})
	}
	repo := newRepo(t, true)
	m := NewManager(filepath.Join(t.TempDir(), "trees"), nil)
	tree, err := m.Prepare(ctx, repo, "main", "ticketd/1-a")
	if err != nil {
		t.Fatal(err)
	}
	litter(t, tree.Dir)
	if err := m.Remove(ctx, tree, false); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if _, err := os.Stat(tree.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the worktree is still on disk after Remove: %v", err)
	}
	// A crash leaves one behind: the next start's Manager removes it.
	tree, err = m.Prepare(ctx, repo, "main", "ticketd/2-b")
	if err != nil {
		t.Fatal(err)
	}
	litter(t, tree.Dir)
	next := NewManager(m.Root(), nil)
	if _, err := next.CollectLeftovers(ctx, repo); err != nil {
		t.Fatalf("CollectLeftovers: %v", err)
	}
	if _, err := os.Stat(tree.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the crashed attempt's worktree is still on disk after the clean-up: %v", err)
	}
}

// BenchmarkSettleBig measures what the daemon adds after every run of checks on a 5,000-file
// repository: Leftovers (git status) and Restore (reset, clean, the maker's files written
// back), with one maker file and one file a check wrote.
func BenchmarkSettleBig(b *testing.B) {
	ctx := context.Background()
	repo := bigRepo(b, bigRepoFiles)
	m := NewManager(filepath.Join(b.TempDir(), "trees"), nil)
	tree, err := m.Prepare(ctx, repo, "main", "ticketd/1-bench")
	if err != nil {
		b.Fatal(err)
	}
	changes := []Change{{Path: "pkg00/mod00/file00.py", Data: []byte("x = 1\n")}}
	for b.Loop() {
		writeFile(b, filepath.Join(tree.Dir, "left.txt"), "a check was here\n")
		if _, err := tree.Leftovers(ctx, changes); err != nil {
			b.Fatal(err)
		}
		if err := tree.Restore(ctx, changes); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCommitChanges measures building the fix commit from the maker's files on a
// 5,000-file repository (hash-object, a private index, write-tree, commit-tree, update-ref).
func BenchmarkCommitChanges(b *testing.B) {
	ctx := context.Background()
	repo := bigRepo(b, bigRepoFiles)
	m := NewManager(filepath.Join(b.TempDir(), "trees"), nil)
	tree, err := m.Prepare(ctx, repo, "main", "ticketd/1-bench")
	if err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		i++
		changes := []Change{{Path: "pkg00/mod00/file00.py", Data: []byte(fmt.Sprintf("x = %d\n", i))}}
		if _, err := tree.CommitChanges(ctx, "bench", changes); err != nil {
			b.Fatal(err)
		}
	}
}
