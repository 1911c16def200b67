package daemon

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/daemon/record"
	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/store"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/<test>/<name>.golden, or rewrites it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", strings.Split(t.Name(), "/")[0], name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run with -update to write it): %v", err)
	}
	if got != string(want) {
		t.Errorf("report differs from %s (run with -update after checking):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// TestReportEndings renders the report of every way an attempt ends, each pinned by a golden
// file; the table also states, per ending, what the report must and must never say, so a
// golden file rewritten with -update cannot drift into contradicting itself.
func TestReportEndings(t *testing.T) {
	at := time.Date(2026, 12, 3, 2, 0, 0, 0, time.UTC)
	cost := 0.0123
	diff := "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def double(x):\n-    return x + x + 1\n+    return x + x\n"
	checks := []validate.Result{{Name: "tests", Kind: validate.KindPytest, Passed: true, Summary: "3 passed", Duration: 1500 * time.Millisecond}}
	failedChecks := []validate.Result{{Name: "tests", Kind: validate.KindPytest, Summary: "1 failed, 2 passed", Duration: 1400 * time.Millisecond}}
	passed := &pipeline.Gate{Passed: true, Tier: pipeline.TierFull, Fixed: []string{"tests: test_calc.py::test_double: assert 5 == 4"},
		Targets: []string{"test_calc.py::test_double"}, Results: checks}
	evidence := &pipeline.Evidence{Reproduced: []string{"tests: test_calc.py::test_double_two"}}
	noEvidence := &pipeline.Evidence{Notes: []string{"the change adds no test"}}
	failedGate := &pipeline.Gate{Tier: pipeline.TierFull, New: []string{"tests: test_calc.py::test_triple: test_calc.py:9: assert 7 == 6"},
		Targets: []string{"test_calc.py::test_double"}, TargetsFailing: []string{"tests: 1 failed\n  test_calc.py::test_double: assert 5 == 4"}, Results: failedChecks}
	firstTier := &pipeline.Gate{Tier: pipeline.TierFirst, New: []string{"tests: test_calc.py::test_triple: assert 7 == 6"},
		FirstTier: &pipeline.TierRun{Files: []string{"test_calc.py"}, Summary: "tests: 1 failed, 1 passed", Failures: []string{"tests: test_calc.py::test_triple: assert 7 == 6"}}, Results: failedChecks}
	timedOut := &pipeline.Gate{Tier: pipeline.TierFull, TimedOut: []string{"tests: timed out twice (load 19.5, then 20.1; the base commit's run took 45.6s): timed out after 2m16.8s"},
		Results: []validate.Result{{Name: "tests", Kind: validate.KindPytest, TimedOut: true, Summary: "timed out twice", Duration: 136 * time.Second}}}
	slow := *passed
	slow.Slow = []string{"tests timed out at first (load 21.0), then ran on its own in 50.2s (the base commit's run took 45.6s): 3 passed"}
	cancelled := &pipeline.Gate{Tier: pipeline.TierFull, Cancelled: true,
		Results: []validate.Result{{Name: "tests", Kind: validate.KindPytest, Cancelled: true, Summary: "cancelled: ticketd is shutting down"}}}

	tests := []struct {
		name   string
		ending record.Ending
		out    pipeline.Outcome
		diff   string
		must   []string
		never  []string
	}{
		{"done", "done", pipeline.Outcome{Conclusion: pipeline.Conclusion{Status: pipeline.StatusFixed, Reason: "checks, checker and judge passed"}, Artifacts: pipeline.Artifacts{Gate: passed, Checks: checks, Evidence: evidence, Verdict: &pipeline.Verdict{Verdict: "pass", Reason: "double(2) is 4"}}, Metrics: pipeline.Metrics{Submits: 1}}, diff,
			[]string{"**Fixed**", "Gate passed (the whole suite)", "Target tests (they pass)", "Evidence that the change fixes the bug", "The change, 1 file(s)"},
			[]string{"Gate failed", "partial", "For the human"}},
		{"done-slow-check", "done", pipeline.Outcome{Conclusion: pipeline.Conclusion{Status: pipeline.StatusFixed, Reason: "checks, checker and judge passed"}, Artifacts: pipeline.Artifacts{Gate: &slow, Checks: checks, Evidence: evidence}, Metrics: pipeline.Metrics{Submits: 1}}, diff,
			[]string{"Gate passed", "slow, not blamed on the change: tests timed out at first (load 21.0)"},
			[]string{"you caused", "Gate failed"}},
		{"retry-checks-failed", "retry", pipeline.Outcome{Conclusion: pipeline.Conclusion{Status: pipeline.StatusFailed, Reason: "maker: gave up"}, Artifacts: pipeline.Artifacts{Gate: failedGate, Checks: failedChecks}, Metrics: pipeline.Metrics{Submits: 2}}, diff,
			[]string{"Gate failed (the whole suite)", "new failure (the base commit did not have it): tests: test_calc.py::test_triple", "target tests (test_calc.py::test_double) do not pass", "The partial change"},
			[]string{"Gate passed", "they pass", "Evidence that"}},
		{"escalated-checks-failed", "escalated", pipeline.Outcome{Conclusion: pipeline.Conclusion{Status: pipeline.StatusFailed, Reason: "the same checks failed twice with no change: tests: test_calc.py::test_triple"}, Artifacts: pipeline.Artifacts{Gate: failedGate, Checks: failedChecks}, Metrics: pipeline.Metrics{Submits: 2}}, diff,
			[]string{"Gate failed", "could not produce a change that passes the checks", "ticketctl requeue 7"},
			[]string{"Gate passed", "Target tests (they pass)", "ticketctl accept"}},
		{"escalated-first-tier", "escalated", pipeline.Outcome{Conclusion: pipeline.Conclusion{Status: pipeline.StatusFailed, Reason: "the same checks failed twice with no change"}, Artifacts: pipeline.Artifacts{Gate: firstTier, Checks: failedChecks}, Metrics: pipeline.Metrics{Submits: 2, FirstTierCaught: 2, FirstTierTime: 3 * time.Second}}, diff,
			[]string{"Gate failed (first tier: the tests that import the change; the whole suite was not run)", "caught 2 failing run(s)"},
			[]string{"Gate passed", "the whole suite gave the verdict"}},
		{"escalated-timed-out", "escalated", pipeline.Outcome{Conclusion: pipeline.Conclusion{Status: pipeline.StatusFailed, Reason: "the same checks failed twice with no change: tests: timed out"}, Artifacts: pipeline.Artifacts{Gate: timedOut, Checks: timedOut.Results}, Metrics: pipeline.Metrics{Submits: 2}}, diff,
			[]string{"timed out, and timed out again when re-run on its own (not shown to be the change's)", "load 19.5"},
			[]string{"new failure", "you caused", "Gate passed"}},
		{"escalated-unverified", "escalated", pipeline.Outcome{Conclusion: pipeline.Conclusion{Status: pipeline.StatusUnverified, Reason: "unverified, patch attached: the checks pass, but no test fails at the base commit and passes with the change; asked 2 time(s) for a regression test"}, Artifacts: pipeline.Artifacts{Gate: passed, Checks: checks, Evidence: noEvidence}, Metrics: pipeline.Metrics{Submits: 3}}, diff,
			[]string{"The complete change (it passes the checks", "**Unverified**", "Next step: add a test that reproduces the bug, or accept the patch: `ticketctl accept 7`"},
			[]string{"partial change", "could not produce a change that passes the checks", "Evidence that the change fixes"}},
		{"retry-unverified", "retry", pipeline.Outcome{Conclusion: pipeline.Conclusion{Status: pipeline.StatusUnverified, Reason: "unverified, patch attached: the checks pass, but no test fails at the base commit and passes with the change"}, Artifacts: pipeline.Artifacts{Gate: passed, Checks: checks, Evidence: noEvidence}, Metrics: pipeline.Metrics{Submits: 3}}, diff,
			[]string{"The complete change", "must add a test that reproduces the bug first", "`ticketctl accept 7`"},
			[]string{"partial change", "could not produce"}},
		{"escalated-review-rejected", "escalated", pipeline.Outcome{Conclusion: pipeline.Conclusion{Status: pipeline.StatusFailed, Reason: "the checker still rejects the fix after 2 review rounds: the fix breaks negative numbers"}, Artifacts: pipeline.Artifacts{Gate: passed, Checks: checks, Evidence: evidence, Findings: []pipeline.Finding{{Severity: "blocker", Category: "correctness", File: "calc.py", Line: 2, Finding: "the fix breaks negative numbers"}}}, Metrics: pipeline.Metrics{Submits: 2}}, diff,
			[]string{"Gate passed", "the review did not accept it", "blocker [correctness] calc.py:2"},
			[]string{"could not produce a change that passes the checks", "Gate failed"}},
		{"escalated-budget", "escalated", pipeline.Outcome{Conclusion: pipeline.Conclusion{Status: pipeline.StatusBudget, Reason: "budget exhausted: step limit of 40 maker calls reached"}, Artifacts: pipeline.Artifacts{Gate: failedGate, Checks: failedChecks}, Metrics: pipeline.Metrics{Submits: 1}}, diff,
			[]string{"stopped the attempt at its budget (budget exhausted: step limit of 40", "Gate failed"},
			[]string{"Gate passed"}},
		{"escalated-never-submitted", "escalated", pipeline.Outcome{Conclusion: pipeline.Conclusion{Status: pipeline.StatusFailed, Reason: "maker answered 3 times without using a tool"}}, "",
			[]string{"No change was submitted in this attempt, so no gate ran.", "The maker never submitted a change.", "The maker's tools changed no file."},
			[]string{"Gate passed", "Gate failed"}},
		{"released-shutdown", "released", pipeline.Outcome{Conclusion: pipeline.Conclusion{Status: pipeline.StatusStopped, Reason: "stopped: ticketd is shutting down"}, Artifacts: pipeline.Artifacts{Gate: cancelled, Checks: cancelled.Results}, Metrics: pipeline.Metrics{Submits: 1}}, diff,
			[]string{"Stopped from outside and released", "were cut short (stopped: ticketd is shutting down): they judged nothing"},
			[]string{"Gate failed", "Gate passed", "you caused", "For the human"}},
		{"cancelled", "cancelled", pipeline.Outcome{Conclusion: pipeline.Conclusion{Status: pipeline.StatusStopped, Reason: "stopped: cancel requested by an operator"}}, "",
			[]string{"**Cancelled**", "No change was submitted"},
			[]string{"Gate", "For the human"}},
		{"needs-info", "needs_info", pipeline.Outcome{Conclusion: pipeline.Conclusion{Status: pipeline.StatusNeedsInfo, Question: "Should double(-1) be -2 or 2?", Reason: "needs info"}}, "",
			[]string{"## Question", "ticketctl answer 7"},
			[]string{"Gate", "For the human"}},
		{"needs-budget", "needs_budget", pipeline.Outcome{Conclusion: pipeline.Conclusion{Status: pipeline.StatusBudget, NeedsBudget: true, Reason: "dollars: $0.52 spent of $0.50 per attempt"}, Metrics: pipeline.Metrics{Dollars: 0.52}}, diff,
			[]string{"**Waiting for money", "Why it stopped: dollars: $0.52 spent", "ticketctl budget 7 +2.50", "The partial change this attempt left"},
			[]string{"Gate passed", "Gate failed", "For the human", "Fixed"}},
	}
	// One golden report per ending a record can name, at least.
	covered := map[record.Ending]bool{}
	for _, tt := range tests {
		covered[tt.ending] = true
	}
	for _, kind := range record.Endings {
		if !covered[kind] {
			t.Errorf("no golden report for the ending %q", kind)
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.out.Duration = 42 * time.Second
			tt.out.Steps = 6
			tt.out.History = []string{"submit 1: checks passed; evidence: ..."}
			got := renderReport(reportInput{
				Ticket: store.Ticket{ID: 7, Title: "double is wrong", Body: "double(2) gives 5", Source: "dir", ExternalID: "issues/7.md",
					Repo: "calc", MaxAttempts: 2, CreatedAt: at.Add(-time.Hour)},
				Attempt: 2, Branch: "ticketd/7-double-is-wrong", Base: "0123456789abcdef0123", Ending: tt.ending,
				Outcome: tt.out, Diff: tt.diff, Now: at,
				Calls:  []store.ModelCall{{PromptTokens: 1000, CachedTokens: 500, CompletionTokens: 100, CostUSD: &cost}},
				Events: []store.Event{{Attempt: 2, At: at.Add(-time.Minute), Kind: "note", Reason: "baseline of calc at 0123456789ab computed"}},
			})
			for _, want := range tt.must {
				if !strings.Contains(got, want) {
					t.Errorf("report lacks %q", want)
				}
			}
			for _, bad := range tt.never {
				if strings.Contains(got, bad) {
					t.Errorf("report says %q, which contradicts how the attempt ended", bad)
				}
			}
			golden(t, tt.name, got)
		})
	}
}

// A base with hundreds of failures (platformdirs: 670 tests error without pytest-mock) lists
// the first ones and says how many more there are and where they all are, instead of one line
// each.
func TestReportBoundsBaseFailures(t *testing.T) {
	var remaining []string
	for i := range maxRemainingListed + 5 {
		remaining = append(remaining, fmt.Sprintf("tests: tests/test_unix.py::test_x[%d]: failed on setup: fixture 'mocker' not found", i))
	}
	checks := []validate.Result{{Name: "tests", Kind: validate.KindPytest, Summary: "25 errors, 3 passed", Duration: time.Second}}
	gate := &pipeline.Gate{Passed: true, Tier: pipeline.TierFull, Remaining: remaining, Results: checks}
	got := renderReport(reportInput{
		Ticket:  store.Ticket{ID: 7, Title: "state dir", Body: "b", Source: "dir", ExternalID: "issues/7.md", Repo: "pd", MaxAttempts: 2},
		Attempt: 2, Branch: "ticketd/7-state-dir", Base: "0123456789abcdef0123", Ending: record.Done,
		Outcome: pipeline.Outcome{Conclusion: pipeline.Conclusion{Status: pipeline.StatusFixed}, Artifacts: pipeline.Artifacts{Gate: gate, Checks: checks}, Metrics: pipeline.Metrics{Submits: 1}},
		Now:     time.Date(2026, 12, 3, 2, 0, 0, 0, time.UTC),
	})
	if n := strings.Count(got, "  - failing at the base too: "); n != maxRemainingListed {
		t.Errorf("report lists %d base failures one by one, want %d:\n%s", n, maxRemainingListed, got)
	}
	if !strings.Contains(got, "  - and 5 more failing at the base too (`attempt-2/checks.json` lists them all)") {
		t.Errorf("report does not say how many more base failures there are and where:\n%s", got)
	}
	if !strings.Contains(got, "Gate passed (the whole suite): no failure that the base commit did not have; 0 failure(s) of the base commit fixed, 25 already at the base") {
		t.Errorf("report does not count every base failure:\n%s", got)
	}
}
