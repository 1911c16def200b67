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

// TestCleanReopensClosedDirs: a check can close a folder it made (chmod 000 or 0300) to hide
// what it planted there; git lists nothing in a folder it cannot read, so the folder
// survived Clean, and the next check, run as the same user, could open it and load what was
// planted. A tracked folder it closed is opened again too. As root every folder is open to
// git, so run the test binary as a user (setpriv --reuid=nobody) to see the case.
func TestCleanReopensClosedDirs(t *testing.T) {
	ctx := context.Background()
	tree := closedDirTree(t, "pkg/mod.py", "y = 1\n")
	in := func(p string) string { return filepath.Join(tree.Dir, filepath.FromSlash(p)) }
	writeFile(t, in("plant/sitecustomize.py"), "planted\n")
	writeFile(t, in("drop/deep/conftest.py"), "planted\n")
	writeFile(t, in("pkg/new.py"), "planted\n")
	for _, c := range []struct {
		p    string
		mode os.FileMode
	}{{"plant", 0}, {"drop/deep", 0o300}, {"drop", 0o500}, {"pkg", 0}} {
		if err := os.Chmod(in(c.p), c.mode); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, p := range []string{"plant", "drop", "drop/deep", "pkg"} {
			os.Chmod(in(p), 0o700)
		}
	})
	removed, err := tree.Clean(ctx, nil)
	if want := []string{"drop", "pkg/new.py", "plant"}; err != nil || !slices.Equal(removed, want) {
		t.Errorf("Clean removed %q, %v; want %q", removed, err, want)
	}
	for _, p := range []string{"plant", "drop", "pkg/new.py"} {
		if _, err := os.Lstat(in(p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after Clean: %v, want it removed", p, err)
		}
	}
	if data, err := os.ReadFile(in("pkg/mod.py")); err != nil || string(data) != "y = 1\n" {
		t.Errorf("pkg/mod.py after Clean: %q, %v; want it kept", data, err)
	}
}

// TestCleanRemovesEmptyFolders: a folder a check made, or one Undo emptied of the check's
// files, is a namespace package to Python (an "import foo" a test expects to fail succeeds
// in the next check), so Clean removes empty untracked folders too. A submodule's folder,
// empty in a worktree, and the folders of the maker's files stay.
func TestCleanRemovesEmptyFolders(t *testing.T) {
	ctx := context.Background()
	lib := newRepo(t, true)
	repo := newRepo(t, true)
	git(t, repo, "-c", "protocol.file.allow=always", "submodule", "--quiet", "add", lib, "vendor/lib")
	git(t, repo, "commit", "--quiet", "-m", "submodule")
	m := NewManager(filepath.Join(t.TempDir(), "trees"), nil)
	tree, err := m.Prepare(ctx, repo, "main", "ticketd/1-empty")
	if err != nil {
		t.Fatal(err)
	}
	in := func(p string) string { return filepath.Join(tree.Dir, filepath.FromSlash(p)) }
	kept := []string{"newpkg/maker.py"}
	writeFile(t, in("newpkg/maker.py"), "x = 1\n")
	snap, err := tree.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The check: a file in a folder of its own (Undo removes the file), empty folders.
	writeFile(t, in("foo/bar.txt"), "left\n")
	for _, d := range []string{"emptyA/emptyB", "newpkg/empty"} {
		if err := os.MkdirAll(in(d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tree.Undo(ctx, snap); err != nil {
		t.Fatal(err)
	}
	removed, err := tree.Clean(ctx, kept)
	if want := []string{"emptyA", "foo", "newpkg/empty"}; err != nil || !slices.Equal(removed, want) {
		t.Errorf("Clean removed %q, %v; want %q", removed, err, want)
	}
	for _, p := range []string{"emptyA", "foo", "newpkg/empty"} {
		if _, err := os.Lstat(in(p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after Clean: %v, want it removed", p, err)
		}
	}
	for _, p := range []string{"vendor/lib", "newpkg/maker.py"} {
		if _, err := os.Lstat(in(p)); err != nil {
			t.Errorf("%s after Clean: %v, want it kept", p, err)
		}
	}
}

// closedDirTree is a tree of a repository whose base commit adds file (slash-separated)
// with content, for the tests of folders a check closes.
func closedDirTree(t *testing.T, file, content string) *Tree {
	t.Helper()
	repo := newRepo(t, true)
	writeFile(t, filepath.Join(repo, filepath.FromSlash(file)), content)
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "add "+file)
	tree, err := NewManager(filepath.Join(t.TempDir(), "trees"), nil).Prepare(context.Background(), repo, "main", "ticketd/1-closed")
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// TestCleanAndUndoReopenClosedRoot: a check run as the daemon's user (a daemon that is not
// root) may close the worktree's own folder (chmod 000): Clean and Undo then open it again
// and do their work, instead of failing and leaving what the check wrote for the next one.
// As root the closed folder is no obstacle and the test passes either way; run it as a user
// (setpriv --reuid=65534 --regid=65534 --clear-groups) to see the case.
func TestCleanAndUndoReopenClosedRoot(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		run  func(t *testing.T, tree *Tree, snap *Snapshot) error
	}{
		{"clean", func(t *testing.T, tree *Tree, _ *Snapshot) error { _, err := tree.Clean(ctx, nil); return err }},
		{"undo", func(t *testing.T, tree *Tree, snap *Snapshot) error { _, err := tree.Undo(ctx, snap); return err }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tree := closedDirTree(t, "tests/test_mean.py", "def test_mean():\n    assert False\n")
			snap, err := tree.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			in := func(p string) string { return filepath.Join(tree.Dir, filepath.FromSlash(p)) }
			writeFile(t, in("tests/test_mean.py"), "def test_mean():\n    assert True\n")
			writeFile(t, in("conftest.py"), "planted\n")
			if err := os.Chmod(tree.Dir, 0); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(tree.Dir, 0o755) })
			if err := tt.run(t, tree, snap); err != nil {
				t.Fatalf("%s of a worktree whose folder a check closed: %v", tt.name, err)
			}
			fi, err := os.Stat(tree.Dir)
			if err != nil || fi.Mode().Perm()&0o700 != 0o700 {
				t.Fatalf("the worktree's folder after %s: %v, %v; want it open to its owner", tt.name, fi.Mode(), err)
			}
			if tt.name == "clean" {
				if _, err := os.Lstat(in("conftest.py")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("conftest.py after Clean: %v, want it removed", err)
				}
				return
			}
			if data, err := os.ReadFile(in("tests/test_mean.py")); err != nil || !strings.Contains(string(data), "assert False") {
				t.Errorf("tests/test_mean.py after Undo: %q, %v; want its base content", data, err)
			}
		})
	}
}
