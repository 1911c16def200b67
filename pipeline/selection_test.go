package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/pipeline/validate"
)

// everySubmit is checks configured full_suite: every_submit (a copy).
func everySubmit(checks []validate.Check) []validate.Check {
	out := slices.Clone(checks)
	for i := range out {
		out[i].FullSuite = validate.FullSuiteEverySubmit
	}
	return out
}

// selectionRepo: calc.py imported by test_calc.py directly and by test_report.py through
// report.py; other.py imported only by test_other.py; a tests/ package with its conftest.
var selectionRepo = map[string]string{
	"calc.py":              "def double(x):\n    return x + x\n",
	"report.py":            "from calc import double\n\n\ndef show(x):\n    return str(double(x))\n",
	"other.py":             "def half(x):\n    return x / 2\n",
	"test_calc.py":         "from calc import double\n\n\ndef test_double():\n    assert double(2) == 4\n",
	"test_report.py":       "import report\n\n\ndef test_show():\n    assert report.show(2) == '4'\n",
	"test_other.py":        "from other import half\n\n\ndef test_half():\n    assert half(4) == 2\n",
	"tests/__init__.py":    "",
	"tests/conftest.py":    "import pytest\n",
	"tests/test_deep.py":   "def test_deep():\n    assert True\n",
	"pkg/__init__.py":      "",
	"pkg/mod.py":           "X = 1\n",
	"data/prices.json":     "{}\n",
	"pytest.ini":           "[pytest]\n",
	"plugins/__init__.py":  "",
	"plugins/loaded.py":    "Y = 2\n",
	"tests/test_plugin.py": "def test_p():\n    assert True\n",
}

// baselineOf is a passing base run of check "tests" over ids.
func baselineOf(ids ...string) []validate.Result {
	out := map[string]validate.Outcome{}
	for _, id := range ids {
		out[id] = validate.OutcomePassed
	}
	return []validate.Result{{Name: "tests", Kind: validate.KindPytest, Passed: true, Tests: len(ids), Outcomes: out}}
}

var selectionBase = baselineOf("test_calc.py::test_double", "test_report.py::test_show", "test_other.py::test_half",
	"tests/test_deep.py::test_deep", "tests/test_plugin.py::test_p")

