package pipeline

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
)

// In a repository whose base has only an unrelated failure, a fix that adds a passing test for
// the bug (named on submit) is accepted; one that rewrites an existing test that pinned the
// bug is not shipped by itself (its base version fails with the fix: a human decides); the
// same fix with no test that shows the bug is never shipped.
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
		{"fix with a new passing test", fixPatch + doubleTwoTest, noPin, StatusFixed, []string{"test_double_two.py::test_double_two"}, "test_double_two.py::test_double_two"},
		// markupsafe's conftest runs every test once per implementation, through an autouse
		// fixture whose C one skips where it is not built: the target's instance that ran passes.
		{"fix with a new test whose other instance skips", fixPatch + doubleTwoTest, withSkippedVariant(noPin), StatusFixed, []string{"test_double_two.py::test_double_two"}, "test_double_two.py::test_double_two"},
		{"fix that rewrites the pinning test", fixPatch + pin, extra, StatusTestsChanged, nil, ""},
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
			if out.Gate == nil || tt.status != StatusTestsChanged && !slices.Equal(out.Gate.Targets, tt.targets) {
				t.Errorf("gate %+v, want targets %v", out.Gate, tt.targets)
			}
			if tt.status == StatusTestsChanged {
				if !strings.Contains(out.Reason, "changes tests the base passed") || !strings.Contains(out.Reason, "test_calc.py::test_zero") {
					t.Errorf("reason %q; want it to name the rewritten test", out.Reason)
				}
				return
			}
			if got := strings.Join(append(out.Evidence.Reproduced, out.Evidence.NewTests...), ", "); tt.evidence != "" && !strings.Contains(got, tt.evidence) {
				t.Errorf("evidence %q, want it to name %s", got, tt.evidence)
			}
			if tt.status == StatusUnverified && (out.Evidence.Found() || !strings.Contains(out.Reason, "unverified, patch attached")) {
				t.Errorf("unverified outcome: reason %q, evidence %+v", out.Reason, out.Evidence)
			}
		})
	}
}

// withSkippedVariant adds to files a conftest.py that runs every test once per
// implementation through an autouse fixture, the second of which is not available and skips.
func withSkippedVariant(files map[string]string) map[string]string {
	out := maps.Clone(files)
	out["conftest.py"] = `import pytest


@pytest.fixture(
    scope="session",
    autouse=True,
    params=["python", pytest.param("speedups", marks=pytest.mark.skipif(True, reason="speedups unavailable"))],
)
def _impl(request):
    return request.param
`
	return out
}
