package pipeline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/pipeline/tools"
	"github.com/ticketd/ticketd/pipeline/validate"
)

// atBase sets the code back to the base commit for the run and puts every file back as the
// change left it: a changed file, a file the change added (absent during the run), and the
// change's tests (kept as they are).
func TestAtBaseRestores(t *testing.T) {
	dir := t.TempDir()
	git := fixtureRepo(t, dir, map[string]string{"calc.py": buggy, "tests/test_calc.py": "def test_x():\n    pass\n"})
	changed := map[string]string{
		"calc.py":            "def double(x):\n    return x + x\n",
		"helpers.py":         "HELP = 1\n",
		"tests/test_calc.py": "def test_x():\n    assert 1\n",
		"tests/test_new.py":  "def test_new():\n    pass\n",
	}
	for p, c := range changed {
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(p)), []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "calc.py"), 0o600); err != nil {
		t.Fatal(err)
	}
	paths := []string{"calc.py", "helpers.py", "tests/test_calc.py", "tests/test_new.py"}
	a := newTestTree(Job{Dir: dir, BaseFile: baseFile(git, dir)})
	ran := false
	err := a.atBase(context.Background(), paths, func() {
		ran = true
		want := map[string]string{"calc.py": buggy, "helpers.py": "", "tests/test_calc.py": changed["tests/test_calc.py"], "tests/test_new.py": changed["tests/test_new.py"]}
		for p, w := range want {
			data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
			switch {
			case w == "" && !errors.Is(err, os.ErrNotExist):
				t.Errorf("during the run %s exists (%v); want it absent, as at the base", p, err)
			case w != "" && string(data) != w:
				t.Errorf("during the run %s = %q; want %q", p, data, w)
			}
		}
	})
	if err != nil || !ran {
		t.Fatalf("atBase: ran %v, err %v", ran, err)
	}
	for p, w := range changed {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil || string(data) != w {
			t.Errorf("after the run %s = %q (%v); want it back as the change left it, %q", p, data, err, w)
		}
	}
	if fi, _ := os.Stat(filepath.Join(dir, "calc.py")); fi.Mode().Perm() != 0o600 {
		t.Errorf("calc.py mode %v after the run; want its own 0600 back", fi.Mode().Perm())
	}

	// A changed path that is a symlink (planted by a check) is not written through.
	outside := filepath.Join(t.TempDir(), "outside.py")
	if err := os.WriteFile(outside, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "calc.py")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "calc.py")); err != nil {
		t.Fatal(err)
	}
	err = a.atBase(context.Background(), []string{"calc.py"}, func() { t.Error("ran with a symlink in the change") })
	if data, _ := os.ReadFile(outside); err == nil || string(data) != "keep me\n" {
		t.Errorf("atBase over a symlink: err %v, file outside %q; want an error and the file untouched", err, data)
	}
	a.baseFile = nil
	if err := a.atBase(context.Background(), paths, func() {}); !errors.Is(err, errNoBaseReader) {
		t.Errorf("atBase without a base reader: %v; want errNoBaseReader", err)
	}
}

// weakTest is a regression test that passes with the bug too: it shows nothing.
const weakTest = `diff --git a/test_double_sign.py b/test_double_sign.py
new file mode 100644
--- /dev/null
+++ b/test_double_sign.py
@@ -0,0 +1,5 @@
+from calc import double
+
+
+def test_double_sign():
+    assert double(3) > 0
`

// A maker whose new test passes at the base is told so, and a fix with nothing that fails at
// the base is never shipped: unverified, with the reason.
func TestEvidenceNewTestPassesAtBase(t *testing.T) {
	t.Parallel() // each runs its own scripted model, repository and pytest
	r, job, rec := setupAttemptWith(t, scriptedmodel.Case{Patch: fixPatch + weakTest},
		map[string]string{"test_calc.py": "from calc import double\n\n\ndef test_zero_is_odd_today():\n    assert double(0) in (0, 1)\n"})
	out := r.Run(context.Background(), job)
	if out.Status != StatusUnverified || !strings.Contains(out.Reason, "test_double_sign.py::test_double_sign pass at the base commit too") {
		t.Fatalf("status %s (%s); want unverified naming the test that passes at the base\nhistory:\n%s", out.Status, out.Reason, strings.Join(out.History, "\n"))
	}
	var told bool
	for _, tc := range rec.tools {
		told = told || tc.Tool == tools.Submit && strings.HasPrefix(tc.Result, refusedNoProof) && strings.Contains(tc.Result, "pass at the base commit too")
	}
	if !told {
		t.Errorf("no submit answer told the maker its test passes at the base: %+v", rec.tools)
	}
	if out.Verdict != nil || out.ReviewRounds != 0 {
		t.Errorf("an unverified change was reviewed: %d rounds", out.ReviewRounds)
	}
}

