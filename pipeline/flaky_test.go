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
	_, err := resolvedPytest()
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
	checks := []validate.Check{{Name: "tests", Kind: validate.KindUnittest, Python: testPython()}}
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

// countingChecks answers every run with one result: passed for the ids in pass, else failed,
// and a run of the whole check (no Only, counted under "") as passed; it counts the runs of
// each id.
type countingChecks struct {
	pass map[string]bool
	runs map[string]int
}

func (c *countingChecks) Run(ctx context.Context, dir string, checks []validate.Check) []validate.Result {
	if len(checks[0].Only) == 0 {
		c.runs[""]++
		return []validate.Result{{Name: checks[0].Name, Kind: validate.KindPytest, Passed: true, Tests: 1}}
	}
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
		{"the first went away", map[string]bool{mods[0]: true}, map[string]int{mods[0]: 1, mods[1]: 2, other: 2, "": 1}, []string{"tests: " + mods[0]}},
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

// contextChecks passes every test run alone, and fails id in the first failing runs of the
// whole check (no Only), passing it after: a test that depends on what ran before it when
// failing is the number of runs, a flake when it is fewer.
type contextChecks struct {
	id      string
	failing int
	runs    int
}

func (c *contextChecks) Run(ctx context.Context, dir string, checks []validate.Check) []validate.Result {
	if len(checks[0].Only) > 0 {
		return []validate.Result{{Name: checks[0].Name, Kind: validate.KindPytest, Passed: true, Tests: 1}}
	}
	c.runs++
	if c.runs <= c.failing {
		return []validate.Result{{Name: checks[0].Name, Kind: validate.KindPytest, Tests: 2,
			Findings: []validate.Finding{{Test: c.id, Message: "assert 3 == 2"}}, Outcomes: map[string]validate.Outcome{c.id: validate.OutcomeFailed}}}
	}
	return []validate.Result{{Name: checks[0].Name, Kind: validate.KindPytest, Passed: true, Tests: 2}}
}

// A test that passes alone is a flake only if it also passes beside the tests before it, in
// one of the runs of the check as it ran: one that fails in every such run fails for what
// the others leave behind, and stays the change's failure, saying so.
func TestRerunTellsOrderFromChance(t *testing.T) {
	const id = "test_calc.py::test_sub"
	for _, tt := range []struct {
		name    string
		failing int // context runs that fail the test
		times   int
		runs    int // context runs made
		flaky   bool
	}{
		{name: "fails after the others every time", failing: 99, times: 2, runs: 2},
		{name: "at least two runs beside the others", failing: 99, times: 1, runs: 2},
		{name: "fails after the others once, then passes: a flake", failing: 1, times: 2, runs: 2, flaky: true},
		{name: "passes beside the others at once: a flake", failing: 0, times: 2, runs: 1, flaky: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			results := []validate.Result{{Name: "tests", Kind: validate.KindPytest, Tests: 2,
				Findings: []validate.Finding{{Test: id, Message: "assert 3 == 2"}}, Outcomes: map[string]validate.Outcome{id: validate.OutcomeFailed}}}
			run := &contextChecks{id: id, failing: tt.failing}
			checks := []validate.Check{{Name: "tests", Kind: validate.KindPytest}}
			out, flaky := Rerun(context.Background(), run, "", checks, results, FailingTests(results), tt.times)
			if run.runs != tt.runs || (len(flaky) > 0) != tt.flaky {
				t.Fatalf("context runs %d, flaky %q; want %d runs, flaky %v", run.runs, flaky, tt.runs, tt.flaky)
			}
			if tt.flaky {
				if !out[0].Passed {
					t.Errorf("result %+v; want passed once the flake is excused", out[0])
				}
				return
			}
			if out[0].Passed || len(out[0].Findings) != 1 || !strings.Contains(out[0].Findings[0].Message, "depends on what they leave behind") {
				t.Errorf("result %+v; want the failure kept, saying it depends on the tests before it", out[0])
			}
		})
	}
}

