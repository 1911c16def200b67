package validate

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestHealth(t *testing.T) {
	tests := []struct {
		name string
		r    Result
		want string // "" for healthy
	}{
		{"passing suite", Result{Name: "t", Kind: KindPytest, Passed: true, Tests: 4}, ""},
		{"some failures", Result{Name: "t", Kind: KindPytest, Tests: 4, Errored: 1, Findings: []Finding{{Test: "a::b", Message: "boom"}}}, ""},
		{"lint debt", Result{Name: "l", Kind: KindRuff, Findings: []Finding{{Test: "F401", Message: "unused"}}}, ""},
		{"no tests", Result{Name: "t", Kind: KindPytest, Passed: true, Tests: 0, Summary: "no tests collected"}, "collected no test"},
		{"configuration refused", Result{Name: "t", Kind: KindPytest, Tests: 0, ExitCode: 4, Summary: "0 passed (pytest exited 4)",
			Output: "-------------- generated xml file: /run/ticketd/ticketd-junit.xml --------------\nno tests ran in 0.03s\nERROR: Unknown config option: consider_namespace_packages\n"},
			"pytest refused to run at the base commit: Unknown config option: consider_namespace_packages"},
		{"no report", Result{Name: "t", Kind: KindPytest, Tests: -1, Summary: "pytest exited 4 without a test report", Output: "ERROR: usage\n"}, "no test report"},
		{"all errored", Result{Name: "t", Kind: KindPytest, Tests: 3, Errored: 3, Findings: []Finding{{Test: "tests.test_a", Message: "ModuleNotFoundError: No module named 'vendor'"}}}, "every one of the 3"},
		{"internal error", Result{Name: "t", Kind: KindPytest, Tests: 1, Errored: 1, Findings: []Finding{{Test: "pytest::internal", Message: "internal error"}},
			Output: "INTERNALERROR> Traceback (most recent call last):\nINTERNALERROR>   File \"tests/conftest.py\", line 20, in pytest_collection_modifyitems\nINTERNALERROR>     item.add_marker(pytest.mark.no_cover)\nINTERNALERROR> pytest.PytestUnknownMarkWarning: Unknown pytest.mark.no_cover - is this a typo?\n"},
			"internal error at the base commit, before any test ran: pytest.PytestUnknownMarkWarning: Unknown pytest.mark.no_cover"},
		// portalocker: two Windows-only modules skip at collection, then a conftest.py hook stops
		// the session; no test passed, so the suite gates nothing.
		{"internal error after module-level skips", Result{Name: "t", Kind: KindPytest, Tests: 3, Errored: 1,
			Outcomes: map[string]Outcome{"pytest::internal": OutcomeError, "test_win.py": OutcomeSkipped, "test_nt.py": OutcomeSkipped},
			Output:   "INTERNALERROR>   File \"conftest.py\", line 50, in pytest_collection_modifyitems\nINTERNALERROR> Failed: 'timeout' not found in `markers` configuration option\n"},
			"internal error at the base commit, before any test ran: Failed: 'timeout' not found"},
		{"internal error after tests passed", Result{Name: "t", Kind: KindPytest, Tests: 3, Errored: 1,
			Outcomes: map[string]Outcome{"pytest::internal": OutcomeError, "test_a.py::test_a": OutcomePassed, "test_nt.py": OutcomeSkipped},
			Output:   "INTERNALERROR> RuntimeError: boom in pytest_terminal_summary\n"}, ""},
		// docopt's root conftest.py builds its collector the way pytest 5 did: the session errors.
		{"session errored", Result{Name: "t", Kind: KindPytest, Tests: 1, Errored: 1, Findings: []Finding{{Message: "Direct construction of conftest.DocoptTestFile has been deprecated, please use conftest.DocoptTestFile.from_parent. (collection failure)"}}},
			"could not collect the test session at the base commit, so no test ran: Direct construction of conftest.DocoptTestFile"},
		// inflect without typeguard: --doctest-modules imports the package first and fails;
		// the tests, under --import-mode importlib, then fail on an empty inflect module.
		{"no test passes, the package does not import", Result{Name: "t", Kind: KindPytest, Tests: 4, Errored: 1,
			Findings: []Finding{
				{Test: "inflect/__init__.py::inflect.__init__", Message: "ModuleNotFoundError: No module named 'typeguard' (collection failure)"},
				{Test: "tests/test_an.py::test_an", Message: "AttributeError: module 'inflect' has no attribute 'engine'"}},
			Outcomes: map[string]Outcome{"inflect/__init__.py": OutcomeError, "tests/test_an.py::test_an": OutcomeFailed,
				"tests/test_an.py::test_an_abbreviation": OutcomeFailed, "tests/test_pwd.py::test_skip": OutcomeSkipped}},
			"no test of the 4 collected passes at the base commit, and inflect/__init__.py cannot import typeguard"},
		{"a test passes beside a file that does not import", Result{Name: "t", Kind: KindPytest, Tests: 3, Errored: 1,
			Findings: []Finding{{Test: "tests/test_b.py::tests.test_b", Message: "ModuleNotFoundError: No module named 'pretend' (collection failure)"}},
			Outcomes: map[string]Outcome{"tests/test_b.py": OutcomeError, "tests/test_a.py::test_a": OutcomePassed, "tests/test_a.py::test_bug": OutcomeFailed}}, ""},
		{"no test passes, nothing missing (the bug's own test)", Result{Name: "t", Kind: KindPytest, Tests: 1,
			Findings: []Finding{{Test: "tests/test_a.py::test_bug", Message: "assert 5 == 4"}},
			Outcomes: map[string]Outcome{"tests/test_a.py::test_bug": OutcomeFailed}}, ""},
		{"tool missing", Result{Name: "l", Kind: KindRuff, NotStarted: true, Summary: "ruff is not on PATH", Command: []string{"ruff", "check", "."}}, "could not start"},
		{"timed out", Result{Name: "t", Kind: KindPytest, TimedOut: true, Tests: -1, Summary: "timed out after 10m"}, "timed out at the base commit"},
		{"hung test", Result{Name: "t", Kind: KindPytest, TimedOut: true, Tests: -1, Summary: "timed out after 10m (killed)" + stoppedAtNote + "tests/test_x.py:3 in test_hang"}, "stopped at tests/test_x.py:3 in test_hang"},
	}
	for _, tt := range tests {
		ps := Health([]Result{tt.r})
		switch {
		case tt.want == "" && len(ps) != 0:
			t.Errorf("%s: Health(%+v) = %v, want healthy", tt.name, tt.r, ps)
		case tt.want != "" && (len(ps) != 1 || !strings.Contains(ps[0].Reason, tt.want)):
			t.Errorf("%s: Health(%+v) = %v, want one problem saying %q", tt.name, tt.r, ps, tt.want)
		}
	}
	for _, r := range []Result{
		{Name: "t", Kind: KindPytest, Passed: true, Tests: 0},
		{Name: "t", Kind: KindPytest, Tests: -1, Summary: "pytest exited 4 without a test report"},
		{Name: "t", Kind: KindPytest, Tests: 2, Errored: 2, Findings: []Finding{{Test: "tests.test_a", Message: "ModuleNotFoundError: No module named 'vendor'"}}},
		{Name: "t", Kind: KindPytest, TimedOut: true, Tests: -1},
		{Name: "t", Kind: KindPytest, Tests: 1, Errored: 1, Findings: []Finding{{Message: "boom (collection failure)"}}},
		{Name: "l", Kind: KindRuff, NotStarted: true},
		{Name: "u", Kind: KindUnittest, Summary: "no tests collected"},
	} {
		ps := Health([]Result{r})
		if len(ps) != 1 || ps[0].Hint == "" || !strings.Contains(ps[0].String(), "to make it healthy: "+ps[0].Hint) {
			t.Errorf("Health(%+v) = %+v; want one problem with a hint in its String()", r, ps)
		}
	}
	if ps := Health([]Result{{Name: "t", Kind: KindPytest, Tests: 2, Errored: 2, Findings: []Finding{{Message: "E   ModuleNotFoundError: No module named 'vendor'"}}}}); len(ps) != 1 ||
		!strings.Contains(ps[0].Hint, "cannot import vendor") || !strings.Contains(ps[0].Hint, "PYTHONPATH") {
		t.Errorf("hint for a missing module: %+v", ps)
	}
	ps := Health([]Result{{Name: "t", Kind: KindPytest, Tests: 1, Errored: 1, Command: []string{"/usr/bin/python3", "-m", "pytest"},
		Findings: []Finding{{Test: "tests.test_a", Message: "ImportError\nNo module named 'vendor'"}}}})
	if len(ps) != 1 || !strings.Contains(ps[0].String(), "/usr/bin/python3 -m pytest") || len(ps[0].Lines) != 2 {
		t.Errorf("problem %+v: want the command in String() and the first error lines", ps)
	}
}

