package worktree

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeptTreeReused leaves a tree as a night leaves one (edited, deleted, new, ignored and
// executable files, a commit on its branch), removes it into a Manager that keeps one tree,
// and prepares the next ticket: the same folder comes back holding exactly the new base,
// on the new branch, and the old branch is kept or deleted as Remove was told.
func TestKeptTreeReused(t *testing.T) {
	for _, tc := range []struct {
		name       string
		keepBranch bool
		sameBranch bool // the next Prepare asks for the kept tree's own branch (a retry)
		newBase    bool // the repository moved on between the two tickets
	}{
		{name: "branch deleted"},
		{name: "branch kept", keepBranch: true},
		{name: "retry on the same branch", keepBranch: true, sameBranch: true},
		{name: "new base", newBase: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			repo := newRepo(t, true)
			m := NewManager(t.TempDir(), nil)
			m.Keep = 1
			t.Cleanup(func() { m.Close() })
			first, err := m.Prepare(ctx, repo, "main", "ticketd/1-first")
			if err != nil {
				t.Fatal(err)
			}
			dirtyTree(t, first)
			fix, err := first.Commit(ctx, "the first fix")
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(first.Dir, "after-commit.txt"), "left after the commit\n")
			if err := m.Remove(ctx, first, tc.keepBranch); err != nil {
				t.Fatal(err)
			}
			branches := git(t, repo, "branch", "--list", "ticketd/1-first")
			if tc.keepBranch != (branches != "") {
				t.Fatalf("after Remove(keepBranch=%v), branch list %q", tc.keepBranch, branches)
			}
			if tc.keepBranch {
				if got := git(t, repo, "rev-parse", "ticketd/1-first"); got != fix {
					t.Errorf("kept branch at %s, want the fix %s", got, fix)
				}
			}
			if tc.newBase {
				writeFile(t, filepath.Join(repo, "stats.py"), "def mean(xs):\n    return sum(xs) / len(xs) if xs else 0.0\n")
				writeFile(t, filepath.Join(repo, "pkg", "added.py"), "z = 3\n")
				git(t, repo, "add", "-A")
				git(t, repo, "-c", "user.name=Setup", "-c", "user.email=setup@example.com", "commit", "--quiet", "-m", "moved on")
			}
			branch := "ticketd/2-second"
			if tc.sameBranch {
				branch = "ticketd/1-first"
			}
			second, err := m.Prepare(ctx, repo, "main", branch)
			if err != nil {
				t.Fatal(err)
			}
			if second.gitDir != first.gitDir {
				t.Fatalf("second tree in %s, want the kept %s, renamed", second.Dir, first.Dir)
			}
			if want := filepath.Join(m.Root(), treePrefix(repo, branch)); !strings.HasPrefix(second.Dir, want) || second.Dir == first.Dir {
				t.Errorf("reused tree in %s, want a new folder named %s...", second.Dir, want)
			}
			if _, err := os.Stat(first.Dir); !os.IsNotExist(err) {
				t.Errorf("the kept tree's old folder %s is still there (%v)", first.Dir, err)
			}
			if out := git(t, repo, "worktree", "list", "--porcelain"); !strings.Contains(out, "worktree "+second.Dir+"\n") {
				t.Errorf("git does not list the reused tree at %s:\n%s", second.Dir, out)
			}
			wantSameAsFresh(t, repo, second)
			if got := git(t, second.Dir, "symbolic-ref", "HEAD"); got != "refs/heads/"+branch {
				t.Errorf("HEAD is %s, want refs/heads/%s", got, branch)
			}
			if diff, err := second.Diff(ctx); err != nil || diff != "" {
				t.Errorf("Diff of the reused tree = %q, %v; want nothing", diff, err)
			}
			// The reused tree works as a fresh one: a change shows in its diff and commits.
			writeFile(t, filepath.Join(second.Dir, "stats.py"), "def mean(xs):\n    return 0\n")
			if diff, err := second.Diff(ctx); err != nil || !strings.Contains(diff, "return 0") {
				t.Errorf("Diff after an edit = %q, %v", diff, err)
			}
			if _, err := second.Commit(ctx, "the second fix"); err != nil {
				t.Fatal(err)
			}
			if err := m.Remove(ctx, second, false); err != nil {
				t.Fatal(err)
			}
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(first.Dir); !os.IsNotExist(err) {
				t.Errorf("after Close the kept tree %s is still there (%v)", first.Dir, err)
			}
			if out := git(t, repo, "worktree", "list", "--porcelain"); strings.Count(out, "worktree ") != 1 {
				t.Errorf("after Close, worktrees:\n%s", out)
			}
		})
	}
}

