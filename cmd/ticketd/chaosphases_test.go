package main

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store"
)

// checkIn says whether a check (pytest) runs in a worktree of the workspace whose folder
// name holds part ("-baseline-", "night-suite-").
func checkIn(workspace, part string) bool {
	for pid, cmdline := range processesUnder(workspace) {
		cwd, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd")
		if err == nil && strings.Contains(cmdline, "pytest") && strings.Contains(cwd, part) {
			return true
		}
	}
	return false
}

// TestChaosNightPhases SIGKILLs the built ticketd in the phases of a night TestChaosNight
// does not reach: while the repository's baseline runs (before any ticket is claimed), and
// while the night's whole suite runs over the fixes held for it (every ticket done, nothing
// pushed yet). Each kill is followed by a restart; a last night runs undisturbed. Then every
// ticket is done exactly once with its one attempt (no kill charged), each fix is one commit
// on one branch, on the remote once; no worktree, scratch branch (baseline, night suite) or
// process is left; and each killed night is on record as failed.
func TestChaosNightPhases(t *testing.T) {
	t.Parallel() // a process, folder, database and model server of its own
	if testing.Short() {
		t.Skip("builds the ticketd binary and runs nights with kills (long tier; run without -short)")
	}
	bin := buildTicketd(t)
	const tickets = 4
	c := newChaosNight(t, "sqlite", tickets)
	began := time.Now()
	killed := 0
	for _, phase := range []struct {
		name string
		part string // in the folder of the check running when the kill comes
	}{
		{"baseline", "-baseline-"},
		{"night's whole suite", "night-suite-"},
	} {
		c.fileMore(t, 2)
		for try := 0; ; try++ {
			if try == 4 {
				t.Fatalf("no night reached the %s in 4 starts\n%s", phase.name, c.log(40))
			}
			cmd, done := c.startOnce(t, bin)
			var exit error
			deadline := time.Now().Add(3 * time.Minute) // only keeps a broken daemon from hanging the test
			hit := false
			for !hit && exit == nil {
				select {
				case exit = <-done:
					if exit == nil {
						exit = errors.New("exit 0")
					}
				case <-time.After(5 * time.Millisecond):
					hit = checkIn(c.workspace, phase.part)
				}
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatalf("ticketd once neither reached the %s nor ended within 3 minutes\n%s", phase.name, c.log(30))
				}
			}
			if !hit {
				if c.refusedForCrashing(t) {
					continue
				}
				// The phase passed between two looks (a loaded machine looks seldom): the
				// baseline is kept, so a new base commit makes the next night run it again.
				t.Logf("ticketd once exited (%v) before the %s was seen; again", exit, phase.name)
				c.fileMore(t, 2)
				if phase.part == "-baseline-" {
					gitOut(t, c.repo, "-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-q", "--allow-empty", "-m", "a new base")
				}
				continue
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
				t.Fatal(err)
			}
			<-done
			killed++
			t.Logf("SIGKILLed pid %d in the %s, %s in", cmd.Process.Pid, phase.name, time.Since(began).Round(time.Millisecond))
			break
		}
	}

	c.fileMore(t, tickets)
	for try := 1; ; try++ {
		n := c.runOnce(t, bin)
		if n.code != exitOK && try == 1 && c.refusedForCrashing(t) {
			continue
		}
		if n.code != exitOK {
			t.Fatalf("last night: exit %d, %s (%s)\n%s", n.code, n.run.Outcome, n.run.Error, c.log(40))
		}
		break
	}
	t.Logf("%d kills and the last night: %s", killed, time.Since(began).Round(time.Second))

	var (
		all    []store.Summary
		events = map[int64][]store.Event{}
		runs   []store.Run
	)
	c.look(t, func(s *store.Store) {
		all, _ = s.List(t.Context(), store.Filter{})
		for _, tk := range all {
			events[tk.ID], _ = s.Events(t.Context(), tk.ID)
		}
		runs, _ = s.Runs(t.Context(), 0)
	})
	if len(all) != tickets {
		t.Fatalf("%d tickets in the store, want %d", len(all), tickets)
	}
	var want []string
	for _, tk := range all {
		terminal := 0
		for _, e := range events[tk.ID] {
			if e.ToState.Terminal() && e.FromState != e.ToState {
				terminal++
			}
		}
		if terminal != 1 || tk.State != store.StateDone || tk.Attempts != 1 {
			t.Errorf("ticket %d: %s, %d attempts, %d terminal events (%s); want done once, with one attempt", tk.ID, tk.State, tk.Attempts, terminal, tk.Reason)
		}
		want = append(want, tk.Branch)
		if out := strings.TrimSpace(gitOut(t, c.repo, "rev-list", "--count", "main.."+tk.Branch)); out != "1" {
			t.Errorf("ticket %d's branch %s has %s commits over main; want one", tk.ID, tk.Branch, out)
		}
	}
	c.checkNothingLeft(t, want)
	failed := 0
	for _, r := range runs {
		if r.Outcome == store.OutcomeFailed {
			failed++
		}
	}
	if len(runs) == 0 || runs[0].Outcome != store.OutcomeOK || failed < killed {
		t.Errorf("nights %+v; want the last ok and at least %d failed (the killed ones)", runs, killed)
	}
}
