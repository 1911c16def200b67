package daemon

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/worktree"
)

// TestStaleLockLeftByAKilledGit: a lock file that a git killed with an earlier ticketd left
// on the ticket's branch (older than this process, held by no process) is removed at the
// night's start: the night works the ticket, the log warns naming the file, and /metrics
// counts it. Before, the first claim met the lock, the repository was paused and the night
// partial until an operator removed the file (TestSIGKILLNight's failure). A lock that a
// live process holds open is left alone and reported, and the night goes on as before
// (paused, naming the file); a lock on a user's branch is never touched.
func TestStaleLockLeftByAKilledGit(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("tells a stale lock by /proc")
	}
	t.Parallel() // nights of their own: repository, store, model server
	realNight(t)
	for _, tc := range []struct {
		name    string
		branch  bool // the lock is on the ticket's branch (ticketd's namespace); else a user's
		held    bool // a live process holds it open
		removed bool
	}{
		{name: "left by a killed git", branch: true, removed: true},
		{name: "held open by a live process", branch: true, held: true},
		{name: "on a user's branch", branch: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, 1)
			_, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
			cfg := f.config(t, url, 1)
			lock := filepath.Join(f.repo, ".git", "refs", "heads", "feature.lock")
			if tc.branch {
				lock = filepath.Join(f.repo, ".git", "refs", "heads", worktree.BranchName(1, f.cases[0].Match)+".lock")
			}
			write(t, lock, "")
			past := processStart.Add(-time.Hour) // made before this process started
			if err := os.Chtimes(lock, past, past); err != nil {
				t.Fatal(err)
			}
			if tc.held {
				holdOpen(t, lock)
			}
			var d *Daemon
			st, logs, done := faultNight(t, cfg, openStore(t, cfg), func(dd *Daemon) { d = dd })
			rep := waitNight(t, done, logs)
			tk, _ := st.Get(context.Background(), 1)
			_, statErr := os.Stat(lock)
			removedLogged := strings.Contains(logs.String(), "removed a git lock file") && strings.Contains(logs.String(), "file="+lock)
			keptLogged := strings.Contains(logs.String(), "is left alone") && strings.Contains(logs.String(), "held open by")
			count := removedMetric(t, d)
			t.Logf("night %s (%s); ticket %s; lock exists %v; removal logged %v, kept logged %v; metric %v",
				rep.Outcome, rep.Error, tk.State, statErr == nil, removedLogged, keptLogged, count)
			switch {
			case tc.removed:
				if rep.Outcome != store.OutcomeOK || tk.State != store.StateDone || statErr == nil || !removedLogged || count != 1 {
					t.Errorf("want the lock removed (logged, counted once) and the night ok with the ticket done")
				}
			case tc.held:
				if statErr != nil || !keptLogged || count != 0 || tk.State != store.StateQueued || tk.Attempts != 0 ||
					!strings.Contains(rep.Error, lock) {
					t.Errorf("want the held lock left, reported, the ticket released uncharged and the night naming the file")
				}
			default:
				if statErr != nil || removedLogged || count != 0 || rep.Outcome != store.OutcomeOK || tk.State != store.StateDone {
					t.Errorf("want the user's lock left alone, unreported, and the night ok")
				}
			}
		})
	}
}

// removedMetric is ticketd_stale_git_locks_removed_total as /metrics shows it for d.
func removedMetric(t *testing.T, d *Daemon) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(d.Collectors()...)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() == "ticketd_stale_git_locks_removed_total" && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatal("/metrics has no ticketd_stale_git_locks_removed_total")
	return 0
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
