package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/store"
)

// pytest configurations as users have them, one small repository each, run through a real
// night: the baseline at the base commit, then each ticket's gate. Every repository holds
// clamp(x, lo, hi), which ignores hi, tested where and as its configuration says. Two
// tickets each: one whose change fixes clamp with a regression test (it must ship in one
// submit, the new test named as evidence), and one whose change makes the regression test
// pass but breaks the lower bound (min(x, hi)), which a test the configuration collects
// catches: no submit may be accepted, and the refusal names that test. A base that cannot
// gate at all must hold both tickets back with a note saying why, and spend no attempt.
//
// Covered elsewhere, so not repeated here: addopts naming a missing plugin's options
// (lintRepo), --doctest-glob=*.rst from tox.ini (ledgerRepo), a test that never ends at the
// base (validate's TestAdaptHungTest) and a unittest test or pytest fixture that does
// (validate's TestAdaptHangReported).

const (
	clampCode    = "def clamp(x, lo, hi):\n    \"\"\"Clamp x into [lo, hi].\"\"\"\n    return max(lo, x)\n"
	clampWrong   = "    return max(lo, x)\n"
	clampFixed   = "    return max(lo, min(x, hi))\n"
	clampBuggy   = "    return min(x, hi)\n"
	lowTest      = "from calc import clamp\n\n\ndef test_low():\n    assert clamp(-1, 0, 3) == 0\n"
	regression   = "def test_high():\n    assert clamp(5, 0, 3) == 3\n\n\n"
	lowAnchor    = "def test_low():\n"
	withHighTest = regression + lowAnchor
)

// configRow is one configuration of the matrix.
type configRow struct {
	name  string
	files map[string]string // besides calc.py at the root (unless code says otherwise)
	code  string            // the module holding clamp; "" is calc.py
	// checks is the repository's checks in YAML flow style ("" means the default gate);
	// %s is replaced with the pytest interpreter.
	checks string
	// test is the regression test's edit (file → old, new), made by both tickets.
	test map[string][2]string
	// newTest is the regression test's node id as the evidence names it; broken is the
	// test the buggy change breaks, as the refusal names it.
	newTest, broken string
	// note is a text a note on the tickets must hold ("" none); unhealthy, when set, says
	// the base cannot gate: the tickets are held back with a note holding it (and note).
	note, unhealthy string
	// report are texts the fix's report must hold: what could not run, and how it ended.
	report []string
}

func (r configRow) codePath() string {
	if r.code != "" {
		return r.code
	}
	return "calc.py"
}

// defaultTest is the regression test added above test_low in file.
func defaultTest(file string) map[string][2]string {
	return map[string][2]string{file: {lowAnchor, withHighTest}}
}