func TestChooseTests(t *testing.T) {
	pytest := []validate.Check{{Name: "tests", Kind: validate.KindPytest}}
	for _, tt := range []struct {
		name     string
		extra    map[string]string // files added to (or replacing in) selectionRepo
		remove   []string          // files deleted from the tree (the change deleted them)
		changed  []string
		checks   []validate.Check
		baseline []validate.Result
		want     []string // selected files; nil with whole set
		whole    string   // part of the reason the whole suite runs; "" when selected
	}{
		{name: "a module: the tests that import it, directly and through others", changed: []string{"calc.py"},
			want: []string{"test_calc.py", "test_report.py"}},
		{name: "a leaf module", changed: []string{"other.py"}, want: []string{"test_other.py"}},
		{name: "a module no test reaches", changed: []string{"pkg/mod.py"}, want: nil},
		{name: "a test edited to stop importing the change is still selected", changed: []string{"calc.py", "test_calc.py"},
			extra: map[string]string{"test_calc.py": "def double(x):\n    return 4\n\n\ndef test_double():\n    assert double(2) == 4\n"},
			want:  []string{"test_calc.py", "test_report.py"}},
		{name: "a test file the change deleted runs in its base version", changed: []string{"calc.py", "test_calc.py"},
			remove: []string{"test_calc.py"}, want: []string{"test_calc.py", "test_report.py"}},
		{name: "a module stops importing the change: what imports it is still reached", changed: []string{"calc.py", "report.py"},
			extra: map[string]string{"report.py": "def show(x):\n    return '4'\n"}, want: []string{"test_calc.py", "test_report.py"}},
		{name: "a new test file is left to the change's own run", changed: []string{"calc.py", "test_new.py"},
			extra: map[string]string{"test_new.py": "from calc import double\n"}, want: []string{"test_calc.py", "test_report.py"}},
		{name: "a conftest that imports the change reaches the tests below it", changed: []string{"other.py"},
			extra: map[string]string{"tests/conftest.py": "import other\n"},
			want:  []string{"test_other.py", "tests/test_deep.py", "tests/test_plugin.py"}},
		{name: "conftest.py", changed: []string{"tests/conftest.py"}, whole: "configures the tests"},
		{name: "pytest.ini", changed: []string{"pytest.ini"}, whole: "configures the tests"},
		{name: "pyproject.toml", changed: []string{"calc.py", "pyproject.toml"}, whole: "configures the tests"},
		{name: "setup.cfg", changed: []string{"setup.cfg"}, whole: "configures the tests"},
		{name: "tox.ini", changed: []string{"tox.ini"}, whole: "configures the tests"},
		{name: "a package __init__", changed: []string{"pkg/__init__.py"}, whole: "package __init__"},
		{name: "a data file", changed: []string{"data/prices.json"}, whole: "not a Python module"},
		{name: "a module named in a plugin list", changed: []string{"plugins/loaded.py"},
			extra: map[string]string{"tests/conftest.py": "pytest_plugins = ['plugins.loaded']\n"}, whole: `"plugins.loaded"`},
		{name: "a module imported by a literal name", changed: []string{"other.py"},
			extra: map[string]string{"loader.py": "import importlib\nm = importlib.import_module('other')\n"}, whole: `"other"`},
		{name: "modules imported by a computed name", changed: []string{"other.py"},
			extra: map[string]string{"loader.py": "import importlib, sys\nm = importlib.import_module(sys.argv[1])\n"}, whole: "computed name"},
		{name: "modules imported by a computed name in a function one test calls (networkx's lazy_imports.py)", changed: []string{"other.py"},
			extra: map[string]string{"pkg/lazy.py": "import importlib\n\n__all__ = ['attach']\n\n\ndef attach(name):\n    def __getattr__(attr):\n        return importlib.import_module(f'{name}.{attr}')\n    return __getattr__\n",
				"pkg/__init__.py": "from pkg.lazy import *\n", "test_calc.py": "import pkg.lazy\nfrom calc import double\n\n\ndef test_double():\n    assert pkg.lazy.attach('x')\n"},
			want: []string{"test_calc.py", "test_other.py"}},
		{name: "full_suite: every_submit", changed: []string{"calc.py"}, checks: everySubmit(pytest), whole: "every_submit"},
		{name: "a base run without per-test results", changed: []string{"calc.py"},
			baseline: []validate.Result{{Name: "tests", Kind: validate.KindPytest, Passed: false, Tests: -1}}, whole: "no base results"},
		{name: "no pytest check", changed: []string{"calc.py"}, checks: []validate.Check{{Name: "u", Kind: validate.KindUnittest}}, whole: "no pytest check"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{}
			for k, v := range selectionRepo {
				files[k] = v
			}
			for k, v := range tt.extra {
				files[k] = v
			}
			dir := t.TempDir()
			for name, content := range files {
				if slices.Contains(tt.remove, name) {
					continue
				}
				p := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			checks, base := tt.checks, tt.baseline
			if checks == nil {
				checks = pytest
			}
			if base == nil {
				base = selectionBase
			}
			sel, _ := chooseTests(dir, nil, nil, checks, base, tt.changed, nil)
			if tt.whole != "" {
				if !strings.Contains(sel.Whole, tt.whole) {
					t.Fatalf("selection %+v; want the whole suite because %q", sel, tt.whole)
				}
				return
			}
			if sel.Whole != "" || !reflect.DeepEqual(sel.Files, tt.want) {
				t.Fatalf("selection %+v; want files %q", sel, tt.want)
			}
		})
	}
}

// standIn keeps the base's outcomes and failures for the tests not run: a base failure
// outside the selection stays a remaining failure, never fixed nor new.
func TestStandIn(t *testing.T) {
	base := validate.Result{Name: "tests", Kind: validate.KindPytest, Passed: false, Tests: 3,
		Outcomes: map[string]validate.Outcome{"a.py::t": validate.OutcomePassed, "b.py::t": validate.OutcomeFailed, "c.py::t": validate.OutcomePassed},
		Findings: []validate.Finding{{Test: "b.py::t", Message: "broken at base"}}}
	run := validate.Result{Name: "tests", Kind: validate.KindPytest, Passed: true, Tests: 1,
		Outcomes: map[string]validate.Outcome{"a.py::t": validate.OutcomePassed}}
	sel := &Selection{Files: []string{"a.py"}}
	checks := []validate.Check{{Name: "tests", Kind: validate.KindPytest}}
	got := standIn(sel, checks, []validate.Result{run}, []validate.Result{base})
	g := Compare([]validate.Result{base}, got)
	if !g.Passed || len(g.Remaining) != 1 || len(g.Fixed) != 0 || got[0].Tests != 3 {
		t.Fatalf("gate %+v over %+v; want passed, b.py's base failure remaining, 3 tests", g, got)
	}
	// Nothing selected: the check is its base result.
	got = standIn(&Selection{}, checks, nil, []validate.Result{base})
	if len(got) != 1 || !reflect.DeepEqual(got[0].Outcomes, base.Outcomes) {
		t.Fatalf("nothing selected: %+v; want the base result", got)
	}
}

