package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/store"
)

// TestPushRemoteRefuses: the push remote refuses the night's fix (a pre-receive hook), or
// cannot be reached. Before, the push failure was a warning in the log and a note on the
// ticket, and the night said ok (exit 0) with every fix left on this machine's disk. Now the
// ticket is done and uncharged as before, and the night is partial naming the remote and
// its answer.
func TestPushRemoteRefuses(t *testing.T) {
	t.Parallel() // nights of their own: repository, store, model server
	realNight(t)
	for _, tc := range []struct {
		name, words string
		remote      func(t *testing.T, dir string) string
	}{
		{"pre-receive hook declines", "pre-receive hook declined", func(t *testing.T, dir string) string {
			bare := filepath.Join(dir, "pub.git")
			git(t, dir, "init", "-q", "--bare", bare)
			write(t, filepath.Join(bare, "hooks", "pre-receive"), "#!/bin/sh\necho 'branch pushes are closed tonight' >&2\nexit 1\n")
			if err := os.Chmod(filepath.Join(bare, "hooks", "pre-receive"), 0o755); err != nil {
				t.Fatal(err)
			}
			return bare
		}},
		{"remote gone", "does not appear to be a git repository", func(t *testing.T, dir string) string {
			return filepath.Join(dir, "no-such-remote.git")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, 1)
			git(t, f.repo, "remote", "add", "pub", tc.remote(t, f.dir))
			_, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
			cfg := f.config(t, url, 1)
			r := cfg.Repos["shop"]
			r.PushRemote = "pub"
			cfg.Repos["shop"] = r
			st, logs, done := faultNight(t, cfg, openStore(t, cfg), nil)
			rep := waitNight(t, done, logs)
			t.Logf("night %s: %s", rep.Outcome, rep.Error)
			tk, _ := st.Get(context.Background(), 1)
			if tk.State != store.StateDone || tk.Attempts != 1 {
				t.Errorf("ticket: %s after %d attempt(s) (%s); want done at its first attempt", tk.State, tk.Attempts, tk.Reason)
			}
			if rep.Outcome != store.OutcomePartial || !strings.Contains(rep.Error, "not pushed") || !strings.Contains(rep.Error, "1 to pub") ||
				!strings.Contains(rep.Error, tc.words) {
				t.Errorf("night %s (%s); want partial naming the remote pub and %q", rep.Outcome, rep.Error, tc.words)
			}
		})
	}
}

// TestPushFixPrunesReleased: once a done ticket's fix is on the push remote, the
// released-attempt branches this node pushed there for it are deleted from the remote. Before,
// they stayed for good on a push remote that is not GitHub (the publisher prunes GitHub's),
// one more for every ticket a night stopped. Left alone: a released branch someone moved on
// the remote since, one this node never pushed, a charged attempt's kept branch, another
// ticket's, and every branch of the clone itself.
func TestPushFixPrunesReleased(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, 1)
	bare := filepath.Join(f.dir, "pub.git")
	git(t, f.dir, "init", "-q", "--bare", bare)
	git(t, f.repo, "remote", "add", "pub", bare)
	st, err := store.Open(ctx, filepath.Join(f.dir, "t.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	id, _, err := st.Enqueue(ctx, store.NewTicket{Source: "test", ExternalID: "one", Repo: "shop", Title: "one"})
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := st.Enqueue(ctx, store.NewTicket{Source: "test", ExternalID: "two", Repo: "shop", Title: "two"})
	if err != nil {
		t.Fatal(err)
	}
	branches := map[string]struct {
		pushed bool   // this node's note says it pushed the branch
		remote string // where the remote's branch is: "ours", "moved"
		kept   bool   // want it still on the remote afterwards
	}{
		fmt.Sprintf("ticketd/%d-attempt-1-released", id):    {pushed: true, remote: "ours"},
		fmt.Sprintf("ticketd/%d-attempt-2-released", id):    {pushed: true, remote: "moved", kept: true},
		fmt.Sprintf("ticketd/%d-attempt-3-released", id):    {remote: "ours", kept: true},
		fmt.Sprintf("ticketd/%d-attempt-1", id):             {pushed: true, remote: "ours", kept: true},
		fmt.Sprintf("ticketd/%d-attempt-1-released", other): {pushed: true, remote: "ours", kept: true},
		fmt.Sprintf("ticketd/%d1-attempt-1-released", id):   {pushed: true, remote: "ours", kept: true},
	}
	git(t, f.repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "partial work")
	r := config.Repo{Path: f.repo, PushRemote: "pub"}
	for b, c := range branches {
		git(t, f.repo, "branch", b)
		switch c.remote {
		case "ours":
			git(t, f.repo, "push", "-q", "pub", b)
		case "moved":
			git(t, f.repo, "push", "-q", "pub", "HEAD~1:refs/heads/"+b)
		}
		owner := id
		if strings.HasPrefix(b, fmt.Sprintf("ticketd/%d-", other)) {
			owner = other
		}
		if c.pushed {
			if err := st.AddNote(ctx, owner, st.Node(), pushedNote+b+" to pub"); err != nil {
				t.Fatal(err)
			}
		}
	}
	fix := fmt.Sprintf("ticketd/%d-one", id)
	git(t, f.repo, "branch", fix)
	d := &Daemon{Store: st, Logger: slog.New(slog.DiscardHandler)}
	if !d.pushFix(ctx, d.logger(), r, id, fix) {
		t.Fatal("pushFix: the fix was not pushed")
	}
	onRemote := git(t, bare, "branch", "--list", "ticketd/*")
	if !strings.Contains(onRemote, fix) {
		t.Errorf("remote branches %q: want the fix %s", onRemote, fix)
	}
	for b, c := range branches {
		if got := strings.Contains(onRemote, b+"\n") || strings.HasSuffix(onRemote, b); got != c.kept {
			t.Errorf("%s on the remote afterwards: %v, want %v (remote branches %q)", b, got, c.kept, onRemote)
		}
		if local := git(t, f.repo, "branch", "--list", b); local == "" {
			t.Errorf("%s: the clone's own branch was deleted", b)
		}
	}
}