// groupChecks answers re-runs of the base's failing tests: a run of several (Only) with an
// outcome per test, failing all but pass (or no outcomes at all, as a runner without a
// report per test gives); a run of one fails; the whole check (no Only) passes.
type groupChecks struct {
	pass       map[string]bool
	noOutcomes bool
	unknown    map[string]bool // ids the run of several reports nothing on
	runs       []string
}

func (g *groupChecks) Run(_ context.Context, _ string, checks []validate.Check) []validate.Result {
	c := checks[0]
	g.runs = append(g.runs, strings.Join(c.Only, " "))
	switch {
	case len(c.Only) == 0:
		return []validate.Result{{Name: c.Name, Kind: validate.KindPytest, Passed: true, Tests: 3}}
	case len(c.Only) == 1 || g.noOutcomes:
		return []validate.Result{{Name: c.Name, Kind: validate.KindPytest, Tests: len(c.Only), Errored: len(c.Only),
			Findings: []validate.Finding{{Test: c.Only[0], Message: "assert 1 == 2 in " + c.Only[0]}}}}
	}
	r := validate.Result{Name: c.Name, Kind: validate.KindPytest, Tests: len(c.Only), Outcomes: map[string]validate.Outcome{}}
	for _, id := range c.Only {
		if g.unknown[id] {
			continue
		}
		if g.pass[id] {
			r.Outcomes[id] = validate.OutcomePassed
			continue
		}
		r.Outcomes[id] = validate.OutcomeFailed
		r.Findings = append(r.Findings, validate.Finding{Test: id, Message: "assert 1 == 2 in " + id})
	}
	return []validate.Result{r}
}

// The base's failing tests are re-run once, together: one pytest start whatever their
// number; one that passes there is a flake once it passes beside the others too; a runner
// that gives no outcome per test has each re-run alone, as before.
func TestRerunBaseTogether(t *testing.T) {
	a, b, c := "tests/test_a.py::test_a", "tests/test_b.py::test_b", "tests/test_c.py::test_c"
	m := "tests/test_m.py::tests.test_m" // pytest's id of a module's collection error
	for _, tt := range []struct {
		name       string
		failing    []string
		pass       map[string]bool
		noOutcomes bool
		unknown    map[string]bool
		runs       []string
		flaky      []string
	}{
		{name: "all fail again: one run", failing: []string{a, b, c}, runs: []string{a + " " + b + " " + c}},
		{name: "one passes: a flake once it passes beside the others", failing: []string{a, b, c}, pass: map[string]bool{b: true},
			runs: []string{a + " " + b + " " + c, ""}, flaky: []string{"tests: " + b}},
		{name: "no outcome per test: each alone", failing: []string{a, b}, noOutcomes: true, runs: []string{a + " " + b, a, b}},
		{name: "no outcome for one: it alone", failing: []string{a, b, c}, unknown: map[string]bool{c: true}, runs: []string{a + " " + b + " " + c, c}},
		{name: "a module that did not collect: alone, never in the run of several", failing: []string{a, b, m}, runs: []string{a + " " + b, m}},
		{name: "one failing test: alone", failing: []string{a}, runs: []string{a}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := validate.Result{Name: "tests", Kind: validate.KindPytest, Tests: 5, Errored: len(tt.failing)}
			for _, id := range tt.failing {
				msg := "assert 1 == 2 in " + id // one cause each
				if id == m {
					msg = "SyntaxError: invalid syntax (collection failure)"
				}
				res.Findings = append(res.Findings, validate.Finding{Test: id, Message: msg})
			}
			run := &groupChecks{pass: tt.pass, noOutcomes: tt.noOutcomes, unknown: tt.unknown}
			checks := []validate.Check{{Name: "tests", Kind: validate.KindPytest}}
			results := []validate.Result{res}
			_, flaky := RerunBase(context.Background(), run, "", checks, results, FailingTests(results))
			if !slices.Equal(run.runs, tt.runs) || !slices.Equal(flaky, tt.flaky) {
				t.Errorf("runs %q, flaky %q; want runs %q, flaky %q", run.runs, flaky, tt.runs, tt.flaky)
			}
		})
	}
}