// Missing names the module the checks' interpreter lacked, for a caller that knows where
// that interpreter comes from (a recipe's environment) to say where to install it.
func TestHealthMissing(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    Result
		want string
	}{
		{"python -m tool", Result{Name: "t", Kind: KindPytest, NotStarted: true, Tests: -1, Command: []string{"/e/bin/python", "-m", "pytest", "-q"},
			Output: "/e/bin/python: No module named pytest\n"}, "pytest"},
		{"a plugin's import", Result{Name: "t", Kind: KindPytest, NotStarted: true, Tests: -1, Command: []string{"/e/bin/python", "-m", "pytest"},
			Output: "ModuleNotFoundError: No module named 'pytest_cov'\n"}, "pytest_cov"},
		{"a tool that is no module", Result{Name: "l", Kind: KindRuff, NotStarted: true, Command: []string{"ruff", "check", "."}}, ""},
		{"every test errors on an import", Result{Name: "t", Kind: KindPytest, Tests: 2, Errored: 2,
			Findings: []Finding{{Message: "E   ModuleNotFoundError: No module named 'shinyfmt.core'"}}}, "shinyfmt.core"},
		{"timed out", Result{Name: "t", Kind: KindPytest, TimedOut: true, Tests: -1, Output: "No module named 'x'"}, ""},
		// marshmallow's tests/conftest.py imports simplejson, a test dependency: pytest exits 4
		// before any test runs, with no report.
		{"a conftest's import", Result{Name: "t", Kind: KindPytest, Tests: -1, Summary: "pytest exited 4 without a test report",
			Output: "ImportError while loading conftest '/w/tests/conftest.py'.\ntests/conftest.py:5: in <module>\n    from tests.base import Blog\ntests/base.py:9: in <module>\n    import simplejson\nE   ModuleNotFoundError: No module named 'simplejson'\n"}, "simplejson"},
		{"a usage error", Result{Name: "t", Kind: KindPytest, Tests: -1, Summary: "pytest exited 4 without a test report", Output: "ERROR: usage: pytest [options]\n"}, ""},
	} {
		ps := Health([]Result{tc.r})
		if len(ps) != 1 || ps[0].Missing != tc.want {
			t.Errorf("%s: Health(%+v) = %+v; want one problem missing %q", tc.name, tc.r, ps, tc.want)
		}
		if tc.want != "" && tc.r.Tests < 0 && !tc.r.NotStarted && !strings.Contains(ps[0].String(), "cannot import "+tc.want) {
			t.Errorf("%s: %s; want it to say the tests cannot import %s", tc.name, ps[0], tc.want)
		}
	}
}