func configRows() []configRow {
	return []configRow{
		{name: "xdist-n", files: map[string]string{"pytest.ini": "[pytest]\naddopts = -n auto\n", "test_calc.py": lowTest},
			test: defaultTest("test_calc.py"), newTest: "test_calc.py::test_high", broken: "test_calc.py::test_low",
			note: "names options of plugins this interpreter lacks (-n auto)"},
		{name: "xdist-p", files: map[string]string{"pytest.ini": "[pytest]\naddopts = -p xdist\n", "test_calc.py": lowTest},
			test: defaultTest("test_calc.py"), newTest: "test_calc.py::test_high", broken: "test_calc.py::test_low",
			note: "names options of plugins this interpreter lacks (-p xdist)"},
		{name: "nocache", files: map[string]string{"pytest.ini": "[pytest]\naddopts = -p no:cacheprovider\n", "tests/test_calc.py": lowTest},
			test: defaultTest("tests/test_calc.py"), newTest: "tests/test_calc.py::test_high", broken: "tests/test_calc.py::test_low"},
		{name: "importlib", files: map[string]string{"pytest.ini": "[pytest]\naddopts = --import-mode=importlib\n",
			"tests/a/test_util.py": "from calc import clamp\n\n\ndef test_inside():\n    assert clamp(1, 0, 3) == 1\n",
			"tests/b/test_util.py": lowTest},
			test:    map[string][2]string{"tests/a/test_util.py": {"def test_inside():\n", regression + "def test_inside():\n"}},
			newTest: "tests/a/test_util.py::test_high", broken: "tests/b/test_util.py::test_low"},
		{name: "pyargs", code: "calcpkg/core.py", checks: "[{name: tests, kind: pytest, command: [%s, -m, pytest, --pyargs, calcpkg]}]",
			files: map[string]string{"calcpkg/__init__.py": "", "calcpkg/tests/__init__.py": "",
				"calcpkg/tests/test_core.py": strings.Replace(lowTest, "from calc ", "from calcpkg.core ", 1)},
			test: defaultTest("calcpkg/tests/test_core.py"), newTest: "calcpkg/tests/test_core.py::test_high", broken: "calcpkg/tests/test_core.py::test_low"},
		{name: "required-plugins", files: map[string]string{"pytest.ini": "[pytest]\nrequired_plugins = pytest-foo\n", "test_calc.py": lowTest},
			test: defaultTest("test_calc.py"), unhealthy: "Missing required plugins: pytest-foo", note: "install pytest-foo for the checks' interpreter"},
		{name: "minversion", files: map[string]string{"pytest.ini": "[pytest]\nminversion = 8.0\n", "test_calc.py": lowTest},
			test: defaultTest("test_calc.py"), unhealthy: "'minversion' requires pytest-8.0", note: "asks for pytest 8.0 or newer"},
		{name: "testpaths-missing", files: map[string]string{"pytest.ini": "[pytest]\ntestpaths = tests\n", "testing/test_calc.py": lowTest},
			test: defaultTest("testing/test_calc.py"), newTest: "testing/test_calc.py::test_high", broken: "testing/test_calc.py::test_low",
			note: "pytest.ini sets testpaths = tests, which names no file or folder at the base commit: pytest then collects from the repository root"},
		{name: "norecursedirs", files: map[string]string{"pytest.ini": "[pytest]\nnorecursedirs = legacy .*\n", "tests/test_calc.py": lowTest,
			"legacy/test_old.py": "from calc import clamp\n\n\ndef test_old_api():\n    assert clamp(5, 0, 3, strict=True) == 3\n"},
			test: defaultTest("tests/test_calc.py"), newTest: "tests/test_calc.py::test_high", broken: "tests/test_calc.py::test_low"},
		{name: "python-files-check", files: map[string]string{"pytest.ini": "[pytest]\npython_files = check_*.py\n", "tests/check_calc.py": lowTest},
			test: defaultTest("tests/check_calc.py"), newTest: "tests/check_calc.py::test_high", broken: "tests/check_calc.py::test_low"},
		{name: "python-files-suffix", files: map[string]string{"calc_test.py": lowTest},
			test: defaultTest("calc_test.py"), newTest: "calc_test.py::test_high", broken: "calc_test.py::test_low"},
		{name: "python-functions", files: map[string]string{"setup.cfg": "[tool:pytest]\npython_functions = should_*\n",
			"tests/test_calc.py": "from calc import clamp\n\n\ndef should_keep_low():\n    assert clamp(-1, 0, 3) == 0\n"},
			test:    map[string][2]string{"tests/test_calc.py": {"def should_keep_low():\n", "def should_keep_high():\n    assert clamp(5, 0, 3) == 3\n\n\ndef should_keep_low():\n"}},
			newTest: "tests/test_calc.py::should_keep_high", broken: "tests/test_calc.py::should_keep_low"},
		{name: "python-classes", files: map[string]string{"pyproject.toml": "[tool.pytest.ini_options]\npython_classes = [\"Describe\"]\n",
			"tests/test_calc.py": "from calc import clamp\n\n\nclass DescribeClamp:\n    def test_low(self):\n        assert clamp(-1, 0, 3) == 0\n"},
			test:    map[string][2]string{"tests/test_calc.py": {"    def test_low(self):\n", "    def test_high(self):\n        assert clamp(5, 0, 3) == 3\n\n    def test_low(self):\n"}},
			newTest: "tests/test_calc.py::DescribeClamp::test_high", broken: "tests/test_calc.py::DescribeClamp::test_low"},
		// coverage.py writes [tool.pytest] (pytest 9's table) where pytest 7 reads only
		// [tool.pytest.ini_options]: the Describe classes are not collected tonight.
		{name: "tool-pytest-table", files: map[string]string{"pyproject.toml": "[tool.pytest]\npython_classes = [\"Describe\"]\n",
			"tests/test_calc.py": lowTest + "\n\nclass DescribeClamp:\n    def test_inside(self):\n        assert clamp(1, 0, 3) == 1\n"},
			test: defaultTest("tests/test_calc.py"), newTest: "tests/test_calc.py::test_high", broken: "tests/test_calc.py::test_low",
			note: "pyproject.toml sets python_classes in [tool.pytest], a table only pytest 9 and later read: the checks' pytest 7."},
		{name: "collect-ignore", files: map[string]string{"conftest.py": "collect_ignore = [\"tests/test_py2.py\"]\ncollect_ignore_glob = [\"*_slowlib.py\"]\n",
			"tests/test_calc.py":      lowTest,
			"tests/test_py2.py":       "print \"python 2 only\"\n",
			"tests/test_slowlib.py":   "import not_installed_anywhere\n",
			"tests/test_x_slowlib.py": "import not_installed_anywhere\n"},
			test: defaultTest("tests/test_calc.py"), newTest: "tests/test_calc.py::test_high", broken: "tests/test_calc.py::test_low"},
		{name: "runslow", files: map[string]string{"conftest.py": runslowConftest,
			"tests/test_calc.py": "import pytest\n\n" + lowTest + "\n\n@pytest.mark.slow\ndef test_big():\n    assert clamp(10**9, 0, 3) == 3\n"},
			test: defaultTest("tests/test_calc.py"), newTest: "tests/test_calc.py::test_high", broken: "tests/test_calc.py::test_low",
			report: []string{"tests (pytest): 1 passed, 1 skipped"}},
		{name: "filterwarnings-error", files: map[string]string{"pytest.ini": "[pytest]\nfilterwarnings =\n    error\n",
			"legacy.py":          "import warnings\n\nwarnings.warn(\"legacy is deprecated\", DeprecationWarning)\n",
			"tests/test_calc.py": lowTest, "tests/test_legacy.py": "import legacy\n\n\ndef test_legacy():\n    assert legacy\n"},
			test: defaultTest("tests/test_calc.py"), newTest: "tests/test_calc.py::test_high", broken: "tests/test_calc.py::test_low",
			report: []string{"failing at the base too: tests: tests/test_legacy.py: legacy.py:3: DeprecationWarning: legacy is deprecated"}},
		{name: "xfail-strict", files: map[string]string{"pytest.ini": "[pytest]\nxfail_strict = true\n",
			"tests/test_calc.py": "import pytest\n\nfrom calc import clamp\n\n\n@pytest.mark.xfail(reason=\"clamp ignores hi\")\ndef test_high():\n    assert clamp(5, 0, 3) == 3\n\n\ndef test_low():\n    assert clamp(-1, 0, 3) == 0\n"},
			test:    map[string][2]string{"tests/test_calc.py": {"@pytest.mark.xfail(reason=\"clamp ignores hi\")\n", ""}},
			newTest: "tests/test_calc.py::test_high", broken: "tests/test_calc.py::test_low"},
		{name: "usefixtures", files: map[string]string{"pytest.ini": "[pytest]\nusefixtures = strict_mode\n",
			"conftest.py":        "import os\n\nimport pytest\n\n\n@pytest.fixture\ndef strict_mode(monkeypatch):\n    monkeypatch.setenv(\"CALC_MODE\", \"strict\")\n",
			"tests/test_calc.py": lowTest + "\n\ndef test_mode():\n    import os\n    assert os.environ[\"CALC_MODE\"] == \"strict\"\n"},
			test: defaultTest("tests/test_calc.py"), newTest: "tests/test_calc.py::test_high", broken: "tests/test_calc.py::test_low"},
		{name: "doctest-modules", files: map[string]string{"pytest.ini": "[pytest]\naddopts = --doctest-modules\ndoctest_optionflags = NORMALIZE_WHITESPACE ELLIPSIS\n",
			"calc.py":            "def clamp(x, lo, hi):\n    \"\"\"Clamp x into [lo, hi].\n\n    >>> clamp(-1, 0, 3)\n    0\n    >>> [clamp(x, 0, 3) for x in range(-2, 2)]\n    [0,   0, ...]\n    \"\"\"\n    return max(lo, x)\n",
			"tests/test_calc.py": "from calc import clamp\n\n\ndef test_inside():\n    assert clamp(1, 0, 3) == 1\n"},
			test:    map[string][2]string{"tests/test_calc.py": {"def test_inside():\n", regression + "def test_inside():\n"}},
			newTest: "tests/test_calc.py::test_high", broken: "calc.py::calc.clamp"},
		{name: "ini-under-tests", checks: "[{name: tests, kind: pytest, command: [%s, -m, pytest, tests]}]",
			files: map[string]string{"tests/pytest.ini": "[pytest]\npython_files = check_*.py\npythonpath = ..\n", "tests/check_calc.py": lowTest},
			test:  defaultTest("tests/check_calc.py"), newTest: "check_calc.py::test_high", broken: "check_calc.py::test_low"},
		// A root configuration file without a pytest section does not stop pytest's search:
		// `pytest tests` reads tests/pytest.ini (rootdir tests/), and so does a selected run
		// of a bare `pytest` (`pytest tests/test_calc.py::test_high`), whose whole run reads
		// none; the gate's ids must stay the repository's (tests/...) in every run.
		{name: "ini-under-tests-setup-cfg", checks: "[{name: tests, kind: pytest, command: [%s, -m, pytest, tests]}]",
			files: map[string]string{"setup.cfg": "[metadata]\nname = calc\n", "tests/pytest.ini": "[pytest]\npython_files = check_*.py\npythonpath = ..\n", "tests/check_calc.py": lowTest},
			test:  defaultTest("tests/check_calc.py"), newTest: "tests/check_calc.py::test_high", broken: "tests/check_calc.py::test_low"},
		{name: "ini-under-tests-pyproject-bare", files: map[string]string{"pyproject.toml": "[project]\nname = \"calc\"\n",
			"tests/pytest.ini": "[pytest]\naddopts = -q\n", "tests/test_calc.py": lowTest},
			test: defaultTest("tests/test_calc.py"), newTest: "tests/test_calc.py::test_high", broken: "tests/test_calc.py::test_low"},
		{name: "conftest-raises", files: map[string]string{"conftest.py": "import os\n\nif \"CALC_DATABASE_URL\" not in os.environ:\n    raise RuntimeError(\"set CALC_DATABASE_URL to run the tests\")\n",
			"tests/test_calc.py": lowTest},
			test: defaultTest("tests/test_calc.py"), unhealthy: "set CALC_DATABASE_URL to run the tests"},
		{name: "pytest-plugins", files: map[string]string{"conftest.py": "pytest_plugins = [\"tests.fixtures\"]\n", "tests/__init__.py": "",
			"tests/fixtures.py":  "import pytest\n\n\n@pytest.fixture\ndef bounds():\n    return (0, 3)\n",
			"tests/test_calc.py": "from calc import clamp\n\n\ndef test_low(bounds):\n    assert clamp(-1, *bounds) == 0\n"},
			test:    map[string][2]string{"tests/test_calc.py": {"def test_low(bounds):\n", "def test_high(bounds):\n    assert clamp(5, *bounds) == 3\n\n\ndef test_low(bounds):\n"}},
			newTest: "tests/test_calc.py::test_high", broken: "tests/test_calc.py::test_low"},
		{name: "ini-and-tox", files: map[string]string{"pytest.ini": "[pytest]\npython_files = check_*.py\n",
			"tox.ini": "[tox]\nenvlist = py3\n\n[pytest]\npython_files = spec_*.py\n", "tests/check_calc.py": lowTest,
			"tests/spec_calc.py": "def test_spec():\n    assert False, \"tox.ini's python_files is not pytest's\"\n"},
			test: defaultTest("tests/check_calc.py"), newTest: "tests/check_calc.py::test_high", broken: "tests/check_calc.py::test_low"},
	}
}

