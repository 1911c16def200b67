package worktree

import (
	"context"
	"path/filepath"
	"testing"
)

// BenchmarkPrepareRemove measures one attempt's worktree overhead on a small
// repository: Prepare, a one-file change, Diff, Commit and Remove.
func BenchmarkPrepareRemove(b *testing.B) {
	ctx := context.Background()
	repo := newRepo(b, true)
	m := NewManager(b.TempDir(), nil)
	for i := 0; b.Loop(); i++ {
		tree, err := m.Prepare(ctx, repo, "main", BranchName(int64(i), "bench"))
		if err != nil {
			b.Fatal(err)
		}
		writeFile(b, filepath.Join(tree.Dir, "stats.py"), "changed\n")
		if _, err := tree.Diff(ctx); err != nil {
			b.Fatal(err)
		}
		if _, err := tree.Commit(ctx, "bench"); err != nil {
			b.Fatal(err)
		}
		if err := m.Remove(ctx, tree, false); err != nil {
			b.Fatal(err)
		}
	}
}