// TestHealthHungTestHint: a base commit whose check stopped in a test tells the operator
// to leave that test out; one that only ran long is told to raise the time-out.
func TestHealthHungTestHint(t *testing.T) {
	for _, tt := range []struct {
		summary, want string
	}{
		{"timed out after 10m (killed)", "raise timeout:"},
		{"timed out after 10m (killed)" + stoppedAtNote + "tests/test_x.py:3 in test_hang", "--deselect"},
	} {
		ps := Health([]Result{{Name: "t", Kind: KindPytest, TimedOut: true, Tests: -1, Summary: tt.summary}})
		if len(ps) != 1 || !strings.Contains(ps[0].Hint, tt.want) {
			t.Errorf("Health(summary %q) = %+v; want a hint with %q", tt.summary, ps, tt.want)
		}
	}
}

// A base run that a conftest.py hook stops after some modules skipped at collection (real
// pytest): no test passed, so the repository's suite cannot gate a fix and Health says so,
// as it does when every collected test errors.
func TestHealthInternalErrorAfterSkips(t *testing.T) {
	requirePytest(t)
	dir := writeTree(t, map[string]string{
		"conftest.py":  "def pytest_collection_modifyitems(items):\n    raise RuntimeError('ticketd-hook-broke')\n",
		"test_win.py":  "import pytest\n\npytest.skip('Windows only', allow_module_level=True)\n",
		"test_calc.py": "def test_one():\n    assert True\n",
	})
	r := &Runner{Sandbox: testSandbox(t)}
	base := r.Run(context.Background(), dir, []Check{{Name: "tests", Kind: KindPytest, Timeout: time.Minute}})
	ps := Health(base)
	if len(ps) != 1 || !strings.Contains(ps[0].Reason, "internal error") || !strings.Contains(ps[0].Reason, "ticketd-hook-broke") {
		t.Fatalf("Health = %+v for a run (%s, tests %d, errored %d, outcomes %v) where no test passed; want one internal-error problem naming the hook's error\n%s",
			ps, base[0].Summary, base[0].Tests, base[0].Errored, base[0].Outcomes, base[0].Output)
	}
}

