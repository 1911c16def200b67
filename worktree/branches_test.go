package worktree

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSaveOver: a released attempt's branch is moved to the latest stop of the same attempt
// instead of a new branch per stop, only forward, so a push remote takes each stop without a
// force (ticketd never forces); SaveAs never moves one; a branch checked out in a worktree
// is never moved.
func TestSaveOver(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, true)
	remote := filepath.Join(t.TempDir(), "remote.git")
	git(t, repo, "init", "--quiet", "--bare", remote)
	m := NewManager(filepath.Join(t.TempDir(), "trees"), nil)
	const kept = "ticketd/1-attempt-1-released"
	var heads []string
	for i := range 2 {
		tree, err := m.Prepare(ctx, repo, "main", "ticketd/1-mean")
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(tree.Dir, "stats.py"), strings.Repeat("# stop\n", i+1))
		if _, err := tree.Commit(ctx, "stopped"); err != nil {
			t.Fatal(err)
		}
		if err := tree.SaveOver(ctx, kept); err != nil {
			t.Fatalf("SaveOver #%d: %v", i+1, err)
		}
		if err := tree.SaveAs(ctx, kept); err == nil {
			t.Errorf("SaveAs over an existing branch: want ErrBranchExists")
		}
		heads = append(heads, git(t, tree.Dir, "rev-parse", "HEAD"))
		if err := tree.SaveOver(ctx, "ticketd/1-mean"); err == nil {
			t.Errorf("SaveOver of the branch checked out in the tree: want a refusal")
		}
		if err := m.Remove(ctx, tree, false); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("git", "-C", repo, "push", "--quiet", remote, kept+":"+kept).CombinedOutput(); err != nil {
			t.Fatalf("push #%d without force: %v\n%s", i+1, err, out)
		}
	}
	// The second stop started from the base again: the branch holds its files, in a merge
	// that keeps the first stop's commit too, so it only moved forward.
	if got, want := git(t, repo, "rev-parse", kept+"^{tree}"), git(t, repo, "rev-parse", heads[1]+"^{tree}"); got != want {
		t.Errorf("%s holds tree %s, want the second stop's %s", kept, got, want)
	}
	if got := git(t, repo, "rev-list", "--parents", "-n", "1", kept); !strings.HasSuffix(got, " "+heads[1]+" "+heads[0]) {
		t.Errorf("%s's commit and parents = %s, want the second stop's commit, then the first's", kept, got)
	}
	if list := git(t, repo, "branch", "--list", "ticketd/1-attempt-*"); strings.Count(list, "ticketd/") != 1 {
		t.Errorf("attempt branches = %q, want the one", list)
	}
}
