package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ticketd/ticketd/daemon/github/githubfake"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/store"
)

// TestKillMidReviewRound: a done GitHub ticket's pull request gets a reviewer's change
// request; the next night works it as a round on the same branch, and ticketd is SIGKILLed
// while the round's model calls run. The night after must finish the round once: the
// ticket done once more, the branch the fix plus one round commit, each pushed once, one
// answer on the pull request, the kill charged nothing beyond the round's own attempt.
func TestKillMidReviewRound(t *testing.T) {
	t.Parallel() // a process, folder, database and model server of its own
	if testing.Short() {
		t.Skip("builds the ticketd binary and kills it mid-round")
	}
	bin := buildTicketd(t)
	c := newChaosNight(t, "sqlite", 1)
	fake := githubfake.New(t)
	fake.AddIssue("acme/shop", githubfake.Issue{Title: "Surcharge rule 0 charges one cent too much",
		Body: "surcharge_0(100) gives 101, want 100.", Labels: []string{"ticketd"}, Author: "maintainer"})
	fake.Edit(func() { fake.Perms["acme/shop\x00alice"] = "write" })
	c.useGitHub(t, strings.TrimSuffix(fake.URL(), "/"))
	if n := c.runOnce(t, bin); n.code != exitOK {
		t.Fatalf("night 1: exit %d, %s (%s)\n%s", n.code, n.run.Outcome, n.run.Error, c.log(30))
	}
	tk := c.summaries(t)[0]
	var pr int
	fake.Edit(func() {
		if len(fake.Pulls) == 1 {
			pr = fake.Pulls[0]["number"].(int)
		}
	})
	if tk.State != store.StateDone || pr == 0 {
		t.Fatalf("night 1: ticket %s (%s), pull request %d; want done and one", tk.State, tk.Reason, pr)
	}
	fixCommit := strings.TrimSpace(gitOut(t, c.remote, "rev-parse", tk.Branch))

	// The morning: a writer asks for a change; the model (the test double) makes it.
	fake.AddReview("acme/shop", pr, githubfake.Review{User: "alice", State: "CHANGES_REQUESTED", Comments: []githubfake.LineComment{
		{Path: "rule_00.py", Line: 2, Body: "drop the + 0, it reads like a leftover"}}})
	round := "--- a/rule_00.py\n+++ b/rule_00.py\n@@ -1,2 +1,2 @@\n def surcharge_0(cents):\n-    return cents + 0\n+    return cents\n"
	url := startScripted(t, []scriptedmodel.Case{{Match: tk.Title, Patch: round}}, scriptedmodel.Options{Seed: 1, Latency: 150 * time.Millisecond})
	cfg, err := os.ReadFile(c.config)
	if err != nil {
		t.Fatal(err)
	}
	m := baseURLRe.FindSubmatch(cfg)
	if m == nil {
		t.Fatalf("no base_url in the config:\n%s", cfg)
	}
	if err := os.WriteFile(c.config, []byte(strings.Replace(string(cfg), string(m[1]), url, 1)), 0o644); err != nil {
		t.Fatal(err)
	}

	cmd, done := c.startOnce(t, bin)
	victim, ended, err := c.strikeAt(t, killMidAttempt, cmd.Process.Pid, rand.New(rand.NewPCG(1, 1)), done)
	if ended {
		t.Fatalf("ticketd once ended (%v) before the round's attempt got going\n%s", err, c.log(40))
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatal(err)
	}
	<-done
	t.Logf("SIGKILLed mid-round: ticket %d, attempt %d, token %d", victim.ID, victim.Attempts, victim.FenceToken)

	for try := 1; ; try++ {
		n := c.runOnce(t, bin)
		if n.code != exitOK && try == 1 && c.refusedForCrashing(t) {
			continue
		}
		if n.code != exitOK {
			t.Errorf("the night after the kill: exit %d, %s (%s)\n%s", n.code, n.run.Outcome, n.run.Error, c.log(30))
		}
		break
	}
	after := c.summaries(t)[0]
	var evs []store.Event
	c.look(t, func(s *store.Store) { evs, _ = s.Events(t.Context(), after.ID) })
	done2 := 0
	for _, e := range evs {
		if e.ToState == store.StateDone && e.FromState != e.ToState {
			done2++
		}
	}
	t.Logf("ticket %d: %s, %d attempts, %d rounds done", after.ID, after.State, after.Attempts, done2)
	if after.State != store.StateDone || done2 != 2 || after.Attempts != 2 || after.FenceToken == victim.FenceToken {
		t.Errorf("ticket %d: %s, done %d times, %d attempts, token %d (the killed round's %d); want done twice (the fix, the round) in two attempts, the round under a new token",
			after.ID, after.State, done2, after.Attempts, after.FenceToken, victim.FenceToken)
	}
	head := strings.TrimSpace(gitOut(t, c.remote, "rev-parse", after.Branch))
	if parent := strings.TrimSpace(gitOut(t, c.remote, "rev-parse", after.Branch+"^")); head == fixCommit || parent != fixCommit {
		t.Errorf("the remote's %s at %s (parent %s); want one round commit on the fix %s", after.Branch, head, parent, fixCommit)
	}
	if n := c.pushedTimes(t, after.Branch); n != 2 {
		t.Errorf("the remote updated %s %d times; want twice (the fix, the round)", after.Branch, n)
	}
	var answers int
	fake.Edit(func() {
		for _, cm := range fake.Comments[fmt.Sprintf("acme/shop#%d", pr)] {
			if strings.Contains(cm["body"].(string), "ticketd:round") {
				answers++
			}
		}
	})
	if answers != 1 {
		t.Errorf("%d round answers on the pull request; want one", answers)
	}
	if wt := gitOut(t, c.repo, "worktree", "list", "--porcelain"); strings.Count(wt, "worktree ") != 1 {
		t.Errorf("worktrees left registered:\n%s", wt)
	}
	if t.Failed() {
		t.Logf("log:\n%s", c.log(60))
	}
}