// A check whose own command has --strict-config, in a repository configured for a newer
// pytest (real pytest): the repository pauses, and the reason names the key pytest refused
// rather than saying that no test was collected.
func TestHealthConfigurationRefused(t *testing.T) {
	requirePytest(t)
	dir := writeTree(t, map[string]string{
		"pytest.ini": "[pytest]\nticketd_absent_plugin_key = 1\n",
		"test_a.py":  "def test_one():\n    assert True\n",
	})
	r := &Runner{Sandbox: testSandbox(t)}
	base := r.Run(context.Background(), dir, []Check{{Name: "tests", Kind: KindPytest, Timeout: time.Minute,
		Command: []string{"pytest", "--strict-config"}}})
	ps := Health(base)
	if len(ps) != 1 || !strings.Contains(ps[0].Reason, "Unknown config option: ticketd_absent_plugin_key") {
		t.Fatalf("Health = %+v for a run pytest refused (%s, tests %d); want one problem naming the refused key\n%s",
			ps, base[0].Summary, base[0].Tests, base[0].Output)
	}
}

// A conftest.py inside the package's test folder that imports a test dependency the checks'
// interpreter lacks (html5lib's html5lib/tests/conftest.py imports pytest_expect), real
// pytest: the session cannot be collected, and the problem names the missing module, so the
// operator is told to install it (or, with a recipe, where) rather than to fix a hook.
func TestHealthNestedConftestMissingModule(t *testing.T) {
	requirePytest(t)
	dir := writeTree(t, map[string]string{
		"pkg/__init__.py":       "",
		"pkg/tests/__init__.py": "",
		"pkg/tests/conftest.py": "from ticketd_absent_expect_plugin import expect  # noqa\n",
		"pkg/tests/test_a.py":   "def test_one():\n    assert True\n",
	})
	r := &Runner{Sandbox: testSandbox(t)}
	base := r.Run(context.Background(), dir, []Check{{Name: "tests", Kind: KindPytest, Timeout: time.Minute}})
	ps := Health(base)
	if len(ps) != 1 || ps[0].Missing != "ticketd_absent_expect_plugin" || !strings.Contains(ps[0].Hint, "cannot import ticketd_absent_expect_plugin") {
		t.Fatalf("Health = %+v for a run whose conftest.py cannot import its plugin (%s, tests %d); want one problem missing ticketd_absent_expect_plugin, with an install hint\n%s",
			ps, base[0].Summary, base[0].Tests, base[0].Output)
	}
}