const runslowConftest = `import pytest


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False, help="run slow tests")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: a slow test")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="needs --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
`

// build writes the row's repository under root and returns it with its two tickets' patches.
func (r configRow) build(t *testing.T, root, python string) (repo realRepo, fix, bug string) {
	t.Helper()
	repo = realRepo{name: r.name, path: filepath.Join(root, r.name), title: fmt.Sprintf("[%s] clamp ignores its upper bound", r.name)}
	if r.checks != "" {
		repo.checks = fmt.Sprintf(r.checks, python)
	}
	files := map[string]string{r.codePath(): clampCode}
	for name, content := range r.files {
		files[name] = content
	}
	writeRepo(t, repo.path, files)
	with := func(code string) map[string][2]string {
		edits := map[string][2]string{r.codePath(): {clampWrong, code}}
		for name, e := range r.test {
			edits[name] = e
		}
		return edits
	}
	return repo, fixPatch(t, repo.path, with(clampFixed)), fixPatch(t, repo.path, with(clampBuggy))
}

// ticketTitled finds the ticket of repo whose title holds title.
func ticketTitled(t *testing.T, st *store.Store, repo, title string) store.Ticket {
	t.Helper()
	list, err := st.List(context.Background(), store.Filter{Repo: repo})
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range list {
		if strings.Contains(tk.Title, title) {
			full, err := st.Get(context.Background(), tk.ID)
			if err != nil {
				t.Fatal(err)
			}
			return full
		}
	}
	t.Fatalf("no ticket of %s titled %q among %d", repo, title, len(list))
	return store.Ticket{}
}

