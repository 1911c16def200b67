package pipeline

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestRepoMapFollowsNoSymlinkOut: the repository map outlines the worktree's own Python files
// and lists, but never reads, a committed symlink — to a host file, through a linked folder
// outside, or to a FIFO (issue 31: host files' def lines went into every request).
func TestRepoMapFollowsNoSymlinkOut(t *testing.T) {
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "host.py"), []byte("def host_secret_function():\n    pass\n"), 0o644)
	tree := t.TempDir()
	os.WriteFile(filepath.Join(tree, "app.py"), []byte("def own_function():\n    pass\n"), 0o644)
	os.Symlink(filepath.Join(outside, "host.py"), filepath.Join(tree, "link.py"))
	os.Symlink(outside, filepath.Join(tree, "vendor"))
	os.Symlink("app.py", filepath.Join(tree, "alias.py"))
	if err := syscall.Mkfifo(filepath.Join(tree, "pipe.py"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := RepoMap(tree, []string{"alias.py", "app.py", "link.py", "pipe.py", "vendor/host.py"})
	if !strings.Contains(got, "def own_function") {
		t.Errorf("the worktree's own file is not outlined:\n%s", got)
	}
	if strings.Contains(got, "host_secret_function") {
		t.Errorf("a file outside the worktree reached the map:\n%s", got)
	}
	for _, f := range []string{"alias.py", "link.py", "pipe.py", "vendor/host.py"} {
		if !strings.Contains(got, f+"\n") {
			t.Errorf("%s is not listed:\n%s", f, got)
		}
	}
}