// Tests that error at setup on a fixture nothing provides (platformdirs' tests use
// pytest-mock's mocker, not installed), real pytest: each finding says which fixture, in its
// first line (pytest's message starts with the test's source), and MissingFixtures counts the
// tests of each missing fixture, so the baseline can tell the operator what to install.
func TestMissingFixtures(t *testing.T) {
	requirePytest(t)
	dir := writeTree(t, map[string]string{
		"tests/test_a.py": "import pytest\n\n\n@pytest.mark.parametrize(\n    'n',\n    [\n        1,\n        2,\n        3,\n    ],\n)\ndef test_mocked(ticketd_absent_mocker, n):\n    assert n\n\n\ndef test_plain():\n    assert True\n",
		"tests/test_b.py": "def test_other(ticketd_absent_mocker, tmp_path):\n    assert tmp_path\n\n\ndef test_server(ticketd_absent_httpserver):\n    assert True\n",
	})
	r := &Runner{Sandbox: testSandbox(t)}
	res := r.Run(context.Background(), dir, []Check{{Name: "tests", Kind: KindPytest, Timeout: time.Minute}})[0]
	if res.Tests != 6 || res.Errored != 5 {
		t.Fatalf("run: %d tests, %d errored (%s); want 6 tests, 5 erroring at setup\n%s", res.Tests, res.Errored, res.Summary, res.Output)
	}
	for _, f := range res.Findings {
		if first := firstLine(f.Message); !strings.Contains(first, "fixture 'ticketd_absent_") {
			t.Errorf("finding %s: first line %q does not name the missing fixture; message:\n%s", f.Test, first, f.Message)
		}
	}
	got := MissingFixtures(res)
	want := []FixtureMiss{
		{Fixture: "ticketd_absent_mocker", Tests: 4, Files: []string{"tests/test_a.py", "tests/test_b.py"}},
		{Fixture: "ticketd_absent_httpserver", Tests: 1, Files: []string{"tests/test_b.py"}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("MissingFixtures = %+v, want %+v", got, want)
	}
}

// A base that pytest refuses for its configuration's required_plugins or minversion is told
// what to install, not to leave an option out of the command.
func TestHealthUsageHints(t *testing.T) {
	for _, tt := range []struct{ output, want string }{
		{"ERROR: Missing required plugins: pytest-django, pytest-foo>=2\n", "install pytest-django, pytest-foo>=2 for the checks' interpreter"},
		{"ERROR: /w/pytest.ini: 'minversion' requires pytest-8.0, actual pytest-7.2.1'\n", "asks for pytest 8.0 or newer, and the checks' interpreter has pytest 7.2.1"},
		{"ERROR: Unknown config option: timeout\n", "leave it out of the check's command"},
	} {
		// Tests is 0 or -1 as the run left a JUnit report or none.
		for _, tests := range []int{0, -1} {
			ps := Health([]Result{{Name: "t", Kind: KindPytest, ExitCode: 4, Tests: tests, Output: tt.output}})
			if tests < 0 && !strings.Contains(tt.want, "install") {
				continue // an unknown option without a report: the generic hint
			}
			if len(ps) != 1 || !strings.Contains(ps[0].Hint, tt.want) {
				t.Errorf("Health(output %q, tests %d) = %+v; want a hint with %q", tt.output, tests, ps, tt.want)
			}
		}
	}
}
