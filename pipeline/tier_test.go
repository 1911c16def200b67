package pipeline

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/pipeline/validate"
)

// recordingChecks runs the real checks and remembers each run's selection: nil for the whole
// suite, else the pytest node ids and files it was limited to.
type recordingChecks struct {
	inner CheckRunner
	mu    sync.Mutex
	runs  [][]string
}

func (c *recordingChecks) Run(ctx context.Context, dir string, checks []validate.Check) []validate.Result {
	var only []string
	for _, ch := range checks {
		only = append(only, ch.Only...)
	}
	c.mu.Lock()
	c.runs = append(c.runs, only)
	c.mu.Unlock()
	return c.inner.Run(ctx, dir, checks)
}

func (c *recordingChecks) fullRuns() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, r := range c.runs {
		if r == nil {
			n++
		}
	}
	return n
}

// A submit that touches calc.py runs first the test files that import calc; when one of them
// breaks, that answer is the submit's, and the whole suite (with the slow unrelated test file)
// never runs. When they pass, the whole suite runs and gives the verdict.
func TestFirstTier(t *testing.T) {
	t.Parallel() // each runs its own scripted model, repository and pytest
	unrelated := "import time\n\n\ndef test_slow_unrelated():\n    time.sleep(0.2)\n"
	tests := []struct {
		name       string
		extra      map[string]string
		wantStatus Status
		wantFull   bool // whether any whole-suite run happens
		wantFirst  []string
	}{
		{
			name: "first tier fails: whole suite not run",
			extra: map[string]string{
				"test_other.py":  unrelated,
				"test_other2.py": unrelated,
				// Pins the bug (passes at the base): the fix breaks it, a new failure.
				"tests/test_legacy.py": "from calc import double\n\n\ndef test_one():\n    assert double(1) != 2\n",
			},
			wantStatus: StatusBudget,
			wantFull:   false,
			wantFirst:  []string{"test_calc.py", "tests/test_legacy.py"},
		},
		{
			name:       "first tier passes: whole suite runs",
			extra:      map[string]string{"test_other.py": unrelated},
			wantStatus: StatusFixed,
			wantFull:   true,
			wantFirst:  []string{"test_calc.py"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, job, rec := setupAttemptWith(t, scriptedmodel.Case{}, tt.extra)
			job.Checks = everySubmit(job.Checks) // the first tier runs where the whole suite decides
			checks := &recordingChecks{inner: r.Checks}
			r.Checks = checks
			job.Budget.MaxSteps = 4
			out := r.Run(context.Background(), job)
			t.Logf("status %s (%s); runs %v\nhistory:\n%s", out.Status, out.Reason, checks.runs, strings.Join(out.History, "\n"))
			if out.Status != tt.wantStatus {
				t.Fatalf("status %s, want %s", out.Status, tt.wantStatus)
			}
			if len(checks.runs) == 0 || !reflect.DeepEqual(checks.runs[0], tt.wantFirst) {
				t.Fatalf("first run selected %v; want the test files importing calc %v", checks.runs, tt.wantFirst)
			}
			if got := checks.fullRuns() > 0; got != tt.wantFull {
				t.Errorf("whole-suite run made = %v; want %v (runs %v)", got, tt.wantFull, checks.runs)
			}
			var submits []string
			for _, c := range rec.tools {
				if c.Tool == "submit" {
					submits = append(submits, c.Result)
				}
			}
			if !tt.wantFull {
				if len(submits) == 0 || !strings.Contains(submits[0], "First tier") || !strings.Contains(submits[0], "tests/test_legacy.py::test_one") {
					t.Errorf("first submit answer %q; want the first tier's failure naming tests/test_legacy.py::test_one", submits)
				}
				if !slices.ContainsFunc(out.History, func(h string) bool { return strings.Contains(h, "first tier failed") }) {
					t.Errorf("history has no first-tier note: %v", out.History)
				}
				if out.FirstTierCaught == 0 {
					t.Errorf("Outcome.FirstTierCaught = 0; want the refused submits counted")
				}
				return
			}
			if out.Gate == nil || out.Gate.Tier != TierFull || out.Gate.FirstTier == nil || !reflect.DeepEqual(out.Gate.FirstTier.Files, tt.wantFirst) {
				t.Errorf("gate %+v; want tier %q with a first tier of %v", out.Gate, TierFull, tt.wantFirst)
			}
		})
	}
}

func TestDiffPaths(t *testing.T) {
	diff := fixPatch + `diff --git a/new.py b/new.py
new file mode 100644
--- /dev/null
+++ b/new.py
@@ -0,0 +1 @@
+x = 1
diff --git a/old.py b/old.py
deleted file mode 100644
--- a/old.py
+++ /dev/null
@@ -1 +0,0 @@
-x = 1
diff --git "a/sp ace.py" "b/sp ace.py"
--- "a/sp ace.py"
+++ "b/sp ace.py"
`
	got := DiffPaths(diff)
	want := []string{"calc.py", "new.py", "old.py", "sp ace.py"}
	t.Logf("DiffPaths -> %v", got)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DiffPaths = %v; want %v", got, want)
	}
}