// Without a test suite, a triage verification that fails at the base and passes with the
// change is the evidence; one that passes at the base too is not, and the change is never
// shipped.
func TestEvidenceFromVerification(t *testing.T) {
	t.Parallel() // each runs its own scripted model, repository and pytest
	for _, tt := range []struct {
		name   string
		python string
		status Status
	}{
		{"reproduces the symptom", "from calc import double; assert double(2) == 4", StatusFixed},
		{"passes at the base too", "from calc import double; assert double(3) > 0", StatusUnverified},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, job, _ := setupAttemptWith(t, scriptedmodel.Case{}, nil)
			if err := os.Remove(filepath.Join(job.Dir, "test_calc.py")); err != nil {
				t.Fatal(err)
			}
			job.Checks, job.Baseline = nil, nil
			job.Ticket.Triage = `{"summary":"double is off by one","acceptance_criteria":["double(2) is 4"],"suspected_files":["calc.py"],` +
				`"verifications":[{"criterion":"double(2) is 4","python":` + jsonString(tt.python) + `}]}`
			out := r.Run(context.Background(), job)
			if out.Status != tt.status {
				t.Fatalf("status %s (%s), want %s\nhistory:\n%s", out.Status, out.Reason, tt.status, strings.Join(out.History, "\n"))
			}
			if tt.status == StatusFixed && (len(out.Evidence.Verified) != 1 || len(out.Evidence.Reproduced) != 0) {
				t.Errorf("evidence %+v; want the verification alone", out.Evidence)
			}
			if tt.status == StatusUnverified && !strings.Contains(out.Reason, "no test suite") {
				t.Errorf("reason %q; want it to say there is no test suite to add a test to", out.Reason)
			}
		})
	}
}

func jsonString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

func TestIsTestPath(t *testing.T) {
	for p, want := range map[string]bool{
		"tests/test_x.py": true, "test_x.py": true, "pkg/x_test.py": true, "conftest.py": true, "tests/helpers.py": true,
		"src/pkg/tests/data.json": true, "pkg/x.py": false, "src/pkg/testing_tools.py": false, "docs/usage.rst": false,
	} {
		if got := isTestPath(p); got != want {
			t.Errorf("isTestPath(%q) = %v; want %v", p, got, want)
		}
	}
}

// A repository tested with unittest: the test that failed at the base and passes with the
// change is the evidence (unittest names it by dotted id, not by pytest's node id), so a
// correct fix ships rather than ending unverified for want of a test.
func TestEvidenceUnittestSuite(t *testing.T) {
	t.Parallel() // its own scripted model, repository and python3
	r, job, _ := setupAttemptWith(t, scriptedmodel.Case{}, map[string]string{
		"test_calc_unit.py": "import unittest\n\nfrom calc import double\n\n\nclass DoubleTest(unittest.TestCase):\n    def test_two(self):\n        self.assertEqual(double(2), 4)\n",
	})
	job.Checks = []validate.Check{{Name: "unit", Kind: validate.KindUnittest, Python: testPython()}}
	job.Baseline = r.Checks.Run(context.Background(), job.Dir, job.Checks)
	if b := job.Baseline[0]; b.Passed || b.Tests != 1 {
		t.Fatalf("baseline: passed=%v tests=%d (%s); want 1 test failing", b.Passed, b.Tests, b.Summary)
	}
	out := r.Run(context.Background(), job)
	if out.Status != StatusFixed {
		t.Fatalf("status %s (%s), want fixed\nhistory:\n%s", out.Status, out.Reason, strings.Join(out.History, "\n"))
	}
	if want := "unit: test_calc_unit.DoubleTest.test_two"; out.Evidence == nil || !slices.Contains(out.Evidence.Reproduced, want) {
		t.Errorf("evidence %+v; want %q reproduced", out.Evidence, want)
	}
}

