package worktree

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRemoveStaleLocks: a lock file in ticketd's own branches that an earlier ticketd's
// killed git left (older than this start, no holder) is removed; one a live process holds
// open, one made since the start, and any while a git process works in the repository are
// left, each saying why; a lock on a user's branch is never looked at.
func TestRemoveStaleLocks(t *testing.T) {
	started := time.Now()
	old := started.Add(-time.Hour)
	for _, tc := range []struct {
		name    string
		lock    string // under .git
		mtime   time.Time
		setup   func(t *testing.T, repo, lock string)
		removed bool
		kept    string // in the reason it was kept
	}{
		{name: "left by a killed git", lock: "refs/heads/ticketd/3-fix.lock", mtime: old, removed: true},
		{name: "nested branch name", lock: "refs/heads/ticketd/baseline/x.lock", mtime: old, removed: true},
		{name: "held open by a live process", lock: "refs/heads/ticketd/3-fix.lock", mtime: old, kept: "held open by process",
			setup: func(t *testing.T, _, lock string) { holdOpen(t, lock) }},
		{name: "made since the start", lock: "refs/heads/ticketd/3-fix.lock", mtime: started.Add(time.Second), kept: "after this ticketd started"},
		{name: "a git process runs in the repository", lock: "refs/heads/ticketd/3-fix.lock", mtime: old, kept: "a git process",
			setup: func(t *testing.T, repo, _ string) { runningGit(t, repo) }},
		{name: "a user's branch", lock: "refs/heads/feature.lock", mtime: old},
		{name: "the main index", lock: "index.lock", mtime: old},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := newRepo(t, true)
			lock := filepath.Join(repo, ".git", filepath.FromSlash(tc.lock))
			writeFile(t, lock, "0123\n")
			if err := os.Chtimes(lock, tc.mtime, tc.mtime); err != nil {
				t.Fatal(err)
			}
			if tc.setup != nil {
				tc.setup(t, repo, lock)
			}
			m := NewManager(t.TempDir(), nil)
			found, err := m.RemoveStaleLocks(context.Background(), repo, started)
			if err != nil {
				t.Fatal(err)
			}
			_, statErr := os.Stat(lock)
			t.Logf("found %+v; lock exists: %v", found, statErr == nil)
			own := strings.HasPrefix(tc.lock, OwnRefs)
			switch {
			case !own:
				if len(found) != 0 || statErr != nil {
					t.Errorf("found %+v, lock exists %v; want a lock outside ticketd's branches neither reported nor removed", found, statErr == nil)
				}
			case len(found) != 1 || found[0].Path != lock:
				t.Errorf("found %+v; want %s reported", found, lock)
			case tc.removed:
				if !found[0].Removed || statErr == nil {
					t.Errorf("found %+v, lock exists %v; want it removed", found, statErr == nil)
				}
			default:
				if found[0].Removed || statErr != nil || !strings.Contains(found[0].Kept, tc.kept) {
					t.Errorf("found %+v, lock exists %v; want it kept, saying %q", found, statErr == nil, tc.kept)
				}
			}
		})
	}
}

// holdOpen starts a process that holds path open until the test ends.
func holdOpen(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command("sleep", "600")
	cmd.ExtraFiles = []*os.File{f}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
}

// runningGit starts a git in repo that waits for its input until the test ends.
func runningGit(t *testing.T, repo string) {
	t.Helper()
	cmd := exec.Command("git", "hash-object", "--stdin")
	cmd.Dir = repo
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); io.Copy(io.Discard, out); cmd.Wait() })
	// Its working directory shows in /proc once it runs: wait for that.
	dir, err := filepath.EvalSymlinks(repo)
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "git runs in the repository", func() bool {
		ps, err := scanProcesses()
		return err == nil && ps.gitIn([]string{dir}) != ""
	})
}
