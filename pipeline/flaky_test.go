package pipeline

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/pipeline/tools"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/scripts/testenv"
)

// flakyTest passes on even runs and fails on odd ones: run 0 (the baseline) passes, run 1
// (the first submit) fails, run 2 (the re-run alone) passes. Its counter is git-ignored so it
// never shows in the diff.
var flakyFiles = map[string]string{
	".gitignore": "*.count\n",
	"test_flaky.py": `import os


def test_sometimes():
    p = os.path.join(os.path.dirname(os.path.abspath(__file__)), "flake.count")
    n = int(open(p).read()) if os.path.exists(p) else 0
    with open(p, "w") as f:
        f.write(str(n + 1))
    assert n % 2 == 0, "fails one run in two (run %d)" % n
`,
}

func TestFlakyTestNotBlamedOnFix(t *testing.T) {
	t.Parallel() // each runs its own scripted model, repository and pytest
	tests := []struct {
		name      string
		reruns    int
		flaky     []string
		refusedAt int // index of a refused submit; -1 for none
	}{
		{"re-run finds the flake", 0, []string{"tests: test_flaky.py::test_sometimes"}, -1},
		{"negative control: no re-runs", -1, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, job, rec := setupAttemptWith(t, scriptedmodel.Case{}, flakyFiles)
			job.Checks = everySubmit(job.Checks) // the flake is outside the change's reach: the whole suite meets it
			r.FlakeReruns = tt.reruns
			out := r.Run(context.Background(), job)
			if out.Status != StatusFixed {
				t.Fatalf("status %s (%s), want fixed\nhistory:\n%s", out.Status, out.Reason, strings.Join(out.History, "\n"))
			}
			if !slices.Equal(out.Flaky, tt.flaky) {
				t.Errorf("flaky = %q, want %q", out.Flaky, tt.flaky)
			}
			var submits []string
			for _, tc := range rec.tools {
				if tc.Tool == tools.Submit {
					submits = append(submits, tc.Result)
				}
			}
			refused := -1
			for i, s := range submits {
				if strings.HasPrefix(s, "Not accepted") {
					refused = i
					break
				}
			}
			if refused != tt.refusedAt {
				t.Errorf("first refused submit #%d, want #%d; submits:\n%s", refused, tt.refusedAt, strings.Join(submits, "\n---\n"))
			}
		})
	}
}

// A patch that fixes the bug but breaks an unrelated test is refused, and the maker is told
// which test it broke; re-running that (deterministic) failure does not excuse it.
func TestBreakingUnrelatedTestIsBlocked(t *testing.T) {
	t.Parallel() // each runs its own scripted model, repository and pytest
	extra := map[string]string{
		"shipping.py":      "def fee(cents):\n    return 500 if cents < 5000 else 0\n",
		"test_shipping.py": "from shipping import fee\n\n\ndef test_free_over_fifty():\n    assert fee(6000) == 0\n",
	}
	patch := fixPatch + `diff --git a/shipping.py b/shipping.py
--- a/shipping.py
+++ b/shipping.py
@@ -1,2 +1,2 @@
 def fee(cents):
-    return 500 if cents < 5000 else 0
+    return 500
`
	r, job, rec := setupAttemptWith(t, scriptedmodel.Case{Patch: patch}, extra)
	job.Budget.MaxSteps = 6
	out := r.Run(context.Background(), job)
	if out.Status == StatusFixed {
		t.Fatalf("a patch breaking test_shipping.py was accepted")
	}
	var first string
	for _, tc := range rec.tools {
		if tc.Tool == tools.Submit {
			first = tc.Result
			break
		}
	}
	for _, want := range []string{refusedByChecks, "test_shipping.py::test_free_over_fifty", "did not have"} {
		if !strings.Contains(first, want) {
			t.Errorf("first submit's answer lacks %q:\n%s", want, first)
		}
	}
	if len(out.Flaky) != 0 {
		t.Errorf("deterministic failure recorded as flaky: %q", out.Flaky)
	}
}

