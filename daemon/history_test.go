package daemon

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/worktree"
)

// TestRequeueNumbersOn: history survives a requeue. An escalated ticket requeued with a note
// gets attempt 2 (not 1 again): results/<id>/attempt-1/ and its branch stay as they were,
// attempt-2 lands beside them, and the maker reads the note. A done ticket requeued (with
// the confirmation) works on a new branch: its validated fix branch is untouched.
func TestRequeueNumbersOn(t *testing.T) {
	t.Parallel() // nights of their own: repository, store, model server
	realNight(t)
	f := newFixture(t, 2)
	f.cases[0].Behaviour = scriptedmodel.BehaviourNever
	server, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
	cfg := f.config(t, url, 1)
	cfg.Night.MaxAttempts = 1
	cfg.Budget.MaxSteps = 4
	ctx := context.Background()

	n1 := runNight(t, cfg, pipeline.LayoutCacheFriendly)
	esc, done := int64(1), int64(2)
	t1, _ := n1.store.Get(ctx, esc)
	t2, _ := n1.store.Get(ctx, done)
	if t1.State != store.StateEscalated || t2.State != store.StateDone {
		t.Fatalf("night 1: tickets %s and %s; want escalated and done", t1.State, t2.State)
	}
	attempt1 := filepath.Join(cfg.Output, "1", "attempt-1", "attempt.json")
	before, err := os.ReadFile(attempt1)
	if err != nil {
		t.Fatal(err)
	}
	keptAttempt := strings.TrimSpace(git(t, f.repo, "rev-parse", AttemptBranch(esc, 1)))
	fixBranch := t2.Branch
	fixCommit := strings.TrimSpace(git(t, f.repo, "rev-parse", fixBranch))

	const note = "the surcharge table lives in rule_00.py; leave the tests alone"
	if err := n1.store.RequeueTicket(ctx, esc, "alice", store.RequeueOptions{Note: note}); err != nil {
		t.Fatal(err)
	}
	if err := n1.store.Requeue(ctx, done, "alice", false); err == nil {
		t.Fatal("a done ticket was requeued without the confirmation")
	}
	if err := n1.store.RequeueTicket(ctx, done, "alice", store.RequeueOptions{Done: true}); err != nil {
		t.Fatal(err)
	}
	served := len(server.Requests())

	n2 := runNight(t, cfg, pipeline.LayoutCacheFriendly)
	t1, _ = n2.store.Get(ctx, esc)
	t2, _ = n2.store.Get(ctx, done)
	if t1.State != store.StateEscalated || t1.Attempts != 2 {
		t.Errorf("requeued escalated ticket: %s after %d attempts; want escalated again at attempt 2 (a fresh budget of 1, numbered on)", t1.State, t1.Attempts)
	}
	after, err := os.ReadFile(attempt1)
	if err != nil || !bytes.Equal(before, after) {
		t.Errorf("results/1/attempt-1/attempt.json changed by the second round (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(cfg.Output, "1", "attempt-2", "attempt.json")); err != nil {
		t.Errorf("attempt 2's record: %v", err)
	}
	if got := strings.TrimSpace(git(t, f.repo, "rev-parse", AttemptBranch(esc, 1))); got != keptAttempt {
		t.Errorf("%s moved from %s to %s", AttemptBranch(esc, 1), keptAttempt, got)
	}
	git(t, f.repo, "rev-parse", "--verify", AttemptBranch(esc, 2))

	if t2.State != store.StateDone || t2.Attempts != 2 || t2.Branch != worktree.BranchName(done, t2.Title)+"-r2" {
		t.Errorf("requeued done ticket: %s after %d attempts on %q; want done at attempt 2 on a new branch %s-r2", t2.State, t2.Attempts, t2.Branch, worktree.BranchName(done, t2.Title))
	}
	if got := strings.TrimSpace(git(t, f.repo, "rev-parse", fixBranch)); got != fixCommit {
		t.Errorf("the validated fix branch %s moved from %s to %s", fixBranch, fixCommit, got)
	}

	noted := false
	for _, r := range server.Requests()[served:] {
		if r.Role == "maker" && bytes.Contains(r.Body, []byte(note)) {
			noted = true
		}
	}
	if !noted {
		t.Error("no maker request of the second round carried the requeue's note")
	}
}