// The change's own test modules run apart under a unittest check too, with the change and
// at the base's code, selected by their module name (-k), not the whole suite again: on a
// real suite (more-itertools: 900 tests, a minute under load) each whole run added a minute
// to every submit.
func TestOwnTestsUnittestSelectsChangedModules(t *testing.T) {
	t.Parallel() // its own scripted model, repository and python3
	newTest := "import unittest\n\nfrom calc import double\n\n\nclass RegressionTest(unittest.TestCase):\n    def test_two(self):\n        self.assertEqual(double(2), 4)\n"
	var lines []string
	for _, l := range strings.SplitAfter(newTest, "\n") {
		if l != "" {
			lines = append(lines, "+"+l)
		}
	}
	patch := fixPatch + "diff --git a/test_regression_double.py b/test_regression_double.py\nnew file mode 100644\n--- /dev/null\n+++ b/test_regression_double.py\n" +
		fmt.Sprintf("@@ -0,0 +1,%d @@\n", len(lines)) + strings.Join(lines, "")
	other := "import unittest\n\n\nclass OtherTest(unittest.TestCase):\n    def test_a(self):\n        self.assertTrue(True)\n\n    def test_b(self):\n        self.assertTrue(True)\n\n    def test_c(self):\n        self.assertTrue(True)\n"
	r, job, _ := setupAttemptWith(t, scriptedmodel.Case{Patch: patch}, map[string]string{"test_other.py": other})
	job.Checks = []validate.Check{{Name: "unit", Kind: validate.KindUnittest, Python: testPython()}}
	job.Baseline = r.Checks.Run(context.Background(), job.Dir, job.Checks)
	if b := job.Baseline[0]; !b.Passed || b.Tests != 3 {
		t.Fatalf("baseline: passed=%v tests=%d (%s); want 3 passing", b.Passed, b.Tests, b.Summary)
	}
	runs := &summaryRecorder{inner: r.Checks}
	r.Checks = runs
	out := r.Run(context.Background(), job)
	if out.Status != StatusFixed {
		t.Fatalf("status %s (%s), want fixed\nhistory:\n%s", out.Status, out.Reason, strings.Join(out.History, "\n"))
	}
	// The suite in its base versions runs the 3 tests; nothing runs the new module beside
	// them (the evidence run at the base's code and the change's own run select it alone).
	for _, s := range runs.all() {
		if strings.HasPrefix(s, "ran 4 tests") {
			t.Errorf("a run of the whole suite with the change's test module: %q (all runs: %q)", s, runs.all())
		}
	}
	if len(out.Checks) != 1 || !strings.Contains(out.Checks[0].Summary, "the change's test files: ran 1 tests:") {
		t.Errorf("checks %+v; want the change's test files run alone (ran 1 tests)", out.Checks)
	}
	if want := "unit: test_regression_double.RegressionTest.test_two"; out.Evidence == nil || !slices.Contains(out.Evidence.NewTests, want) {
		t.Errorf("evidence %+v; want %q as a new test", out.Evidence, want)
	}
}

// summaryRecorder keeps the summary of every check run through it.
type summaryRecorder struct {
	inner CheckRunner
	mu    sync.Mutex
	sums  []string
}

func (s *summaryRecorder) Run(ctx context.Context, dir string, checks []validate.Check) []validate.Result {
	res := s.inner.Run(ctx, dir, checks)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range res {
		s.sums = append(s.sums, r.Summary)
	}
	return res
}

func (s *summaryRecorder) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sums)
}

// extendedTest adds the regression assertion to a test the base commit already has, as
// more-itertools' upstream fixes do (a line more in test_ilen).
const extendedTest = `diff --git a/test_calc.py b/test_calc.py
--- a/test_calc.py
+++ b/test_calc.py
@@ -3,3 +3,4 @@
 
 def test_double_zero():
     assert double(0) in (0, 1)
+    assert double(2) == 4
`