// A unittest suite's flaky test is re-run alone (unittest's -k) and found flaky; a test that
// fails every time is not (the control).
func TestRerunUnittest(t *testing.T) {
	_, err := validate.ResolvePytest(context.Background())
	testenv.Need(t, testenv.Pytest, err)
	dir := t.TempDir()
	fixtureRepo(t, dir, map[string]string{
		"test_things.py": `import os
import unittest


class Things(unittest.TestCase):
    def test_sometimes(self):
        p = os.path.join(os.path.dirname(os.path.abspath(__file__)), "flake.count")
        n = int(open(p).read()) if os.path.exists(p) else 0
        with open(p, "w") as f:
            f.write(str(n + 1))
        self.assertEqual(n % 2, 1, "fails one run in two")

    def test_always(self):
        self.fail("broken")
`,
	})
	vr := &validate.Runner{Sandbox: testSandbox(t)}
	checks := []validate.Check{{Name: "tests", Kind: validate.KindUnittest}}
	results := vr.Run(context.Background(), dir, checks)
	failing := FailingTests(results)
	if len(failing["tests"]) != 2 {
		t.Fatalf("failing %v; want both tests failing on the first run\n%s", failing, results[0].Output)
	}
	_, flaky := Rerun(context.Background(), vr, dir, checks, results, failing, 1)
	if !slices.Equal(flaky, []string{"tests: test_things.Things.test_sometimes"}) {
		t.Errorf("flaky = %q; want only the test that passes when re-run alone", flaky)
	}
}

// countingChecks answers every run with one result: passed for the ids in pass, else failed;
// it counts the runs of each id.
type countingChecks struct {
	pass map[string]bool
	runs map[string]int
}

func (c *countingChecks) Run(ctx context.Context, dir string, checks []validate.Check) []validate.Result {
	id := checks[0].Only[0]
	c.runs[id]++
	if c.pass[id] {
		return []validate.Result{{Name: checks[0].Name, Kind: validate.KindPytest, Passed: true, Tests: 1}}
	}
	return []validate.Result{{Name: checks[0].Name, Kind: validate.KindPytest, Tests: 1, Errored: 1}}
}

// A change that breaks the package every test module imports (sqlparse's formatter.py left
// with an empty elif) errors each module with one finding: re-running one reproduces it, and
// the others are not re-run (they were, twice each: 20 pytest starts for one syntax error).
// A failure that went away on its re-run still has the others of its kind re-run, and a
// different failure is re-run on its own.
func TestRerunOnceForOneCause(t *testing.T) {
	syntax := validate.Finding{File: "pkg/__init__.py", Line: 14, Message: "IndentationError: expected an indented block (collection failure)"}
	mods := []string{"tests/test_a.py::tests.test_a", "tests/test_b.py::tests.test_b", "tests/test_c.py::tests.test_c"}
	other := "tests/test_d.py::test_d"
	for _, tc := range []struct {
		name  string
		pass  map[string]bool
		runs  map[string]int
		flaky []string
	}{
		{"one cause, reproduced", nil, map[string]int{mods[0]: 2, other: 2}, nil},
		{"the first went away", map[string]bool{mods[0]: true}, map[string]int{mods[0]: 1, mods[1]: 2, other: 2}, []string{"tests: " + mods[0]}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var findings []validate.Finding
			for _, id := range mods {
				f := syntax
				f.Test = id
				findings = append(findings, f)
			}
			findings = append(findings, validate.Finding{File: "tests/test_d.py", Line: 3, Test: other, Message: "assert 1 == 2"})
			results := []validate.Result{{Name: "tests", Kind: validate.KindPytest, Tests: 4, Errored: 4, Findings: findings}}
			run := &countingChecks{pass: tc.pass, runs: map[string]int{}}
			checks := []validate.Check{{Name: "tests", Kind: validate.KindPytest}}
			_, flaky := Rerun(context.Background(), run, "", checks, results, FailingTests(results), 2)
			if !maps.Equal(run.runs, tc.runs) || !slices.Equal(flaky, tc.flaky) {
				t.Errorf("re-runs %v, flaky %q; want re-runs %v, flaky %q", run.runs, flaky, tc.runs, tc.flaky)
			}
		})
	}
}
