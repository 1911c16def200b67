package worktree

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrepareFrom: a tree prepared from a fix branch starts at its head while its base stays
// the base, and ChangesSince reads the fix from git's objects; a start that does not descend
// from the base, or does not exist, is refused.
func TestPrepareFrom(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, true)
	base := git(t, repo, "rev-parse", "HEAD")
	git(t, repo, "checkout", "-q", "-b", "ticketd/1-fix")
	writeFile(t, filepath.Join(repo, "stats.py"), "def mean(xs):\n    return sum(xs) / len(xs) if xs else 0.0\n")
	git(t, repo, "commit", "-q", "-am", "fix")
	fix := git(t, repo, "rev-parse", "HEAD")
	git(t, repo, "checkout", "-q", "--orphan", "elsewhere")
	git(t, repo, "commit", "-q", "--allow-empty", "-m", "unrelated history")
	git(t, repo, "checkout", "-q", "main")

	m := NewManager(t.TempDir(), nil)
	tree, err := m.PrepareFrom(ctx, repo, "main", "ticketd/1-fix-r2", "ticketd/1-fix")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Remove(context.Background(), tree, false) })
	if tree.BaseCommit != base {
		t.Errorf("base %s; want main's %s", tree.BaseCommit, base)
	}
	if head := git(t, tree.Dir, "rev-parse", "HEAD"); head != fix {
		t.Errorf("tree at %s; want the fix branch's head %s", head, fix)
	}
	changes, err := tree.ChangesSince(ctx)
	if err != nil || len(changes) != 1 || changes[0].Path != "stats.py" || string(changes[0].Data) != "def mean(xs):\n    return sum(xs) / len(xs) if xs else 0.0\n" {
		t.Fatalf("ChangesSince = %+v, %v; want the fix's stats.py", changes, err)
	}
	if _, err := m.PrepareFrom(ctx, repo, "main", "ticketd/1-x", "elsewhere"); err == nil {
		t.Error("a start that does not descend from the base was accepted")
	}
	if _, err := m.PrepareFrom(ctx, repo, "main", "ticketd/1-y", "ticketd/gone"); !errors.Is(err, ErrUnknownRef) {
		t.Errorf("a missing start: %v; want ErrUnknownRef", err)
	}
	if head, err := BranchHead(ctx, repo, "ticketd/1-fix"); err != nil || head != fix {
		t.Errorf("BranchHead = %s, %v; want %s", head, err, fix)
	}
}

// TestChangesSinceAsCheckedOut: in a repository that checks files out with CRLF, the fix a
// round goes on from reads as the working copy holds it, so none of its files is taken for
// something the checks left, and its diff is the branch's.
func TestChangesSinceAsCheckedOut(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, true)
	writeFile(t, filepath.Join(repo, ".gitattributes"), "*.py text eol=crlf\n")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "attributes")
	git(t, repo, "checkout", "-q", "-b", "ticketd/1-fix")
	writeFile(t, filepath.Join(repo, "stats.py"), "def mean(xs):\r\n    return sum(xs) / len(xs) if xs else 0.0\r\n")
	git(t, repo, "commit", "-q", "-am", "fix")
	git(t, repo, "checkout", "-q", "main")

	m := NewManager(t.TempDir(), nil)
	tree, err := m.PrepareFrom(ctx, repo, "main", "ticketd/1-fix-r2", "ticketd/1-fix")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Remove(context.Background(), tree, false) })
	changes, err := tree.ChangesSince(ctx)
	if err != nil || len(changes) != 1 {
		t.Fatalf("ChangesSince = %+v, %v; want the fix's stats.py", changes, err)
	}
	if left, err := tree.Leftovers(ctx, changes); err != nil || len(left) != 0 {
		t.Errorf("Leftovers = %v, %v; want none: the fix's own file, as checked out (%q)", left, err, changes[0].Data)
	}
	diff, err := tree.DiffChanges(ctx, changes)
	if err != nil || !strings.Contains(diff, "+    return sum(xs) / len(xs) if xs else 0.0\n") || strings.Contains(diff, "\r") {
		t.Errorf("DiffChanges of the fix as checked out = %q, %v; want the fix's lines as the branch stores them", diff, err)
	}
}