// A maker whose only test change extends an existing test is told why that shows nothing
// (the test runs in its base version) and what to do instead: a new test function.
func TestEvidenceExtendedExistingTest(t *testing.T) {
	t.Parallel() // each runs its own scripted model, repository and pytest
	r, job, rec := setupAttemptWith(t, scriptedmodel.Case{Patch: fixPatch + extendedTest},
		map[string]string{"test_calc.py": "from calc import double\n\n\ndef test_double_zero():\n    assert double(0) in (0, 1)\n"})
	out := r.Run(context.Background(), job)
	if out.Status != StatusUnverified {
		t.Fatalf("status %s (%s); want unverified\nhistory:\n%s", out.Status, out.Reason, strings.Join(out.History, "\n"))
	}
	var told bool
	for _, tc := range rec.tools {
		told = told || tc.Tool == tools.Submit && strings.HasPrefix(tc.Result, refusedNoProof) &&
			strings.Contains(tc.Result, "Your edits to test_calc.py do not count") && strings.Contains(tc.Result, "new test function")
	}
	if !told {
		t.Errorf("no submit answer told the maker its edit of an existing test does not count: %+v", rec.tools)
	}
}

// doctestOnlyFix fixes double for negative numbers and adds the regression as a doctest line
// in its docstring, as tabulate and jaraco.functools write theirs.
const doctestOnlyFix = `diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,6 +1,8 @@
 def double(x):
     """
     >>> double(2)
     4
+    >>> double(-2)
+    -4
     """
-    return abs(x) * 2
+    return x * 2
`

// A maker whose only regression test is a doctest line added to the code's docstring is
// sent back once, told why an edited doctest cannot count and where the test goes instead;
// the same change again ends the attempt for a human, as any weakened test does.
func TestEvidenceDoctestOnlyRegressionRefusedOnce(t *testing.T) {
	t.Parallel() // each runs its own scripted model, repository and pytest
	r, job, rec := setupAttemptWith(t, scriptedmodel.Case{Patch: doctestOnlyFix}, map[string]string{
		"pytest.ini": "[pytest]\naddopts = --doctest-modules\n",
		"calc.py":    "def double(x):\n    \"\"\"\n    >>> double(2)\n    4\n    \"\"\"\n    return abs(x) * 2\n",
	})
	out := r.Run(context.Background(), job)
	if out.Status != StatusTestsChanged || !strings.Contains(out.Reason, "calc.py::calc.double") {
		t.Fatalf("status %s (%s); want tests changed naming calc.py::calc.double\nhistory:\n%s", out.Status, out.Reason, strings.Join(out.History, "\n"))
	}
	var answers []string
	for _, tc := range rec.tools {
		if tc.Tool == tools.Submit {
			answers = append(answers, tc.Result)
		}
	}
	if len(answers) != 2 {
		t.Fatalf("%d submits; want the first sent back and the second to end the attempt: %q", len(answers), answers)
	}
	for _, want := range []string{"calc.py::calc.double", "Leave the docstrings' examples and expected output exactly as the base commit has them", "new test function"} {
		if !strings.Contains(answers[0], want) {
			t.Errorf("first submit's answer lacks %q:\n%s", want, answers[0])
		}
	}
}

// dataCaseFix fixes double and adds its regression test as a case in the data file a test
// module turns into parametrized tests, as jmespath adds cases to tests/compliance/*.json.
const dataCaseFix = fixPatch + `diff --git a/tests/cases.json b/tests/cases.json
--- a/tests/cases.json
+++ b/tests/cases.json
@@ -1 +1 @@
-[["half", 4, 2]]
+[["half", 4, 2], ["double", 2, 4]]
`

