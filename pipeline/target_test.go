package pipeline

import (
	"context"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
)

// In a repository whose base has only an unrelated failure, a fix that adds a passing test for
// the bug (named on submit) is accepted; the same fix without that test is refused, because
// nothing shows that it fixes anything.
func TestTargetTestsAcceptNewTest(t *testing.T) {
	t.Parallel() // each runs its own scripted model, repository and pytest
	extra := map[string]string{
		"test_calc.py":      "from calc import double\n\n\ndef test_zero():\n    assert double(0) == 1  # pins the bug: passes at the base\n",
		"test_unrelated.py": "def test_clock():\n    assert False, 'broken for a reason unrelated to the ticket'\n",
	}
	newTest := `diff --git a/test_double_two.py b/test_double_two.py
new file mode 100644
--- /dev/null
+++ b/test_double_two.py
@@ -0,0 +1,5 @@
+from calc import double
+
+
+def test_double_two():
+    assert double(2) == 4
`
	pin := `diff --git a/test_calc.py b/test_calc.py
--- a/test_calc.py
+++ b/test_calc.py
@@ -1,5 +1,5 @@
 from calc import double
 
 
 def test_zero():
-    assert double(0) == 1  # pins the bug: passes at the base
+    assert double(0) == 0
`
	tests := []struct {
		name   string
		patch  string
		status Status
	}{
		{"fix with a new passing test", fixPatch + pin + newTest, StatusFixed},
		{"negative control: fix without a test", fixPatch + pin, StatusBudget},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, job, _ := setupAttemptWith(t, scriptedmodel.Case{Patch: tt.patch}, extra)
			job.Budget.MaxSteps = 6
			out := r.Run(context.Background(), job)
			if out.Status != tt.status {
				t.Fatalf("status %s (%s), want %s\nhistory:\n%s", out.Status, out.Reason, tt.status, strings.Join(out.History, "\n"))
			}
			if tt.status == StatusFixed && (out.Gate == nil || len(out.Gate.Targets) != 1 || out.Gate.Targets[0] != "test_double_two.py::test_double_two") {
				t.Errorf("gate targets %+v, want the added test", out.Gate)
			}
		})
	}
}