// dirtyTree leaves in tree what an attempt and its checks can: an edited, a deleted and a
// new tracked-to-be file, an ignored log, a cache folder, and a file made executable.
func dirtyTree(t *testing.T, tree *Tree) {
	t.Helper()
	writeFile(t, filepath.Join(tree.Dir, "stats.py"), "def mean(xs):\n    return 42\n")
	if err := os.Remove(filepath.Join(tree.Dir, "old.py")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(tree.Dir, "new.py"), "y = 2\n")
	writeFile(t, filepath.Join(tree.Dir, "run.log"), "ignored\n")
	writeFile(t, filepath.Join(tree.Dir, "__pycache__", "stats.cpython-311.pyc"), "cache\n")
	writeFile(t, filepath.Join(tree.Dir, "local-notes.txt"), "excluded\n")
	if err := os.Chmod(filepath.Join(tree.Dir, ".gitignore"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// wantSameAsFresh fails unless tree holds exactly what a fresh checkout of its base holds.
func wantSameAsFresh(t *testing.T, repo string, tree *Tree) {
	t.Helper()
	if got := git(t, tree.Dir, "rev-parse", "HEAD"); got != tree.BaseCommit {
		t.Errorf("HEAD at %s, want the base %s", got, tree.BaseCommit)
	}
	if got := git(t, tree.Dir, "status", "--porcelain", "--untracked-files=all", "--ignored"); got != "" {
		t.Errorf("reused tree differs from its base:\n%s", got)
	}
	tracked := strings.Fields(git(t, repo, "ls-tree", "-r", "--name-only", tree.BaseCommit))
	var files []string
	err := filepath.WalkDir(tree.Dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(tree.Dir, p)
		if rel != ".git" {
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(files, " ") != strings.Join(tracked, " ") {
		t.Errorf("files in the reused tree %q, want the base's %q", files, tracked)
	}
	if fi, err := os.Stat(filepath.Join(tree.Dir, ".gitignore")); err != nil || fi.Mode().Perm()&0o111 != 0 {
		t.Errorf(".gitignore: %v, %v; want the base's mode, not executable", fi.Mode(), err)
	}
}

// TestKeptTreeNotReused covers the kept trees that must not come back: one whose .git file
// was replaced, one of another repository, and those past Keep or kept after Close.
func TestKeptTreeNotReused(t *testing.T) {
	ctx := context.Background()
	t.Run("replaced .git file", func(t *testing.T) {
		repo := newRepo(t, true)
		m := NewManager(t.TempDir(), nil)
		m.Keep = 1
		first, err := m.Prepare(ctx, repo, "main", "ticketd/1-a")
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Remove(ctx, first, false); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(first.Dir, ".git"), "gitdir: /elsewhere\n")
		second, err := m.Prepare(ctx, repo, "main", "ticketd/2-b")
		if err != nil {
			t.Fatal(err)
		}
		if second.gitDir == first.gitDir {
			t.Fatal("a tree whose .git file changed was reused")
		}
		if _, err := os.Stat(first.Dir); !os.IsNotExist(err) {
			t.Errorf("the refused kept tree %s is still there (%v)", first.Dir, err)
		}
		wantSameAsFresh(t, repo, second)
	})
	t.Run("submodule", func(t *testing.T) {
		// A submodule's folder is a place the superproject's git does not look into: a
		// repository with one never has its trees reused.
		repo := newRepo(t, true)
		git(t, repo, "update-index", "--add", "--cacheinfo", "160000,"+git(t, repo, "rev-parse", "HEAD")+",vendored")
		git(t, repo, "-c", "user.name=Setup", "-c", "user.email=setup@example.com", "commit", "--quiet", "-m", "a submodule")
		m := NewManager(t.TempDir(), nil)
		m.Keep = 1
		t.Cleanup(func() { m.Close() })
		first, err := m.Prepare(ctx, repo, "main", "ticketd/1-a")
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(first.Dir, "vendored", "planted.py"), "import os\n")
		if err := m.Remove(ctx, first, false); err != nil {
			t.Fatal(err)
		}
		second, err := m.Prepare(ctx, repo, "main", "ticketd/2-b")
		if err != nil {
			t.Fatal(err)
		}
		if second.gitDir == first.gitDir {
			t.Fatal("a tree of a repository with a submodule was reused")
		}
		if _, err := os.Stat(filepath.Join(second.Dir, "vendored", "planted.py")); !os.IsNotExist(err) {
			t.Errorf("the planted file is in the new tree (%v)", err)
		}
	})
	t.Run("another repository", func(t *testing.T) {
		repoA, repoB := newRepo(t, true), newRepo(t, true)
		m := NewManager(t.TempDir(), nil)
		m.Keep = 2
		t.Cleanup(func() { m.Close() })
		a, err := m.Prepare(ctx, repoA, "main", "ticketd/1-a")
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Remove(ctx, a, false); err != nil {
			t.Fatal(err)
		}
		b, err := m.Prepare(ctx, repoB, "main", "ticketd/2-b")
		if err != nil {
			t.Fatal(err)
		}
		if b.gitDir == a.gitDir {
			t.Fatal("repository B got repository A's kept tree")
		}
	})
	t.Run("past Keep and after Close", func(t *testing.T) {
		repo := newRepo(t, true)
		m := NewManager(t.TempDir(), nil)
		m.Keep = 1
		var trees []*Tree
		for _, b := range []string{"ticketd/1-a", "ticketd/2-b", "ticketd/3-c"} {
			tree, err := m.Prepare(ctx, repo, "main", b)
			if err != nil {
				t.Fatal(err)
			}
			trees = append(trees, tree)
		}
		for _, tree := range trees[:2] {
			if err := m.Remove(ctx, tree, false); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := os.Stat(trees[0].Dir); !os.IsNotExist(err) {
			t.Errorf("the tree kept longest, %s, is still there past Keep=1 (%v)", trees[0].Dir, err)
		}
		if _, err := os.Stat(trees[1].Dir); err != nil {
			t.Errorf("the tree kept last is gone: %v", err)
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		if err := m.Remove(ctx, trees[2], false); err != nil {
			t.Fatal(err)
		}
		for _, tree := range trees {
			if _, err := os.Stat(tree.Dir); !os.IsNotExist(err) {
				t.Errorf("after Close, %s is still there (%v)", tree.Dir, err)
			}
		}
		if out := git(t, repo, "worktree", "list", "--porcelain"); strings.Count(out, "worktree ") != 1 {
			t.Errorf("after Close, worktrees:\n%s", out)
		}
		if got := git(t, repo, "branch", "--list", "ticketd/*"); got != "" {
			t.Errorf("branches left: %q", got)
		}
	})
}