// A regression test written as a case more in the tests' data file is the change's new test:
// the test module that read the file at the base runs as the change left the data, and its
// new case, failing at the base commit's code, is the evidence. The gate still judges the
// data in its base version (the edited file is listed, never evidence by itself).
func TestEvidenceNewCaseInTestData(t *testing.T) {
	t.Parallel() // each runs its own scripted model, repository and pytest
	r, job, _ := setupAttemptWith(t, scriptedmodel.Case{Patch: dataCaseFix}, map[string]string{
		"calc.py":           buggy + "\n\ndef half(x):\n    return x // 2\n",
		"test_calc.py":      "from calc import half\n\n\ndef test_half():\n    assert half(2) == 1\n",
		"tests/__init__.py": "",
		"tests/cases.json":  "[[\"half\", 4, 2]]\n",
		"tests/test_cases.py": "import json\nimport os\n\nimport pytest\n\nimport calc\n\nwith open(os.path.join(os.path.dirname(__file__), \"cases.json\")) as f:\n    CASES = json.load(f)\n\n\n" +
			"@pytest.mark.parametrize(\"name, x, expected\", CASES)\ndef test_case(name, x, expected):\n    assert getattr(calc, name)(x) == expected\n",
	})
	out := r.Run(context.Background(), job)
	if out.Status != StatusFixed {
		t.Fatalf("status %s (%s); want fixed by the new data case\nhistory:\n%s", out.Status, out.Reason, strings.Join(out.History, "\n"))
	}
	if out.Evidence == nil || !slices.Contains(out.Evidence.NewTests, "tests: tests/test_cases.py::test_case[double-2-4]") {
		t.Errorf("evidence %+v; want the new case tests/test_cases.py::test_case[double-2-4]", out.Evidence)
	}
}

// asyncTest adds, beside the fix, a regression test written as an `async def` test, as
// projects tested through pytest-asyncio write them.
const asyncTest = `diff --git a/test_double_async.py b/test_double_async.py
new file mode 100644
--- /dev/null
+++ b/test_double_async.py
@@ -0,0 +1,5 @@
+from calc import double
+
+
+async def test_double_two():
+    assert double(2) == 4
`

// An `async def` regression test that pytest skips for want of an async plugin never ran:
// the fix is not shipped, and neither the maker nor the report is told that the test "passes
// at the base too" (it ran neither way); both are told why it was skipped and what to do.
func TestEvidenceAsyncTestNeverRan(t *testing.T) {
	t.Parallel() // each runs its own scripted model, repository and pytest
	r, job, rec := setupAttemptWith(t, scriptedmodel.Case{Patch: fixPatch + asyncTest},
		map[string]string{"test_calc.py": "from calc import double\n\n\ndef test_zero():\n    assert double(0) in (0, 1)\n"})
	out := r.Run(context.Background(), job)
	if out.Status != StatusUnverified || !strings.Contains(out.Reason, "test_double_async.py::test_double_two did not run: skipped") {
		t.Fatalf("status %s (%s); want unverified naming the test that did not run\nhistory:\n%s", out.Status, out.Reason, strings.Join(out.History, "\n"))
	}
	if strings.Contains(out.Reason, "pass at the base commit too") || !strings.Contains(out.Reason, "no async plugin") {
		t.Errorf("reason %q: want the skipped test not called passing at the base, and the missing async plugin named", out.Reason)
	}
	if out.Evidence == nil || !slices.Contains(out.Evidence.NotRun, "test_double_async.py::test_double_two") || !strings.Contains(out.Evidence.Text(), "pytest-asyncio") {
		t.Errorf("evidence %+v; want test_double_async.py::test_double_two among the tests that did not run, with the async advice", out.Evidence)
	}
	var told bool
	for _, tc := range rec.tools {
		if tc.Tool != tools.Submit || !strings.HasPrefix(tc.Result, refusedNoProof) {
			continue
		}
		told = true
		if !strings.Contains(tc.Result, "did not run: the checks skipped them") || strings.Contains(tc.Result, "pass at the base commit too") || strings.Contains(tc.Result, "do not count") {
			t.Errorf("submit answer %q: want the test named as skipped, never as passing at the base or as an edit", tc.Result)
		}
	}
	if !told {
		t.Errorf("no submit answer was a refusal for want of evidence: %+v", rec.tools)
	}
}

