package pipeline

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
)

// In a repository whose base has only an unrelated failure, a fix that adds a passing test for
// the bug (named on submit) is accepted, and so is one that sharpens an existing test so that
// it fails at the base; the same fix with no test that shows the bug is never shipped.
func TestTargetTestsAcceptNewTest(t *testing.T) {
	t.Parallel() // each runs its own scripted model, repository and pytest
	extra := map[string]string{
		"test_calc.py":      "from calc import double\n\n\ndef test_zero():\n    assert double(0) == 1  # pins the bug: passes at the base\n",
		"test_unrelated.py": "def test_clock():\n    assert False, 'broken for a reason unrelated to the ticket'\n",
	}
	pin := `diff --git a/test_calc.py b/test_calc.py
--- a/test_calc.py
+++ b/test_calc.py
@@ -1,5 +1,5 @@
 from calc import double
 
 
 def test_zero():
-    assert double(0) == 1  # pins the bug: passes at the base
+    assert double(0) == 0
`
	noPin := map[string]string{
		"test_calc.py":      "from calc import double\n\n\ndef test_negative_stays_odd():\n    assert double(-1) % 2 != 0 or True\n",
		"test_unrelated.py": extra["test_unrelated.py"],
	}
	tests := []struct {
		name     string
		patch    string
		files    map[string]string
		status   Status
		targets  []string
		evidence string
	}{
		{"fix with a new passing test", fixPatch + pin + doubleTwoTest, extra, StatusFixed, []string{"test_double_two.py::test_double_two"}, "test_double_two.py::test_double_two"},
		{"fix that sharpens the pinning test", fixPatch + pin, extra, StatusFixed, nil, "test_calc.py::test_zero"},
		{"negative control: fix without a test that shows the bug", fixPatch, noPin, StatusUnverified, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, job, _ := setupAttemptWith(t, scriptedmodel.Case{Patch: tt.patch}, tt.files)
			job.Budget.MaxSteps = 8
			out := r.Run(context.Background(), job)
			if out.Status != tt.status {
				t.Fatalf("status %s (%s), want %s\nhistory:\n%s", out.Status, out.Reason, tt.status, strings.Join(out.History, "\n"))
			}
			if out.Gate == nil || !slices.Equal(out.Gate.Targets, tt.targets) {
				t.Errorf("gate %+v, want targets %v", out.Gate, tt.targets)
			}
			if got := strings.Join(out.Evidence.Reproduced, ", "); tt.evidence != "" && !strings.Contains(got, tt.evidence) {
				t.Errorf("evidence %q, want it to name %s", got, tt.evidence)
			}
			if tt.status == StatusUnverified && (out.Evidence.Found() || !strings.Contains(out.Reason, "unverified, patch attached")) {
				t.Errorf("unverified outcome: reason %q, evidence %+v", out.Reason, out.Evidence)
			}
		})
	}
}