// selectionExtra is the real-pytest repository of the attempts below: test_calc.py and a
// legacy test file import calc; test_other.py does not (and would time the suite).
var selectionExtra = map[string]string{
	"other.py":      "def half(x):\n    return x / 2\n",
	"test_other.py": "from other import half\n\n\ndef test_half():\n    assert half(4) == 2\n",
}

// A change to one module is decided by the tests that import it, the base's results
// standing for test_other.py: no run names the whole suite, and test_other's outcome is in
// the verdict. With full_suite: every_submit, or a data file in the change, the whole suite
// runs.
func TestSelectionDecidesSubmit(t *testing.T) {
	dataFile := "diff --git a/rates.json b/rates.json\n--- a/rates.json\n+++ b/rates.json\n@@ -1 +1 @@\n-{}\n+{\"eur\": 1}\n"
	extra := map[string]string{"rates.json": "{}\n"}
	for k, v := range selectionExtra {
		extra[k] = v
	}
	for _, tt := range []struct {
		name      string
		patch     string
		every     bool
		wantTier  string
		wantWhole bool
	}{
		{name: "selection", wantTier: TierSelected},
		{name: "every_submit", every: true, wantTier: TierFull, wantWhole: true},
		{name: "a data file beside the module", patch: fixPatch + dataFile, wantTier: TierFull, wantWhole: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, job, _ := setupAttemptWith(t, scriptedmodel.Case{Patch: tt.patch}, extra)
			if tt.every {
				job.Checks = everySubmit(job.Checks)
			}
			checks := &recordingChecks{inner: r.Checks}
			r.Checks = checks
			out := r.Run(context.Background(), job)
			t.Logf("status %s (%s); runs %v\nhistory:\n%s", out.Status, out.Reason, checks.runs, strings.Join(out.History, "\n"))
			if out.Status != StatusFixed || out.Gate == nil {
				t.Fatalf("status %s; want fixed", out.Status)
			}
			if out.Gate.Tier != tt.wantTier {
				t.Errorf("tier %q; want %q", out.Gate.Tier, tt.wantTier)
			}
			if got := checks.fullRuns() > 0; got != tt.wantWhole {
				t.Errorf("whole-suite run made = %v; want %v (runs %v)", got, tt.wantWhole, checks.runs)
			}
			for _, run := range checks.runs {
				if !tt.wantWhole && slices.Contains(run, "test_other.py") {
					t.Errorf("a run named test_other.py, which the change cannot reach: %v", checks.runs)
				}
			}
			res := resultNamed(out.Gate.Results, "tests")
			if res == nil || res.Outcomes["test_other.py::test_half"] != validate.OutcomePassed {
				t.Errorf("verdict's outcomes %+v; want test_other.py::test_half standing at its base result", res)
			}
		})
	}
}

// The maker breaks a test that imports calc and edits that test to stop importing calc (a
// local double that passes): the edited test is still selected and speaks in its base
// version, so the submit cannot pass.
func TestSelectionMakerCannotExcludeATest(t *testing.T) {
	t.Parallel()
	legacy := "from calc import double\n\n\ndef test_one():\n    assert double(1) != 2\n"
	extra := map[string]string{"other.py": selectionExtra["other.py"], "test_other.py": selectionExtra["test_other.py"], "tests/test_legacy.py": legacy}
	patch := fixPatch + `diff --git a/tests/test_legacy.py b/tests/test_legacy.py
--- a/tests/test_legacy.py
+++ b/tests/test_legacy.py
@@ -1,5 +1,6 @@
-from calc import double
+def double(x):
+    return 3
 
 
 def test_one():
     assert double(1) != 2
`
	r, job, _ := setupAttemptWith(t, scriptedmodel.Case{Patch: patch}, extra)
	job.Budget.MaxSteps = 4
	out := r.Run(context.Background(), job)
	t.Logf("status %s (%s)\nhistory:\n%s", out.Status, out.Reason, strings.Join(out.History, "\n"))
	if out.Status == StatusFixed {
		t.Fatalf("status fixed; a change that breaks tests/test_legacy.py and edits it out of its reach must not pass")
	}
	if out.Gate == nil || !strings.Contains(strings.Join(append(out.Gate.New, out.Gate.Weakened...), "\n"), "test_legacy.py") {
		t.Fatalf("gate %+v; want tests/test_legacy.py's failure named", out.Gate)
	}
}
