package pipeline

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

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
			r, job, rec := setupAttemptWith(t, scriptedmodel.Case{}, tt.extra)
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