// notes are the texts of a ticket's note events.
func notes(t *testing.T, st *store.Store, id int64) string {
	t.Helper()
	events, err := st.Events(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range events {
		if e.Kind == "note" {
			b.WriteString(e.Reason + "\n")
		}
	}
	return b.String()
}

func TestPytestConfigurationMatrix(t *testing.T) {
	t.Parallel() // a night of its own: repositories, store, model server, clock
	realNight(t)
	pytest, err := resolvedPytest()
	if err != nil {
		t.Fatal(err)
	}
	rows := configRows()
	root := t.TempDir()
	var repos []realRepo
	var cases []scriptedmodel.Case
	for _, r := range rows {
		repo, fix, bug := r.build(t, root, pytest[0])
		repos = append(repos, repo)
		cases = append(cases, scriptedmodel.Case{Match: repo.title, Patch: fix},
			scriptedmodel.Case{Match: "[" + r.name + "] clamp drops its lower bound", Patch: bug})
	}
	cfg := realConfig(t, root, scriptedServer(t, cases), repos...)
	// One attempt of three steps (read, edit, submit): a refused change is not submitted
	// again, which would only cost the night its time.
	cfg.Night.MaxAttempts, cfg.Budget.MaxSteps = 1, 3
	for i, r := range rows {
		write(t, filepath.Join(root, "issues", fmt.Sprintf("bug-%02d.md", i)), fmt.Sprintf(
			"---\ntitle: [%s] clamp drops its lower bound\nrepo: %s\nlabels: [bug]\n---\nWhat the user saw: clamp(5, 0, 3) is 5. Expected 3.\n", r.name, r.name))
	}
	n := runNight(t, cfg, 0)

	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			fix := ticketTitled(t, n.store, r.name, "upper bound")
			bug := ticketTitled(t, n.store, r.name, "lower bound")
			said := notes(t, n.store, fix.ID)
			if r.unhealthy != "" {
				for _, tk := range []store.Ticket{fix, bug} {
					if tk.State != store.StateQueued || tk.Attempts != 0 {
						t.Errorf("ticket %q %s after %d attempt(s) (%s); want it held back, no attempt spent", tk.Title, tk.State, tk.Attempts, tk.Reason)
					}
					for _, want := range []string{r.unhealthy, r.note} {
						if s := notes(t, n.store, tk.ID); !strings.Contains(s, want) {
							t.Errorf("ticket %q: no note says %q:\n%s", tk.Title, want, s)
						}
					}
				}
				return
			}
			if r.note != "" && !strings.Contains(said, r.note) {
				t.Errorf("no note says %q:\n%s", r.note, said)
			}
			report, _ := os.ReadFile(filepath.Join(fix.ResultDir, "report.md"))
			all, ok := submits(t, n.store, fix.ID)
			if fix.State != store.StateDone || all != 1 || ok != 1 {
				t.Errorf("fix: ticket %s (%s) after %d submit(s), %d accepted; want done in one submit\nnotes:\n%s\nreport:\n%s", fix.State, fix.Reason, all, ok, said, report)
			}
			for _, want := range append([]string{"Evidence that the change fixes the bug", r.newTest}, r.report...) {
				if !strings.Contains(string(report), want) {
					t.Errorf("fix: report lacks %q:\n%s", want, report)
				}
			}
			all, ok = submits(t, n.store, bug.ID)
			refusal := firstSubmitResult(t, n.store, bug.ID)
			if bug.State == store.StateDone || ok != 0 || all == 0 {
				t.Errorf("bug: ticket %s (%s) after %d submit(s), %d accepted; want it refused\n%s", bug.State, bug.Reason, all, ok, refusal)
			} else if r.broken != "" && !strings.Contains(refusal, r.broken) {
				t.Errorf("bug: the refusal does not name %s:\n%s", r.broken, refusal)
			}
		})
	}
}

// firstSubmitResult is what the first submit of a ticket was answered.
func firstSubmitResult(t *testing.T, st *store.Store, id int64) string {
	t.Helper()
	calls, err := st.ToolCalls(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range calls {
		if c.Tool == "submit" {
			return c.Result
		}
	}
	return ""
}
