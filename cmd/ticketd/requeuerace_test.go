package main

import (
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store"
)

// TestForcedRequeueRacesTheNight: an operator runs `ticketctl requeue --force` on a ticket
// whose attempt is running its checks in a live night (a worker thought dead, say). The old
// worker goes on, its checks pass, and it tries to finish under the fence token it lost. The
// ticket must end done exactly once, charged the two attempts it had (the taken one and the
// one that fixed it), its fix one commit on one branch, pushed once; the other ticket is
// untouched; no worktree, branch of the taken attempt or process is left; and the night
// says ok.
func TestForcedRequeueRacesTheNight(t *testing.T) {
	t.Parallel() // a process, folder, database and model server of its own
	if testing.Short() {
		t.Skip("builds the ticketd and ticketctl binaries and runs a night")
	}
	bin := buildTicketd(t)
	ctl := buildTicketctl(t)
	c := newChaosNight(t, "sqlite", 2)
	c.fileMore(t, 2)
	cmd, done := c.startOnce(t, bin)
	victim, ended, err := c.strikeAt(t, killMidCheck, cmd.Process.Pid, rand.New(rand.NewPCG(1, 1)), done)
	if ended {
		t.Fatalf("ticketd once ended (%v) before a check ran\n%s", err, c.log(30))
	}
	req := exec.Command(ctl, "--config", c.config, "requeue", "--force", fmt.Sprint(victim.ID), "--note", "taken from a worker thought dead")
	req.Dir = c.dir
	out, err := req.CombinedOutput()
	t.Logf("ticketctl requeue --force %d (attempt %d, token %d, mid-check): %v\n%s", victim.ID, victim.Attempts, victim.FenceToken, err, out)
	if err != nil {
		t.Fatalf("ticketctl requeue --force: %v\n%s", err, out)
	}
	select {
	case err = <-done:
	case <-time.After(4 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("the night did not end within 4 minutes\n%s", c.log(40))
	}
	t.Logf("night: %v", err)
	if err != nil {
		t.Errorf("ticketd once exited %v; want 0\n%s", err, c.log(30))
	}
	// The requeued ticket may wait out its backoff past the night's queue: a next night
	// finishes it.
	for _, s := range c.summaries(t) {
		if !s.State.Terminal() {
			if n := c.runOnce(t, bin); n.code != exitOK {
				t.Errorf("next night: exit %d, %s (%s)\n%s", n.code, n.run.Outcome, n.run.Error, c.log(30))
			}
			break
		}
	}

	var (
		all    []store.Summary
		events = map[int64][]store.Event{}
	)
	c.look(t, func(s *store.Store) {
		all, _ = s.List(t.Context(), store.Filter{})
		for _, tk := range all {
			events[tk.ID], _ = s.Events(t.Context(), tk.ID)
		}
	})
	var want []string
	for _, tk := range all {
		terminal := 0
		for _, e := range events[tk.ID] {
			if e.ToState.Terminal() && e.FromState != e.ToState {
				terminal++
			}
		}
		attempts := 1
		if tk.ID == victim.ID {
			attempts = 2
		}
		if terminal != 1 || tk.State != store.StateDone || tk.Attempts != attempts {
			t.Errorf("ticket %d: %s, %d attempts, %d terminal events (%s); want done once, with %d attempt(s)", tk.ID, tk.State, tk.Attempts, terminal, tk.Reason, attempts)
		}
		if tk.ID == victim.ID && tk.FenceToken == victim.FenceToken {
			t.Errorf("ticket %d ended under the fence token %d taken from its worker", tk.ID, tk.FenceToken)
		}
		want = append(want, tk.Branch)
		if out := strings.TrimSpace(gitOut(t, c.repo, "rev-list", "--count", "main.."+tk.Branch)); out != "1" {
			t.Errorf("ticket %d's branch %s has %s commits over main; want one", tk.ID, tk.Branch, out)
		}
	}
	c.checkNothingLeft(t, want)
	if t.Failed() {
		t.Logf("log:\n%s", c.log(60))
	}
}
