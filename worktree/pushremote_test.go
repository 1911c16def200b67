package worktree

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPushToRemoteByName: a branch goes to the bare repository the clone's remote names;
// an unknown remote is an error naming it.
func TestPushToRemoteByName(t *testing.T) {
	dir := t.TempDir()
	clone, bare := filepath.Join(dir, "clone"), filepath.Join(dir, "shared.git")
	run := func(d string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = d
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	run(dir, "init", "-q", "--bare", bare)
	run(dir, "init", "-q", clone)
	run(clone, "commit", "-q", "--allow-empty", "-m", "base")
	run(clone, "branch", "ticketd/1-fix")
	run(clone, "remote", "add", "origin", bare)
	ctx := context.Background()
	if err := PushToRemote(ctx, clone, "origin", "ticketd/1-fix", ""); err != nil {
		t.Fatalf("PushToRemote: %v", err)
	}
	if heads := run(bare, "branch", "--list", "ticketd/*"); !strings.Contains(heads, "ticketd/1-fix") {
		t.Errorf("branches on the remote: %q; want ticketd/1-fix", heads)
	}
	if err := PushToRemote(ctx, clone, "upstream", "ticketd/1-fix", ""); err == nil || !strings.Contains(err.Error(), `no remote "upstream"`) {
		t.Errorf("PushToRemote to an unknown remote: %v; want an error naming it", err)
	}
}
