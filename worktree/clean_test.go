package worktree

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Clean leaves exactly the maker's tree: every untracked file, ignored ones included (a
// planted pytest.pyc, a cache folder, a nested repository), goes; the files the tools wrote,
// even in ignored or untracked folders, and the tracked files stay.
func TestClean(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, true)
	writeFile(t, filepath.Join(repo, ".gitignore"), "*.log\n*.pyc\nbuild/\n")
	git(t, repo, "commit", "--quiet", "-am", "ignore more")
	m := NewManager(filepath.Join(t.TempDir(), "trees"), nil)
	tree, err := m.Prepare(ctx, repo, "main", "ticketd/1-mean")
	if err != nil {
		t.Fatal(err)
	}
	kept := []string{"stats.py", "tests/test_new.py", "build/keep.py", "notes.log"}
	for _, p := range kept {
		writeFile(t, filepath.Join(tree.Dir, p), "# maker\n")
	}
	left := []string{"pytest.pyc", "cache/x.log", "tests/helper_left.py", "build/out.o", "build/lib/x.py", "stray.txt"}
	for _, p := range left {
		writeFile(t, filepath.Join(tree.Dir, p), "left\n")
	}
	if err := os.MkdirAll(filepath.Join(tree.Dir, "nested", ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(tree.Dir, "nested", "a.txt"), "x\n")
	git(t, filepath.Join(tree.Dir, "nested"), "init", "--quiet")
	if err := os.Symlink("/etc", filepath.Join(tree.Dir, "link")); err != nil {
		t.Fatal(err)
	}
	removed, err := tree.Clean(ctx, kept)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"build/lib", "build/out.o", "cache", "link", "nested", "pytest.pyc", "stray.txt", "tests/helper_left.py"}
	if !slices.Equal(removed, want) {
		t.Errorf("removed %q\nwant    %q", removed, want)
	}
	for _, p := range append(kept, "old.py", ".gitignore") {
		if _, err := os.Stat(filepath.Join(tree.Dir, p)); err != nil {
			t.Errorf("%s is gone: %v", p, err)
		}
	}
	if _, err := os.Stat("/etc/hostname"); err != nil && !os.IsNotExist(err) {
		t.Errorf("the symlink's target was touched: %v", err)
	}
	again, err := tree.Clean(ctx, kept)
	if err != nil || len(again) != 0 {
		t.Errorf("a second Clean removed %q, %v; want nothing", again, err)
	}
}

func TestBranchChanges(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, true)
	git(t, repo, "checkout", "--quiet", "-b", "fix")
	writeFile(t, filepath.Join(repo, ".github", "workflows", "x.yml"), "on: push\n")
	writeFile(t, filepath.Join(repo, "stats.py"), "x\n")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "--quiet", "-m", "fix")
	got, err := BranchChanges(ctx, repo, "main", "fix")
	if err != nil || !slices.Equal(got, []string{".github/workflows/x.yml", "stats.py"}) {
		t.Errorf("BranchChanges = %q, %v", got, err)
	}
	if _, err := BranchChanges(ctx, repo, "main", "--output=/tmp/x"); err == nil {
		t.Error("a branch named like an option was accepted")
	}
}

// Republish gives the same commit every time for the same kept change, so a second run finds
// its branch in place; a branch of that name elsewhere is refused.
func TestRepublish(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, true)
	git(t, repo, "checkout", "--quiet", "-b", "ticketd/1-x-attempt-1")
	writeFile(t, filepath.Join(repo, "stats.py"), "fixed\n")
	git(t, repo, "commit", "--quiet", "-am", "ticketd attempt 1 (not accepted)")
	git(t, repo, "checkout", "--quiet", "main")
	first, err := Republish(ctx, repo, "ticketd/1-x-attempt-1", "ticketd/1-x", "Fix x\n\nAccepted by alice.")
	if err != nil {
		t.Fatal(err)
	}
	again, err := Republish(ctx, repo, "ticketd/1-x-attempt-1", "ticketd/1-x", "Fix x\n\nAccepted by alice.")
	if err != nil || again != first {
		t.Errorf("second Republish = %s, %v; want %s again", again, err, first)
	}
	if msg := git(t, repo, "log", "-1", "--format=%s", "ticketd/1-x"); strings.TrimSpace(msg) != "Fix x" {
		t.Errorf("message %q", msg)
	}
	if d := git(t, repo, "diff", "ticketd/1-x-attempt-1", "ticketd/1-x"); d != "" {
		t.Errorf("the published tree differs from the kept one:\n%s", d)
	}
	if got, err := Republish(ctx, repo, "ticketd/1-x-attempt-1", "ticketd/1-x", "another message"); err != nil || got != first {
		t.Errorf("the same change under another message: %s, %v; want the published %s", got, err, first)
	}
	git(t, repo, "branch", "--quiet", "other", "main")
	if _, err := Republish(ctx, repo, "ticketd/1-x-attempt-1", "other", "x"); !errors.Is(err, ErrBranchExists) {
		t.Errorf("a branch at another commit: %v; want ErrBranchExists", err)
	}
	p, err := CommitPatch(ctx, repo, first)
	if err != nil || !strings.Contains(p, "+fixed") {
		t.Errorf("CommitPatch = %q, %v", p, err)
	}
}
