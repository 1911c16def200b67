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

// TestDeleteFromRemote: a branch is deleted from the remote only while it points where the
// clone's own branch does; one moved by someone else, or gone already, is left alone and
// reported not deleted, without an error. A remote the clone lacks is an error naming it.
func TestDeleteFromRemote(t *testing.T) {
	for _, tt := range []struct {
		name        string
		remoteAt    string // "ours", "moved", "none"
		remote      string
		wantDeleted bool
		wantErr     string
		wantLeft    bool // the remote still has the branch afterwards
	}{
		{name: "ours", remoteAt: "ours", remote: "origin", wantDeleted: true},
		{name: "moved by someone else", remoteAt: "moved", remote: "origin", wantLeft: true},
		{name: "gone already", remoteAt: "none", remote: "origin"},
		{name: "unknown remote", remoteAt: "ours", remote: "upstream", wantErr: `remote "upstream"`, wantLeft: true},
		{name: "dash remote", remoteAt: "ours", remote: "--upload-pack=x", wantErr: "dash", wantLeft: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			clone, bare := filepath.Join(dir, "clone"), filepath.Join(dir, "shared.git")
			gitT(t, dir, "init", "-q", "--bare", bare)
			gitT(t, dir, "init", "-q", clone)
			gitT(t, clone, "commit", "-q", "--allow-empty", "-m", "base")
			gitT(t, clone, "commit", "-q", "--allow-empty", "-m", "attempt")
			gitT(t, clone, "branch", "ticketd/1-attempt-1-released")
			gitT(t, clone, "remote", "add", "origin", bare)
			const branch = "refs/heads/ticketd/1-attempt-1-released"
			switch tt.remoteAt {
			case "ours":
				gitT(t, clone, "push", "-q", bare, branch+":"+branch)
			case "moved":
				gitT(t, clone, "push", "-q", bare, "HEAD~1:"+branch)
			}
			deleted, err := DeleteFromRemote(context.Background(), clone, tt.remote, "ticketd/1-attempt-1-released", "")
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("DeleteFromRemote: %v; want error containing %q", err, tt.wantErr)
			}
			if deleted != tt.wantDeleted {
				t.Errorf("deleted = %v, want %v", deleted, tt.wantDeleted)
			}
			left := strings.Contains(gitT(t, bare, "branch", "--list", "ticketd/*"), "ticketd/1-attempt-1-released")
			if left != tt.wantLeft {
				t.Errorf("remote still has the branch: %v, want %v", left, tt.wantLeft)
			}
		})
	}
}
