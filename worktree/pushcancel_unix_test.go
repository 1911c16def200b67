//go:build unix

package worktree

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCancelledPushLeavesNoRefLock cancels a push to a local remote while the remote holds
// the branch's ref lock (its reference-transaction hook waits in "prepared"): git must be
// let go of the lock, or every later push of that branch fails with "cannot lock ref"
// until a human deletes the file. The hook's own process does not outlive the push.
func TestCancelledPushLeavesNoRefLock(t *testing.T) {
	for _, tt := range []struct{ name, trap string }{
		{"hook stops on SIGTERM", ""},
		{"hook ignores SIGTERM", "trap '' TERM; "},
	} {
		t.Run(tt.name, func(t *testing.T) { testCancelledPush(t, tt.trap) })
	}
}

func testCancelledPush(t *testing.T, trap string) {
	src, remote := t.TempDir(), filepath.Join(t.TempDir(), "remote.git")
	gitT(t, src, "init", "-q")
	gitT(t, src, "commit", "-q", "--allow-empty", "-m", "a")
	gitT(t, src, "branch", "ticketd/1-fix")
	gitT(t, filepath.Dir(remote), "init", "-q", "--bare", remote)
	mark := filepath.Join(t.TempDir(), "prepared")
	hook := "#!/bin/sh\nif [ \"$1\" = prepared ]; then " + trap + "echo $$ > '" + mark + ".tmp'; mv '" + mark + ".tmp' '" + mark + "'; sleep 600; fi\n"
	if err := os.WriteFile(filepath.Join(remote, "hooks", "reference-transaction"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pushed := make(chan error, 1)
	go func() { pushed <- Push(ctx, src, remote, "ticketd/1-fix", "") }()
	var pid int
	waitUntil(t, "the remote holds the ref lock", func() bool {
		b, err := os.ReadFile(mark)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	if locks, _ := filepath.Glob(filepath.Join(remote, "refs", "heads", "ticketd", "*.lock")); len(locks) == 0 {
		t.Fatal("the hook runs but the remote holds no ref lock: this git takes its locks elsewhere, the test proves nothing")
	}
	cancel()
	if err := <-pushed; err == nil {
		t.Fatal("a cancelled push succeeded")
	}
	if locks, _ := filepath.Glob(filepath.Join(remote, "refs", "heads", "ticketd", "*.lock")); len(locks) > 0 {
		t.Errorf("the cancelled push left %v in the remote", locks)
	}
	waitUntil(t, "the hook's process is gone", func() bool {
		return syscall.Kill(pid, 0) != nil
	})
	os.Remove(filepath.Join(remote, "hooks", "reference-transaction"))
	if err := Push(context.Background(), src, remote, "ticketd/1-fix", ""); err != nil {
		t.Errorf("push after the cancelled one: %v", err)
	}
}

// waitUntil polls cond until it holds, failing the test after a minute.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
	}
}
