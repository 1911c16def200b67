package demo

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/scripts/testenv"
	"github.com/ticketd/ticketd/store"
)

// targetTests are the sample project's failing tests, one per issue, by ticket title.
var targetTests = map[string]string{
	"Dashboard crashes for a customer with no invoices": "tests/test_stats.py::StatsTest::test_average_of_no_invoices_is_zero",
	"Product names that exactly fit are cut off":        "tests/test_text.py::TextTest::test_truncate_name_that_fits_exactly",
	"Discounted prices are one cent too low":            "tests/test_money.py::MoneyTest::test_discount_rounds_half_up",
}

// pytest is the pytest command that judges the demo's branches; a test that calls it runs a
// demo night, which -short skips.
func pytest(t *testing.T) []string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs a whole demo night (long tier; run without -short)")
	}
	argv, err := validate.ResolvePytest(context.Background())
	testenv.Need(t, testenv.Pytest, err)
	return argv
}

// runPytest runs one test id in dir and reports whether it passed.
func runPytest(t *testing.T, argv []string, dir, id string) (bool, string) {
	t.Helper()
	cmd := exec.Command(argv[0], append(argv[1:], "-q", "-p", "no:cacheprovider", id)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	return err == nil, string(out)
}

// checkout makes a separate working copy of branch so the test judges the branch itself.
func checkout(t *testing.T, repo, branch string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "check")
	cmd := exec.Command("git", "-C", repo, "worktree", "add", "--detach", dir, branch)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git worktree add %s: %v\n%s", branch, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("git", "-C", repo, "worktree", "remove", "--force", dir).Run() })
	return dir
}

// TestDemoNightEndToEnd is the whole path: intake from issue files, the queue, worktrees,
// the model client against the scripted model, edits, the real test gate, the review roles,
// commits on branches. Every branch must make its target test pass, judged by pytest on a
// separate checkout of the branch, and the base must still fail it.
func TestDemoNightEndToEnd(t *testing.T) {
	argv := pytest(t)
	res, err := Run(context.Background(), Options{Dir: filepath.Join(t.TempDir(), "demo")})
	if err != nil {
		t.Fatalf("demo: %v", err)
	}
	if len(res.Tickets) != 3 {
		t.Fatalf("got %d tickets, want 3", len(res.Tickets))
	}
	repo := filepath.Join(res.Dir, RepoName)
	for _, tk := range res.Tickets {
		if tk.State != store.StateDone {
			t.Errorf("ticket %d %q: state %s (%s), want done", tk.ID, tk.Title, tk.State, tk.Reason)
			continue
		}
		if !strings.HasPrefix(tk.Branch, "ticketd/") || tk.ModelCalls == 0 || tk.PromptTokens == 0 {
			t.Errorf("ticket %d: branch %q, %d model calls, %d prompt tokens", tk.ID, tk.Branch, tk.ModelCalls, tk.PromptTokens)
		}
		id := targetTests[tk.Title]
		if ok, out := runPytest(t, argv, checkout(t, repo, "main"), id); ok {
			t.Errorf("ticket %d: %s passes at the base commit already:\n%s", tk.ID, id, out)
		}
		if ok, out := runPytest(t, argv, checkout(t, repo, tk.Branch), id); !ok {
			t.Errorf("ticket %d: %s fails on branch %s:\n%s", tk.ID, id, tk.Branch, out)
		}
		for _, f := range []string{"patch", "report.md"} {
			data, err := os.ReadFile(filepath.Join(tk.ResultDir, f))
			if err != nil || len(data) == 0 {
				t.Errorf("ticket %d: %s missing or empty: %v", tk.ID, f, err)
			}
		}
	}
}

// TestDemoNeverFixedEscalates: a model that never produces the fix burns every attempt and
// the ticket ends escalated, with a report that says why it stopped.
func TestDemoNeverFixedEscalates(t *testing.T) {
	pytest(t)
	res, err := Run(context.Background(), Options{
		Dir:         filepath.Join(t.TempDir(), "demo"),
		Behaviour:   scriptedmodel.BehaviourNever,
		MaxAttempts: 2,
	})
	if err != nil {
		t.Fatalf("demo: %v", err)
	}
	for _, tk := range res.Tickets {
		if tk.State != store.StateEscalated || tk.Attempts != 2 {
			t.Errorf("ticket %d: state %s after %d attempts, want escalated after 2", tk.ID, tk.State, tk.Attempts)
			continue
		}
		if tk.Reason == "" {
			t.Errorf("ticket %d: escalated without a reason", tk.ID)
		}
		report, err := os.ReadFile(filepath.Join(tk.ResultDir, "report.md"))
		if err != nil {
			t.Fatalf("ticket %d: %v", tk.ID, err)
		}
		// The store keeps the failure's kind in front of the reason ("fix: ..."); the
		// report says why in the human's words, without the kind.
		why := strings.TrimPrefix(tk.Reason, string(store.FailFix)+": ")
		for _, want := range []string{"Escalated: needs a human", "Why it stopped: " + why} {
			if !strings.Contains(string(report), want) {
				t.Errorf("ticket %d: report lacks %q:\n%s", tk.ID, want, report)
			}
		}
		// The next step names a command: requeue after a fix that failed, accept for a
		// complete patch that only lacks its evidence.
		if !strings.Contains(string(report), "ticketctl requeue") && !strings.Contains(string(report), "ticketctl accept") {
			t.Errorf("ticket %d: report names neither ticketctl requeue nor ticketctl accept:\n%s", tk.ID, report)
		}
		// Only the attempts' own branches stay, for the human: ticketd/<id>-attempt-<n>.
		out, err := exec.Command("git", "-C", filepath.Join(res.Dir, RepoName), "branch", "--list", fmt.Sprintf("ticketd/%d-*", tk.ID)).Output()
		want := fmt.Sprintf("ticketd/%d-attempt-1\nticketd/%d-attempt-2", tk.ID, tk.ID)
		if got := strings.Join(strings.Fields(string(out)), "\n"); err != nil || got != want {
			t.Errorf("ticket %d: branches %q %v, want exactly %q", tk.ID, got, err, want)
		}
	}
}

func TestDemoRefusesNonEmptyDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Run(context.Background(), Options{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("Run on a non-empty dir: err = %v, want 'not empty'", err)
	}
}
