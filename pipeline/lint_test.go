package pipeline

import (
	"context"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/scripts/testenv"
)

// Pre-existing mypy errors and ruff warnings do not block a fix; a new type error or a new
// lint error that the patch introduces does, with real mypy and the real ruff engine.
func TestLintAndTypeGate(t *testing.T) {
	t.Parallel() // each runs its own scripted model, repository and pytest
	if testing.Short() {
		t.Skip("runs mypy without a cache and Ruff's engine, tens of seconds a case (long tier; run without -short)")
	}
	testenv.NeedMypy(t)
	ruff := []string{testenv.RuffCommand(t), "check", "."}
	extra := map[string]string{
		// Debt at the base: an unused import (F401) and a type error.
		"legacy.py": "import os\n\n\ndef port() -> int:\n    return \"8080\"\n",
	}
	typeErr := `diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,6 @@
 def double(x):
-    return x + x + 1
+    return x + x
+
+
+def half(x: int) -> int:
+    return str(x // 2)
`
	lintErr := `diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,5 @@
+import sys
+
+
 def double(x):
-    return x + x + 1
+    return x + x
`
	tests := []struct {
		name   string
		patch  string
		status Status
		told   string // in the first refused submit's answer
	}{
		{"debt at the base does not block", fixPatch, StatusFixed, ""},
		{"new type error blocks", typeErr, StatusFailed, "calc.py:6: Incompatible return value type"},
		{"new lint error blocks", lintErr, StatusFailed, "F401"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// The cases' base is the same (its tests write nothing): its baseline, mypy
			// without a cache and Ruff's engine among it, runs once (sharedBaseline).
			r, job, rec := setupAttemptFiles(t, scriptedmodel.Case{Patch: tt.patch}, extra, true)
			job.Checks = append(job.Checks,
				validate.Check{Name: "lint", Kind: validate.KindRuff, Command: ruff},
				validate.Check{Name: "types", Kind: validate.KindMypy, Python: testPython()})
			job.Baseline = sharedBaseline(t, r.Checks, job.Dir, attemptFiles(extra), job.Checks)
			for _, b := range job.Baseline[1:] {
				if b.Passed || len(b.Findings) == 0 || b.NotStarted {
					t.Fatalf("baseline %s should report the debt: passed=%v not_started=%v summary=%q findings=%+v", b.Name, b.Passed, b.NotStarted, b.Summary, b.Findings)
				}
			}
			// Enough for read, edit, submit, re-read, submit: a maker that resubmits the same
			// refused change is stopped by the same-refusal guard, not the step limit.
			job.Budget.MaxSteps = 6
			out := r.Run(context.Background(), job)
			if out.Status != tt.status {
				t.Fatalf("status %s (%s), want %s\nhistory:\n%s", out.Status, out.Reason, tt.status, strings.Join(out.History, "\n"))
			}
			if tt.status == StatusFailed && !strings.HasPrefix(out.Reason, sameRefusalStop) {
				t.Errorf("reason %q, want it to start %q", out.Reason, sameRefusalStop)
			}
			if tt.told == "" {
				return
			}
			for _, tc := range rec.tools {
				if tc.Tool == "submit" {
					if !strings.Contains(tc.Result, tt.told) || strings.Contains(tc.Result, "legacy.py:4") && !strings.Contains(tc.Result, "already present") {
						t.Errorf("first submit's answer lacks %q:\n%s", tt.told, tc.Result)
					}
					break
				}
			}
		})
	}
}