// scriptedChecks answers each run from a table keyed by the run's selection (its Only list
// joined by spaces, "" for the whole suite): a stand-in for pytest to test the tier rules.
type scriptedChecks struct {
	answers map[string][]validate.Finding
	runs    []string
}

func (s *scriptedChecks) Run(_ context.Context, _ string, checks []validate.Check) []validate.Result {
	key := strings.Join(checks[0].Only, " ")
	s.runs = append(s.runs, key)
	fs := s.answers[key]
	return []validate.Result{{Name: "tests", Kind: validate.KindPytest, Passed: len(fs) == 0, Tests: 3, Findings: fs, Summary: "scripted"}}
}

// The first tier's verdicts against the baseline, each case printing what ran: a base
// failure still failing outside any target does not refuse, even when every base failure
// ran there (the whole suite decides, and the evidence step after it); a target that still
// fails refuses; a regression refuses.
func TestFirstTierRules(t *testing.T) {
	dir := t.TempDir()
	for p, c := range map[string]string{"calc.py": "", "tests/test_calc.py": "import calc\n", "tests/test_other.py": "import os\n", "tests/test_more.py": "import os\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fail := func(id string) validate.Finding { return validate.Finding{Test: id, Message: "assert"} }
	baseFail := func(ids ...string) []validate.Result {
		var fs []validate.Finding
		for _, id := range ids {
			fs = append(fs, fail(id))
		}
		return []validate.Result{{Name: "tests", Kind: validate.KindPytest, Passed: len(fs) == 0, Tests: 5, Findings: fs}}
	}
	tests := []struct {
		name     string
		baseline []validate.Result
		targets  []string
		answer   []validate.Finding // of the first tier's run
		refuse   bool
	}{
		{"clean first tier", baseFail("tests/test_calc.py::test_bug"), nil, nil, false},
		{"regression", baseFail(), nil, []validate.Finding{fail("tests/test_calc.py::test_ok")}, true},
		{"every base failure ran and still fails: carried, the evidence step decides", baseFail("tests/test_calc.py::test_bug"), nil, []validate.Finding{fail("tests/test_calc.py::test_bug")}, false},
		{"a base failure elsewhere may be the fixed one", baseFail("tests/test_calc.py::test_bug", "tests/test_other.py::test_x"), nil,
			[]validate.Finding{fail("tests/test_calc.py::test_bug")}, false},
		{"named target still fails", baseFail("tests/test_other.py::test_x"), []string{"tests/test_calc.py::test_new"},
			[]validate.Finding{fail("tests/test_calc.py::test_new")}, true},
	}
	for _, tt := range tests {
		checks := &scriptedChecks{answers: map[string][]validate.Finding{"tests/test_calc.py": tt.answer}}
		c := testCheckRun(&Runner{Checks: checks, FlakeReruns: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
			Job{Dir: dir, Checks: []validate.Check{{Name: "tests", Kind: validate.KindPytest}}, Baseline: tt.baseline}, []string{"calc.py"}, tt.targets)
		run, refused := c.firstTier(context.Background())
		t.Logf("%s: runs %q, refused %v, failures %v", tt.name, checks.runs, refused != nil, run.Failures)
		if (refused != nil) != tt.refuse {
			t.Errorf("%s: refused = %v; want %v (failures %v)", tt.name, refused != nil, tt.refuse, run.Failures)
		}
		if refused != nil && (refused.Tier != TierFirst || refused.Passed) {
			t.Errorf("%s: refusing gate %+v; want tier %q, not passed", tt.name, refused, TierFirst)
		}
		if len(checks.runs) != 1 || checks.runs[0] != "tests/test_calc.py" {
			t.Errorf("%s: runs %q; want one run of tests/test_calc.py (the targets in it are not added again)", tt.name, checks.runs)
		}
	}
	// No pytest check, or a change that selects no test: no first tier at all.
	r := &Runner{Checks: &scriptedChecks{}}
	job := Job{Dir: dir, Checks: []validate.Check{{Name: "lint", Kind: validate.KindRuff}}}
	if run, refused := testCheckRun(r, job, []string{"calc.py"}, nil).firstTier(context.Background()); run != nil || refused != nil {
		t.Errorf("first tier with no pytest check = %+v, %+v; want none", run, refused)
	}
	job.Checks = []validate.Check{{Name: "tests", Kind: validate.KindPytest}}
	if run, refused := testCheckRun(r, job, []string{"README.md"}, nil).firstTier(context.Background()); run != nil || refused != nil {
		t.Errorf("first tier for a README change = %+v, %+v; want none", run, refused)
	}
}

// testCheckRun is the checks stage of a fresh attempt at job over a change to changed, which
// must make targets pass.
func testCheckRun(r *Runner, job Job, changed, targets []string) *checkRun {
	return newAttempt(r, job, time.Time{}).checkRun(candidate{changed: changed, targets: targets})
}
