package daemon

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/daemon/record"
	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/store"
)

// An escalated ticket keeps every attempt: its patch, checks, findings, verdict and stop
// reason under results/<id>/attempt-<n>/, a branch ticketd/<id>-attempt-<n> with the partial
// change, and a report listing each attempt.
func TestEscalationKeepsEveryAttempt(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	f := newFixture(t, 1)
	f.cases[0].Behaviour = scriptedmodel.BehaviourNever
	_, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
	cfg := f.config(t, url, 1)
	cfg.Night.MaxAttempts = 2
	cfg.Budget.MaxSteps = 4
	n := runNight(t, cfg, pipeline.LayoutCacheFriendly)

	tk, err := n.store.Get(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if tk.State != store.StateEscalated || tk.Branch != AttemptBranch(1, 2) {
		t.Fatalf("ticket: %s, branch %q; want escalated on %s", tk.State, tk.Branch, AttemptBranch(1, 2))
	}
	dir := filepath.Join(cfg.Output, "1")
	report, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for a := 1; a <= 2; a++ {
		adir := filepath.Join(dir, "attempt-"+string(rune('0'+a)))
		for _, name := range []string{"patch", "stop-reason", "checks.json", "findings.json", "verdict.json", "attempt.json"} {
			data, err := os.ReadFile(filepath.Join(adir, name))
			if err != nil {
				t.Errorf("attempt %d: %v", a, err)
				continue
			}
			if (name == "patch" || name == "stop-reason") && len(strings.TrimSpace(string(data))) == 0 {
				t.Errorf("attempt %d: %s is empty", a, name)
			}
			if name == "attempt.json" {
				checkTimeSplit(t, a, data)
			}
		}
		branch := AttemptBranch(1, a)
		if !strings.Contains(string(report), "- attempt "+string(rune('0'+a))) || !strings.Contains(string(report), branch) {
			t.Errorf("report.md does not list attempt %d with its branch %s:\n%s", a, branch, report)
		}
		diff := git(t, f.repo, "diff", "main", branch, "--")
		if !strings.Contains(diff, "rule_00.py") {
			t.Errorf("branch %s does not hold the attempt's partial change; diff:\n%s", branch, diff)
		}
	}
}

// checkTimeSplit: the attempt's record says where its time went, measured where the work
// happened (package timing): it waited on the model, ran git, checks and store writes.
func checkTimeSplit(t *testing.T, attempt int, data []byte) {
	t.Helper()
	var rec record.Attempt
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatalf("attempt %d: attempt.json: %v", attempt, err)
	}
	if s := rec.Time; s.ModelWaitS <= 0 || s.GitS <= 0 || s.StoreS <= 0 || s.ChecksS <= 0 || s.SandboxStartS <= 0 {
		t.Errorf("attempt %d: time split %+v; want model wait, git, store, checks and sandbox start all > 0", attempt, s)
	}
}
