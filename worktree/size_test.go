package worktree

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrepareRefusesTooLargeCheckout: a commit holding a blob of many megabytes of zeros
// (a few kilobytes in the repository, a zip bomb to a checkout) is refused before anything
// is written, with an error that names the file, its size, the limit and what to do; a limit
// it fits is no obstacle.
func TestPrepareRefusesTooLargeCheckout(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, true)
	big := filepath.Join(repo, "data", "bomb.bin")
	if err := os.MkdirAll(filepath.Dir(big), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(big, make([]byte, 3<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, size := range map[string]int{"data/half.bin": 1 << 19, "data/two.bin": 2 << 20, "a.txt": 10, "b.txt": 20} {
		if err := os.WriteFile(filepath.Join(repo, name), make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "--quiet", "-m", "add a bomb")

	root := filepath.Join(t.TempDir(), "trees")
	m := NewManager(root, nil)
	m.MaxCheckout = 1 << 20
	_, err := m.Prepare(ctx, repo, "main", "ticketd/1-bomb")
	if !errors.Is(err, ErrCheckoutTooLarge) {
		t.Fatalf("Prepare of a 5.5 MiB checkout under a 1 MiB limit: %v; want ErrCheckoutTooLarge", err)
	}
	for _, want := range []string{"the largest: data/bomb.bin (3.0 MiB), data/two.bin (2.0 MiB), data/half.bin (512.0 KiB);", "1.0 MiB", "max_worktree_size", "nothing was checked out"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("the refused Prepare left %d entries under the workspace", len(entries))
	}
	if out := git(t, repo, "branch", "--list", "ticketd/1-bomb"); strings.TrimSpace(out) != "" {
		t.Errorf("the refused Prepare made the branch: %q", out)
	}

	m.MaxCheckout = 6 << 20
	tree, err := m.Prepare(ctx, repo, "main", "ticketd/1-bomb")
	if err != nil {
		t.Fatalf("Prepare of a 5.5 MiB checkout under a 6 MiB limit: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(tree.Dir, "data", "bomb.bin")); err != nil || fi.Size() != 3<<20 {
		t.Errorf("data/bomb.bin in the tree: %v, %v", fi, err)
	}
}
