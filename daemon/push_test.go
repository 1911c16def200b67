package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
