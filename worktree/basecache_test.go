package worktree

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestFileAtBaseKept: a file read at a base commit is answered again without git (the
// repository's objects are gone by then), a missing file too; a caller changing its copy
// changes no later answer; a failed read is not kept.
func TestFileAtBaseKept(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, true)
	writeFile(t, filepath.Join(repo, "pyproject.toml"), "[tool.pytest.ini_options]\n")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "config")
	tree, err := NewManager(t.TempDir(), nil).Prepare(ctx, repo, "main", "ticketd/1-kept")
	if err != nil {
		t.Fatal(err)
	}
	data, found, err := tree.FileAtBase(ctx, "pyproject.toml")
	if err != nil || !found || string(data) != "[tool.pytest.ini_options]\n" {
		t.Fatalf("first read = %q, %v, %v", data, found, err)
	}
	data[0] = 'X'
	if _, found, err := tree.FileAtBase(ctx, "missing.cfg"); err != nil || found {
		t.Fatalf("missing file = %v, %v; want not found", found, err)
	}
	// Take the objects away: only a kept answer can still be given.
	if err := os.Rename(filepath.Join(repo, ".git", "objects"), filepath.Join(repo, ".git", "objects-gone")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Rename(filepath.Join(repo, ".git", "objects-gone"), filepath.Join(repo, ".git", "objects")) })
	data, found, err = tree.FileAtBase(ctx, "pyproject.toml")
	if err != nil || !found || string(data) != "[tool.pytest.ini_options]\n" {
		t.Fatalf("kept read = %q, %v, %v; want the file as first read, unchanged by the caller", data, found, err)
	}
	if _, found, err := tree.FileAtBase(ctx, "missing.cfg"); err != nil || found {
		t.Fatalf("kept missing file = %v, %v; want not found", found, err)
	}
	if _, _, err := tree.FileAtBase(ctx, "README.md"); err == nil {
		t.Fatal("a file never read, with the objects gone: no error")
	}
	os.Rename(filepath.Join(repo, ".git", "objects-gone"), filepath.Join(repo, ".git", "objects"))
	if _, _, err := tree.FileAtBase(ctx, "README.md"); err != nil {
		t.Fatalf("a failed read was kept: %v", err)
	}
}

// TestBaseCacheBounded: the cache drops its least recently used answers to stay within its
// bytes, and never keeps one file larger than its entry bound.
func TestBaseCacheBounded(t *testing.T) {
	key := func(i int) baseKey { return baseKey{commonDir: "/r/.git", commit: "c", rel: fmt.Sprint(i)} }
	c := newBaseCache(1000, 300)
	for i := range 5 {
		c.put(key(i), baseAnswer{data: make([]byte, 200), found: true})
		if i == 1 {
			c.get(key(0)) // 0 is now more recent than 1
		}
	}
	if c.size > 1000 {
		t.Errorf("size %d, want at most 1000", c.size)
	}
	tests := []struct {
		i    int
		kept bool
	}{{0, true}, {1, false}, {2, true}, {3, true}, {4, true}}
	for _, tt := range tests {
		if _, ok := c.get(key(tt.i)); ok != tt.kept {
			t.Errorf("entry %d kept = %v, want %v", tt.i, ok, tt.kept)
		}
	}
	c.put(key(9), baseAnswer{data: make([]byte, 400), found: true})
	if _, ok := c.get(key(9)); ok {
		t.Error("a file larger than the entry bound was kept")
	}
}

func TestFullHash(t *testing.T) {
	tests := []struct {
		s    string
		want bool
	}{
		{"028c440b9cd5773209d8f0a96293f865a1acb144", true},
		{"028c440b9cd5773209d8f0a96293f865a1acb144028c440b9cd5773209d8f0a9", true},
		{"028c440", false},
		{"main", false},
		{"028C440B9CD5773209D8F0A96293F865A1ACB144", false},
		{"refs/heads/main/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false},
	}
	for _, tt := range tests {
		if got := fullHash(tt.s); got != tt.want {
			t.Errorf("fullHash(%q) = %v, want %v", tt.s, got, tt.want)
		}
	}
}
