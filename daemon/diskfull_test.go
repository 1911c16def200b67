package daemon

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/store"
)

// TestDiskFullAtEachStep: a disk of the machine fills at one step of a ticket's attempt and
// stays full: the workspace's as the maker submits (the checks, which write beside the
// tests, run on a full disk); the repository's as the maker submits (git cannot write the
// index it reads the change with) and as the judge passes the fix (git cannot write its
// commit); the output folder's as the fix's report is written. Whatever the step, the
// world's failure is no ticket's: the ticket is not charged (released as the machine's, or
// done with its one attempt when the fix was committed), the model never reads the full
// disk as a mistake of its own, no worktree is left registered, and the night is partial
// naming the full disk. (A suite that writes nothing passes on a full disk, and its night
// is rightly ok: the case that matters is the one whose checks write.)
func TestDiskFullAtEachStep(t *testing.T) {
	realNight(t)
	for _, tc := range []struct {
		name   string
		role   string // the request held while the disk fills
		marker string // in the held request
		where  string // what lives on the small disk: "workspace+writes", "repo", "output"
	}{
		{"workspace mid-check where the tests write", "maker", "edited shop/rule_00.py", "workspace+writes"},
		{"repository mid-check", "maker", "edited shop/rule_00.py", "repo"},
		{"repository mid-commit", "judge", "# Ticket ", "repo"},
		{"output mid-report", "judge", "# Ticket ", "output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // a night of its own: repository, store, model server, disk
			disk := smallDisk(t, "16m")
			f := newFixture(t, 1)
			server, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
			g, gated := newGateOn(t, url, tc.role, tc.marker)
			cfg := f.config(t, gated, 1)
			switch tc.where {
			case "workspace+writes":
				// The suite writes a scratch file beside itself, as many do (a cache, a
				// log): on a full disk the checks fail for the machine, not for the fix.
				write(t, filepath.Join(f.repo, "conftest.py"), "import os\n\n\ndef pytest_sessionstart(session):\n    with open(os.path.join(str(session.config.rootpath), 'scratch.log'), 'w') as f:\n        f.write('x' * 65536)\n")
				git(t, f.repo, "add", "conftest.py")
				git(t, f.repo, "commit", "-q", "-m", "a suite that writes")
				cfg.Workspace = filepath.Join(disk, "work")
			case "repo":
				repo := filepath.Join(disk, "shop")
				if out, err := exec.Command("cp", "-a", f.repo, repo).CombinedOutput(); err != nil {
					t.Fatalf("copy the repository onto the small disk: %v\n%s", err, out)
				}
				r := cfg.Repos["shop"]
				r.Path = repo
				cfg.Repos["shop"] = r
				f.repo = repo
			case "output":
				cfg.Output = filepath.Join(disk, "results")
			}
			st, logs, done := faultNight(t, cfg, openStore(t, cfg), nil)
			select {
			case <-g.held:
			case <-time.After(5 * time.Minute):
				t.Fatalf("no %s request holding %q within 5 minutes; logs:\n%s", tc.role, tc.marker, logs.String())
			}
			filler := fill(t, disk)
			defer os.Remove(filler)
			g.release()
			rep := waitNight(t, done, logs)
			t.Logf("night %s: %s", rep.Outcome, rep.Error)
			checkDiskFullNight(t, st, f, rep, server)
			if t.Failed() {
				t.Logf("logs:\n%s", logs.String())
			}
		})
	}
}

// checkDiskFullNight checks the invariants of a night whose disk filled under its one ticket.
func checkDiskFullNight(t *testing.T, st *store.Store, f fixture, rep NightReport, server *scriptedmodel.Server) {
	t.Helper()
	ctx := context.Background()
	tk, err := st.Get(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	reasons, charged := released(t, st, 1)
	switch tk.State {
	case store.StateQueued:
		if tk.Attempts != 0 || charged || len(reasons) != 1 || !strings.HasPrefix(reasons[0], "machine:") || !strings.Contains(reasons[0], "no space left on device") {
			t.Errorf("ticket: queued after %d attempt(s), charged %v, releases %q; want uncharged, released once as the machine's naming the full disk", tk.Attempts, charged, reasons)
		}
	case store.StateDone:
		if tk.Attempts != 1 || charged {
			t.Errorf("ticket: done after %d attempt(s), charged %v; want done with its one attempt", tk.Attempts, charged)
		}
	default:
		t.Errorf("ticket: %s after %d attempt(s) (%s), charged %v; want queued uncharged, or done with its one attempt", tk.State, tk.Attempts, tk.Reason, charged)
	}
	for _, r := range server.Requests() {
		if body := strings.ToLower(string(r.Body)); r.Role == "maker" && (strings.Contains(body, "no space left on device") || strings.Contains(body, "out of diskspace")) {
			t.Errorf("the maker was shown the full disk as a mistake of its own:\n%s", clipBytes(r.Body, 400))
		}
	}
	if rep.Outcome != store.OutcomePartial || !strings.Contains(rep.Error, "no space left on device") {
		t.Errorf("night %s (%s); want partial naming the full disk", rep.Outcome, rep.Error)
	}
	if out, err := exec.Command("git", "-C", f.repo, "worktree", "list", "--porcelain").CombinedOutput(); err != nil || strings.Count(string(out), "worktree ") != 1 {
		t.Errorf("worktrees left registered (%v):\n%s", err, out)
	}
}
