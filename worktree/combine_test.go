package worktree

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestApplyBranchIgnoresDiffConfig: the patch ApplyBranch hands to git apply is read with
// git diff, whose output the repository's own config shapes: diff.noprefix drops the a/ and
// b/ that git apply strips, color.ui=always colours every line. Either made every fix fail
// to apply in the night's agreement check.
func TestApplyBranchIgnoresDiffConfig(t *testing.T) {
	ctx := context.Background()
	for _, kv := range [][2]string{{"diff.noprefix", "true"}, {"color.ui", "always"}, {"diff.mnemonicPrefix", "true"}, {"diff.relative", "true"}} {
		t.Run(kv[0], func(t *testing.T) {
			repo := newRepo(t, true)
			git(t, repo, "checkout", "-q", "-b", "ticketd/1-fix")
			writeFile(t, filepath.Join(repo, "stats.py"), "def mean(xs):\n    return sum(xs) / len(xs) if xs else 0.0\n")
			git(t, repo, "commit", "-q", "-am", "fix")
			git(t, repo, "checkout", "-q", "main")
			git(t, repo, "config", kv[0], kv[1])
			m := NewManager(t.TempDir(), nil)
			tree, err := m.Prepare(ctx, repo, "main", "ticketd/2-agree")
			if err != nil {
				t.Fatal(err)
			}
			if err := tree.ApplyBranch(ctx, "ticketd/1-fix"); err != nil {
				t.Fatalf("ApplyBranch with %s=%s in the repository's config: %v", kv[0], kv[1], err)
			}
			if data, err := os.ReadFile(filepath.Join(tree.Dir, "stats.py")); err != nil || string(data) != "def mean(xs):\n    return sum(xs) / len(xs) if xs else 0.0\n" {
				t.Errorf("stats.py after ApplyBranch: %q, %v; want the fix", data, err)
			}
		})
	}
}
