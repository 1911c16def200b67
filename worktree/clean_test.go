package worktree

import (
	"context"
	"os"
	"path/filepath"
	"slices"
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