// renderTest adds, beside the fix, a regression test (a method, which the maker does not name
// in submit's "tests") to a test file that does not import (it imports a module the checks'
// interpreter lacks, at the base commit too).
const renderTest = `diff --git a/test_render.py b/test_render.py
--- a/test_render.py
+++ b/test_render.py
@@ -5,2 +5,7 @@ from calc import double
 def test_render_zero():
     assert double(0) in (0, 1)
+
+
+class TestDouble:
+    def test_two(self):
+        assert double(2) == 4
`

// A regression test added to a test file that pytest cannot collect (mako's
// test/test_filters.py imports markupsafe, absent) never ran: the maker and the report are
// told the file did not collect and why, never that "an assertion added to an existing test
// never runs", which would send the maker after the wrong cause.
func TestEvidenceTestFileNeverCollected(t *testing.T) {
	t.Parallel() // each runs its own scripted model, repository and pytest
	r, job, rec := setupAttemptWith(t, scriptedmodel.Case{Patch: fixPatch + renderTest}, map[string]string{
		"test_calc.py":   "from calc import double\n\n\ndef test_zero():\n    assert double(0) in (0, 1)\n",
		"test_render.py": "import missing_render_dep\n\nfrom calc import double\n\n\ndef test_render_zero():\n    assert double(0) in (0, 1)\n",
	})
	out := r.Run(context.Background(), job)
	const want = "test_render.py (ModuleNotFoundError: No module named 'missing_render_dep', at the base commit too)"
	if out.Status != StatusUnverified || !strings.Contains(out.Reason, "could not be collected: "+want) {
		t.Fatalf("status %s (%s); want unverified naming the file that did not collect\nhistory:\n%s", out.Status, out.Reason, strings.Join(out.History, "\n"))
	}
	if out.Evidence == nil || !slices.Contains(out.Evidence.Uncollected, want) || !strings.Contains(out.Evidence.Text(), "could not collect") {
		t.Errorf("evidence %+v; want %q among the files that did not collect", out.Evidence, want)
	}
	var told bool
	for _, tc := range rec.tools {
		if tc.Tool != tools.Submit || !strings.HasPrefix(tc.Result, refusedNoProof) {
			continue
		}
		told = true
		if !strings.Contains(tc.Result, "pytest could not collect them with your change") || strings.Contains(tc.Result, "do not count") || strings.Contains(tc.Result, "pass at the base commit too") {
			t.Errorf("submit answer %q: want the file named as not collected, never the edit as an assertion that never runs", tc.Result)
		}
	}
	if !told {
		t.Errorf("no submit answer was a refusal for want of evidence: %+v", rec.tools)
	}
}

// A target test (named on submit) in a test file that does not collect never ran: the
// refusal says its file did not collect and why, not only that it "errored".
func TestTargetInFileNeverCollected(t *testing.T) {
	t.Parallel() // each runs its own scripted model, repository and pytest
	const namedTest = `diff --git a/test_render.py b/test_render.py
--- a/test_render.py
+++ b/test_render.py
@@ -5,2 +5,6 @@ from calc import double
 def test_render_zero():
     assert double(0) in (0, 1)
+
+
+def test_double_two():
+    assert double(2) == 4
`
	r, job, rec := setupAttemptWith(t, scriptedmodel.Case{Patch: fixPatch + namedTest}, map[string]string{
		"test_calc.py":   "from calc import double\n\n\ndef test_zero():\n    assert double(0) in (0, 1)\n",
		"test_render.py": "import missing_render_dep\n\nfrom calc import double\n\n\ndef test_render_zero():\n    assert double(0) in (0, 1)\n",
	})
	out := r.Run(context.Background(), job)
	if out.Status == StatusFixed {
		t.Fatalf("status %s (%s); want the fix refused: its target never ran", out.Status, out.Reason)
	}
	const want = "test_render.py::test_double_two did not run: test_render.py did not collect (ModuleNotFoundError: No module named 'missing_render_dep')"
	var told bool
	for _, tc := range rec.tools {
		if tc.Tool == tools.Submit && strings.Contains(tc.Result, want) {
			told = true
		}
	}
	if !told {
		t.Errorf("no submit answer says %q: %+v", want, rec.tools)
	}
}
