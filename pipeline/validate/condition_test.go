package validate

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/pipeline/discover"
	"github.com/ticketd/ticketd/scripts/testenv"
)

// Real repositories whose base run fails for a reason that is ticketd's to work around: each
// is run at "the base", adapted, and must then run its tests, with a note saying how; the
// repositories whose failure is real stay as they are (the negative controls).
func TestAdapt(t *testing.T) {
	requirePytest(t)
	// What a plugin row expects depends on which plugins this interpreter has: a developer's
	// machine may have pytest-cov or xdist, CI's has neither.
	flake8Args, flake8Note := lackingOpts(t, [2]string{"--flake8", "pytest_flake8"}, [2]string{"-q", ""}, [2]string{"--black", "pytest_black"})
	covArgs, covNote := lackingOpts(t, [2]string{"-n auto", "xdist"}, [2]string{"--cov calc --cov-report term-missing", "pytest_cov"}, [2]string{"--strict-markers", ""})
	unittestCase := "import unittest\n\nfrom calc import double\n\n\nclass DoubleTest(unittest.TestCase):\n    def test_double(self):\n        self.assertEqual(double(2), 4)\n"
	tests := []struct {
		name      string
		files     map[string]string
		check     Check
		wantKind  string // "" means no condition
		wantArgs  []string
		wantPath  []string
		wantNote  string
		wantTests int
	}{
		{"a root test.py that unittest runs",
			map[string]string{"calc.py": "def double(x):\n    return 2 * x\n", "test.py": unittestCase},
			Check{Name: "tests", Kind: KindPytest}, KindUnittest, nil, nil, "runs with unittest", 1},
		// decorator: its unittest tests are tests/test.py, tests/ is no package.
		{"a tests/test.py that neither pytest nor unittest from the root finds",
			map[string]string{"calc.py": "def double(x):\n    return 2 * x\n", "tests/test.py": unittestCase, "tests/helpers.py": "X = 1\n"},
			Check{Name: "tests", Kind: KindPytest}, KindUnittest, []string{"-s", "tests", "-t", "tests"}, nil, "the test modules are in tests/", 1},
		{"a root test.py and tests/test.py: discovery from the root, as before",
			map[string]string{"calc.py": "def double(x):\n    return 2 * x\n", "test.py": unittestCase, "tests/test.py": unittestCase},
			Check{Name: "tests", Kind: KindPytest}, KindUnittest, nil, nil, "runs with unittest", 1},
		{"a package in lib/ that nothing puts on the path",
			map[string]string{"lib/calc/__init__.py": "def double(x):\n    return 2 * x\n", "tests/test_calc.py": "from calc import double\n\n\ndef test_double():\n    assert double(2) == 4\n"},
			Check{Name: "tests", Kind: KindPytest}, "", nil, []string{"lib"}, "lib/ put on PYTHONPATH: the base run failed with No module named 'calc'", 1},
		// man-group/pytest-plugins: one folder per package, each with its own setup.py and
		// tests/, which upstream installs (setup.py develop) before running pytest.
		{"packages in project folders of their own (a monorepo) that nothing installs",
			map[string]string{"pkg-a/setup.py": "from setuptools import setup\n\nsetup(name=\"calc-a\", py_modules=[\"calc_a\"])\n",
				"pkg-a/calc_a.py":                       "def double(x):\n    return 2 * x\n",
				"pkg-a/tests/unit/test_a.py":            "from calc_a import double\n\n\ndef test_double():\n    assert double(2) == 4\n",
				"packages/pkg-b/pyproject.toml":         "[project]\nname = \"calc-b\"\n",
				"packages/pkg-b/src/calc_b/__init__.py": "def triple(x):\n    return 3 * x\n",
				"packages/pkg-b/tests/test_b.py":        "from calc_b import triple\n\n\ndef test_triple():\n    assert triple(2) == 6\n"},
			Check{Name: "tests", Kind: KindPytest}, "", nil, []string{"packages/pkg-b/src", "pkg-a"}, "pkg-a/ put on PYTHONPATH: the base run failed with No module named 'calc_a', and calc_a is the repository's own package in pkg-a/, a project folder of its own (pkg-a/setup.py)", 2},
		{"the module in a folder that is no project of its own",
			map[string]string{"vendor/calc.py": "def double(x):\n    return 2 * x\n", "tests/test_calc.py": "from calc import double\n\n\ndef test_double():\n    assert double(2) == 4\n"},
			Check{Name: "tests", Kind: KindPytest}, "", nil, nil, "", 1},
		{"addopts naming a plugin that is not installed",
			map[string]string{"tox.ini": "[pytest]\naddopts = --flake8 -q --black\n", "calc.py": "def double(x):\n    return 2 * x\n", "test_calc.py": "from calc import double\n\n\ndef test_double():\n    assert double(2) == 4\n"},
			Check{Name: "tests", Kind: KindPytest}, "", flake8Args, nil, flake8Note, 1},
		{"addopts naming xdist's and pytest-cov's options with their values apart",
			map[string]string{"pyproject.toml": "[project]\nname = \"calc\"\n\n[tool.pytest.ini_options]\naddopts = \"-n auto --cov calc --cov-report term-missing --strict-markers\"\ntestpaths = [\"tests\"]\n",
				"calc/__init__.py": "def double(x):\n    return 2 * x\n", "tests/test_calc.py": "from calc import double\n\n\ndef test_double():\n    assert double(2) == 4\n"},
			Check{Name: "tests", Kind: KindPytest}, "", covArgs, nil, covNote, 1},
		{"addopts naming the cache's options, which the checks run without",
			map[string]string{"pytest.ini": "[pytest]\naddopts = --sw --ff -q\n", "test_calc.py": "def test_one():\n    assert True\n"},
			Check{Name: "tests", Kind: KindPytest}, "", []string{"-o", "addopts=-q"}, nil, "names options of pytest's cache, which the checks run without (-p no:cacheprovider: nothing may be written into the worktree) (--sw --ff)", 1},
		{"a -p plugin that does not import",
			map[string]string{"setup.cfg": "[tool:pytest]\naddopts = -p ticketd_no_such_plugin -q\n", "test_calc.py": "def test_one():\n    assert True\n"},
			Check{Name: "tests", Kind: KindPytest}, "", []string{"-o", "addopts=-q"}, nil, "(-p ticketd_no_such_plugin)", 1},
		// aio-libs (frozenlist): addopts preloads pytest-cov with -p pytest_cov and names its
		// options; without the plugin pytest stops on the import, then, once that is left out,
		// refuses the options.
		{"a -p plugin that does not import, and its options",
			map[string]string{"pytest.ini": "[pytest]\naddopts =\n  -p ticketd_absent_cov_plugin\n  --ticketd-absent-cov\n  --ticketd-absent-cov-context=test\n  -q\n", "test_calc.py": "def test_one():\n    assert True\n"},
			Check{Name: "tests", Kind: KindPytest}, "", []string{"-o", "addopts=-q"}, nil, "(-p ticketd_absent_cov_plugin --ticketd-absent-cov --ticketd-absent-cov-context=test): the check runs with -o \"addopts=-q\"", 1},
		// dateutil: its conftest.py marks tests with pytest-cov's no_cover, and filterwarnings =
		// error makes the unknown mark an internal error when pytest-cov is missing.
		{"a conftest hook adding a mark of a plugin that is not installed",
			map[string]string{"setup.cfg": "[tool:pytest]\nfilterwarnings =\n    error\n",
				"tests/conftest.py":  "import pytest\n\n\ndef pytest_collection_modifyitems(items):\n    for item in items:\n        item.add_marker(pytest.mark.no_cover)\n",
				"tests/test_calc.py": "def test_one():\n    assert True\n"},
			Check{Name: "tests", Kind: KindPytest}, "", []string{"-W", "ignore::pytest.PytestUnknownMarkWarning"}, nil, "pytest.mark.no_cover, a mark no installed plugin registers (pytest-cov's)", 1},
		{"a test module marked with a mark of a plugin that is not installed",
			map[string]string{"pyproject.toml": "[tool.pytest.ini_options]\nfilterwarnings = [\"error\"]\n",
				"test_calc.py": "import pytest\n\n\n@pytest.mark.timeout(5)\ndef test_one():\n    assert True\n"},
			Check{Name: "tests", Kind: KindPytest}, "", []string{"-W", "ignore::pytest.PytestUnknownMarkWarning"}, nil, "(pytest-timeout's)", 1},
		// jaraco's skeleton sets consider_namespace_packages (pytest 8.1); with --strict-config in
		// addopts pytest 7 refuses to start.
		{"--strict-config in addopts refusing a newer pytest's configuration key",
			map[string]string{"pytest.ini": "[pytest]\naddopts = --strict-config -q\nconsider_namespace_packages = true\nticketd_absent_plugin_key = 1\n",
				"test_calc.py": "def test_one():\n    assert True\n"},
			Check{Name: "tests", Kind: KindPytest}, "", []string{"-o", "addopts=-q"}, nil, "sets consider_namespace_packages, which the installed pytest does not know", 1},
		{"--strict-config of the check's own command is left as it is",
			map[string]string{"pytest.ini": "[pytest]\nticketd_absent_plugin_key = 1\n", "test_calc.py": "def test_one():\n    assert True\n"},
			Check{Name: "tests", Kind: KindPytest, Command: []string{"pytest", "--strict-config"}}, "", nil, nil, "", 0},
		// portalocker: its conftest.py marks doctests with pytest-timeout's timeout, and
		// --strict-markers in addopts refuses the mark when the plugin is missing (the mark is
		// made up here, so that no developer's machine has its plugin).
		{"--strict-markers in addopts refusing a conftest hook's mark of a plugin that is not installed",
			map[string]string{"pytest.ini": "[pytest]\naddopts = --strict-markers -q\n",
				"conftest.py":  "import pytest\n\n\ndef pytest_collection_modifyitems(items):\n    for item in items:\n        item.add_marker(pytest.mark.ticketd_absent_plugin_mark(20))\n",
				"test_calc.py": "def test_one():\n    assert True\n"},
			Check{Name: "tests", Kind: KindPytest}, "", []string{"-o", "addopts=-q", "-W", "ignore::pytest.PytestUnknownMarkWarning"}, nil, "refuses with --strict-markers", 1},
		{"--strict-markers in addopts and filterwarnings = error, the mark on a test",
			map[string]string{"pyproject.toml": "[tool.pytest.ini_options]\naddopts = [\"-ra\", \"--strict-markers\"]\nfilterwarnings = [\"error\"]\n",
				"test_calc.py": "import pytest\n\n\n@pytest.mark.ticketd_absent_plugin_mark(5)\ndef test_one():\n    assert True\n\n\ndef test_two():\n    assert True\n"},
			Check{Name: "tests", Kind: KindPytest}, "", []string{"-o", "addopts=-ra", "-W", "ignore::pytest.PytestUnknownMarkWarning"}, nil, "pytest.mark.ticketd_absent_plugin_mark", 2},
		{"--strict-markers of the check's own command is left as it is",
			map[string]string{"conftest.py": "import pytest\n\n\ndef pytest_collection_modifyitems(items):\n    for item in items:\n        item.add_marker(pytest.mark.ticketd_absent_plugin_mark)\n",
				"test_calc.py": "def test_one():\n    assert True\n"},
			Check{Name: "tests", Kind: KindPytest, Command: []string{"pytest", "--strict-markers"}}, "", nil, nil, "", 1},
		// typing_extensions: its unittest tests sit in src/ beside the module they import, and
		// discovery from the root does not enter src/ (no __init__.py).
		{"unittest's test modules in src/ beside the code",
			map[string]string{"pyproject.toml": "[project]\nname = \"typing_extensions\"\n", "src/typing_extensions.py": "def f():\n    return 1\n", "src/_helper.py": "X = 2\n",
				"src/test_typing_extensions.py": "import unittest\n\nimport typing_extensions\nfrom _helper import X\n\n\nclass T(unittest.TestCase):\n    def test_f(self):\n        self.assertEqual(typing_extensions.f() + X, 3)\n"},
			Check{Name: "tests", Kind: KindUnittest}, "", []string{"-s", "src", "-t", "src"}, nil, "the test modules are in src/, which it does not enter (no __init__.py), so the check runs `python -m unittest discover -s src -t src`", 1},
		// zope.deprecation: src/zope/ is a namespace package, the suite one module inside the
		// package, src/zope/deprecation/tests.py; zope-testrunner --test-path=src runs it.
		{"unittest's test module in a package below a namespace folder in src/",
			map[string]string{"src/zope/deprecation/__init__.py": "def f():\n    return 1\n",
				"src/zope/deprecation/tests.py": "import unittest\n\nfrom zope.deprecation import f\n\n\nclass T(unittest.TestCase):\n    def test_f(self):\n        self.assertEqual(f(), 1)\n"},
			Check{Name: "tests", Kind: KindUnittest}, "", []string{"-s", "src/zope/deprecation", "-t", "src"}, nil, "the test modules are in the package src/zope/deprecation/, below src/, which it does not enter (src/ is not a package), so the check runs `python -m unittest discover -s src/zope/deprecation -t src`", 1},
		{"a pytest check whose only tests are a tests.py in a package below a namespace folder",
			map[string]string{"setup.cfg": "[flake8]\ndoctests = 1\n", "src/zope/deprecation/__init__.py": "def f():\n    return 1\n",
				"src/zope/deprecation/tests.py": "import unittest\n\nfrom zope.deprecation import f\n\n\nclass T(unittest.TestCase):\n    def test_f(self):\n        self.assertEqual(f(), 1)\n"},
			Check{Name: "tests", Kind: KindPytest}, KindUnittest, []string{"-s", "src/zope/deprecation", "-t", "src"}, nil, "-s src/zope/deprecation -t src", 1},
		{"unittest's test modules in two packages below src/: which is the operator's to say",
			map[string]string{"src/zope/a/__init__.py": "", "src/zope/a/tests.py": unittestCase, "src/zope/b/__init__.py": "", "src/zope/b/tests.py": unittestCase},
			Check{Name: "tests", Kind: KindUnittest}, "", nil, nil, "", 0},
		{"unittest's test modules in one other folder",
			map[string]string{"checks/test_calc.py": unittestCase, "calc.py": "def double(x):\n    return 2 * x\n"},
			Check{Name: "tests", Kind: KindUnittest}, "", []string{"-s", "checks", "-t", "checks"}, nil, "in checks/", 1},
		{"unittest's test modules in two folders, neither src: which is the operator's to say",
			map[string]string{"checks/test_a.py": unittestCase, "more/test_b.py": unittestCase, "calc.py": "def double(x):\n    return 2 * x\n"},
			Check{Name: "tests", Kind: KindUnittest}, "", nil, nil, "", 0},
		{"a unittest command of the check's own is left as it is",
			map[string]string{"src/typing_extensions.py": "def f():\n    return 1\n", "src/_helper.py": "X = 2\n",
				"src/test_typing_extensions.py": "import unittest\n\nimport typing_extensions\nfrom _helper import X\n\n\nclass T(unittest.TestCase):\n    def test_f(self):\n        self.assertEqual(typing_extensions.f() + X, 3)\n"},
			Check{Name: "tests", Kind: KindUnittest, Command: []string{"/usr/bin/python3", "-m", "unittest", "discover"}}, "", nil, nil, "", 0},
		// texttable: pytest functions in a root tests.py, no pytest configuration; tox.ini runs
		// `pytest tests.py`. unittest finds nothing there either.
		{"a root tests.py of pytest functions that python_files does not match",
			map[string]string{"calc.py": "def double(x):\n    return 2 * x\n", "tests.py": "from calc import double\n\n\ndef test_double():\n    assert double(2) == 4\n\n\nclass TestMore:\n    def test_zero(self):\n        assert double(0) == 0\n",
				"tox.ini": "[testenv]\ncommands = pytest --cov=calc tests.py\n"},
			Check{Name: "tests", Kind: KindPytest}, "", []string{"-o", "python_files=test_*.py *_test.py tests.py"}, nil, "the tests are in tests.py, which python_files (test_*.py *_test.py) does not match", 2},
		{"a tests.py of pytest functions in testpaths, beside python_files of the configuration",
			map[string]string{"calc.py": "def double(x):\n    return 2 * x\n", "setup.cfg": "[tool:pytest]\ntestpaths = checks\npython_files = check_*.py\n",
				"checks/tests.py": "from calc import double\n\n\ndef test_double():\n    assert double(2) == 4\n"},
			Check{Name: "tests", Kind: KindPytest}, "", []string{"-o", "python_files=check_*.py tests.py"}, nil, "checks/tests.py", 1},
		{"a healthy repository", map[string]string{"test_calc.py": "def test_one():\n    assert True\n"},
			Check{Name: "tests", Kind: KindPytest}, "", nil, nil, "", 1},
		{"a dependency that is not installed (not the project's)",
			map[string]string{"tests/test_calc.py": "import ticketd_missing_dependency\n\n\ndef test_one():\n    assert True\n"},
			Check{Name: "tests", Kind: KindPytest}, "", nil, nil, "", 1},
		{"an unknown option of the check's own command",
			map[string]string{"test_calc.py": "def test_one():\n    assert True\n"},
			Check{Name: "tests", Kind: KindPytest, Command: []string{"pytest", "--ticketd-unknown"}}, "", nil, nil, "", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := writeTree(t, tt.files)
			r := &Runner{Sandbox: testSandbox(t)}
			tt.check.Timeout = time.Minute
			run := func(ctx context.Context, cs []Check) []Result { return r.Run(ctx, dir, cs) }
			base := run(context.Background(), []Check{tt.check})
			got := Adapt(context.Background(), run, dir, []Check{tt.check}, base)[0]
			cond := got.Condition
			if tt.wantKind == "" && tt.wantArgs == nil && tt.wantPath == nil {
				if cond != nil {
					t.Fatalf("condition %+v for a failure that is not ticketd's to work around", cond)
				}
				if got.Tests != tt.wantTests && !(tt.wantTests == 1 && got.Tests > 0) {
					t.Errorf("tests %d, want %d (%s)", got.Tests, tt.wantTests, got.Summary)
				}
				return
			}
			if cond == nil {
				t.Fatalf("no condition; result %s (tests %d, errored %d)\n%s", got.Summary, got.Tests, got.Errored, got.Output)
			}
			if cond.Kind != tt.wantKind || !slices.Equal(cond.Args, tt.wantArgs) || !slices.Equal(cond.Path, tt.wantPath) {
				t.Errorf("condition %+v; want kind %q args %q path %q", cond, tt.wantKind, tt.wantArgs, tt.wantPath)
			}
			if !got.Passed || got.Tests != tt.wantTests {
				t.Errorf("adapted run: passed %v, %d tests (%s); want it to pass with %d\n%s", got.Passed, got.Tests, got.Summary, tt.wantTests, got.Output)
			}
			if !strings.Contains(strings.Join(got.Notes, "\n"), tt.wantNote) {
				t.Errorf("notes %q lack %q", got.Notes, tt.wantNote)
			}
			if n := strings.Count(strings.Join(got.Notes, "\n"), "names options of plugins"); n > 1 {
				t.Errorf("notes %q say %d times what addopts loses to missing plugins; one addopts is in effect", got.Notes, n)
			}
			// A later run under the same condition (an attempt's gate) runs the same way.
			again := r.Run(context.Background(), dir, Conditioned([]Check{tt.check}, []Result{got}))[0]
			if !again.Passed || again.Tests != tt.wantTests {
				t.Errorf("conditioned run: passed %v, %d tests (%s)", again.Passed, again.Tests, again.Summary)
			}
		})
	}
}

// lackingOpts is what Adapt should make of an addopts of opts (each an option with its
// values, and the module of the plugin that defines it, "" for pytest's own) with the
// interpreter the checks use: the -o addopts=... of the options whose plugin it cannot
// import and the note naming those, or nil and "" when it has every plugin.
func lackingOpts(t *testing.T, opts ...[2]string) (args []string, note string) {
	t.Helper()
	argv, err := ResolvePytest(context.Background())
	if err != nil {
		t.Fatalf("resolve pytest: %v", err)
	}
	var kept, lacking []string
	for _, o := range opts {
		if o[1] != "" && exec.Command(argv[0], "-c", "import "+o[1]).Run() != nil {
			lacking = append(lacking, o[0])
			continue
		}
		kept = append(kept, o[0])
	}
	if len(lacking) == 0 {
		return nil, ""
	}
	return []string{"-o", "addopts=" + strings.Join(kept, " ")}, "names options of plugins this interpreter lacks (" + strings.Join(lacking, " ") + ")"
}

// A check configured as the pytest script (`pytest tests`, as a project's CI runs it after
// `pip install -e .`) in a repository whose package is at the root and installed nowhere:
// the script does not put the root on sys.path, so every test fails to import the package
// at the base. The root goes on PYTHONPATH, and the same check then runs the tests.
func TestAdaptPytestScriptRootPackage(t *testing.T) {
	requirePytest(t)
	script, err := exec.LookPath("pytest")
	testenv.Need(t, testenv.Pytest, err)
	dir := writeTree(t, map[string]string{
		"pyproject.toml":     "[project]\nname = \"shop\"\nversion = \"0\"\n",
		"shop/__init__.py":   "",
		"shop/cart.py":       "def total(xs):\n    return sum(xs)\n",
		"tests/test_cart.py": "from shop.cart import total\n\n\ndef test_total():\n    assert total([1, 2]) == 3\n",
	})
	check := Check{Name: "tests", Kind: KindPytest, Command: []string{script, "tests"}, Timeout: time.Minute}
	r := &Runner{Sandbox: testSandbox(t)}
	run := func(ctx context.Context, cs []Check) []Result { return r.Run(ctx, dir, cs) }
	base := run(context.Background(), []Check{check})
	if base[0].Errored != 1 {
		t.Fatalf("the pytest script imported shop from the root (%s): the premise does not hold\n%s", base[0].Summary, base[0].Output)
	}
	got := Adapt(context.Background(), run, dir, []Check{check}, base)[0]
	if got.Condition == nil || !slices.Equal(got.Condition.Path, []string{"."}) {
		t.Fatalf("condition %+v, want path [.]; result %s\n%s", got.Condition, got.Summary, got.Output)
	}
	if !got.Passed || got.Tests != 1 || !strings.Contains(strings.Join(got.Notes, "\n"), "the repository's root put on PYTHONPATH") {
		t.Errorf("adapted run: passed %v, %d tests (%s), notes %q; want 1 passed with a note", got.Passed, got.Tests, got.Summary, got.Notes)
	}
	again := r.Run(context.Background(), dir, Conditioned([]Check{check}, []Result{got}))[0]
	if !again.Passed || again.Tests != 1 {
		t.Errorf("conditioned run: passed %v, %d tests (%s)\n%s", again.Passed, again.Tests, again.Summary, again.Output)
	}
}

// A target test runs alone under a check whose command names a folder: the folder's other
// modules (one fails to import) are not collected. The same run without the rule collects
// them: the negative control.
func TestOnlyReplacesPathArguments(t *testing.T) {
	requirePytest(t)
	dir := writeTree(t, map[string]string{
		"pkg/__init__.py":             "",
		"pkg/test/__init__.py":        "",
		"pkg/test/test_good.py":       "def test_good():\n    assert True\n",
		"pkg/test/test_broken.py":     "import ticketd_missing_dependency\n\n\ndef test_other():\n    pass\n",
		"pkg/test/test_also_good.py":  "def test_also():\n    assert True\n",
		"docs/not_a_test_argument.md": "x\n",
	})
	r := &Runner{Sandbox: testSandbox(t)}
	py, err := findPython(context.Background(), "pytest")
	if err != nil {
		t.Fatal(err)
	}
	c := Check{Name: "tests", Kind: KindPytest, Timeout: time.Minute, Command: []string{py, "-m", "pytest", "-q", "pkg/test"}}
	whole := r.Run(context.Background(), dir, []Check{c})[0]
	if whole.Passed || whole.Errored == 0 {
		t.Fatalf("the whole folder: passed %v, errored %d (%s); want its import error", whole.Passed, whole.Errored, whole.Summary)
	}
	alone := c
	alone.Only = []string{"pkg/test/test_good.py::test_good"}
	res := r.Run(context.Background(), dir, []Check{alone})[0]
	if !res.Passed || res.Tests != 1 {
		t.Errorf("alone: passed %v, %d tests (%s); want the one test alone\ncommand %q\n%s", res.Passed, res.Tests, res.Summary, res.Command, res.Output)
	}
	if slices.Contains(res.Command, "pkg/test") {
		t.Errorf("alone run still names the folder: %q", res.Command)
	}
	// Negative control: the folder kept beside the id collects the broken module again.
	kept := c
	kept.Command = append(slices.Clone(c.Command), "pkg/test/test_good.py::test_good")
	if res := r.Run(context.Background(), dir, []Check{kept})[0]; res.Passed {
		t.Errorf("the folder beside the id passed (%s); the control must see the import error", res.Summary)
	}
}

// unittest's named tests run alone through -k, inside the configured discovery.
func TestUnittestOnly(t *testing.T) {
	requirePytest(t)
	dir := writeTree(t, map[string]string{
		"tests/test_a.py": "import unittest\n\n\nclass A(unittest.TestCase):\n    def test_ok(self):\n        pass\n\n    def test_bad(self):\n        self.fail('no')\n",
	})
	r := &Runner{Sandbox: testSandbox(t)}
	c := Check{Name: "tests", Kind: KindUnittest, Timeout: time.Minute, Command: []string{"/usr/bin/python3", "-m", "unittest", "discover", "-s", "tests"}}
	whole := r.Run(context.Background(), dir, []Check{c})[0]
	if whole.Passed || whole.Tests != 2 {
		t.Fatalf("whole: passed %v, %d tests (%s)", whole.Passed, whole.Tests, whole.Summary)
	}
	alone := c
	alone.Only = []string{"test_a.A.test_ok"}
	if res := r.Run(context.Background(), dir, []Check{alone})[0]; !res.Passed || res.Tests != 1 {
		t.Errorf("alone: passed %v, %d tests (%s)\n%s", res.Passed, res.Tests, res.Summary, res.Output)
	}
}

// A project whose build writes its version file into its own package (humanize: hatch-vcs's
// version-file = "src/humanize/_version.py", imported by humanize/__init__.py): in a checkout
// nobody built, every test fails to import the package. The file is written for each check
// and removed after it; a build configuration that does not name it leaves the failure as it
// is (the negative control), and a version file the worktree has is never replaced.
func TestAdaptGeneratedVersionFile(t *testing.T) {
	requirePytest(t)
	files := func(pyproject string) map[string]string {
		return map[string]string{
			"pyproject.toml":           pyproject,
			"src/humanize/__init__.py": "from ._version import __version__\nfrom .number import apnumber\n",
			"src/humanize/number.py":   "def apnumber(n):\n    return str(n)\n",
			"tests/__init__.py":        "",
			"tests/test_number.py":     "import humanize\n\n\ndef test_apnumber():\n    assert humanize.apnumber(10) == '10'\n\n\ndef test_version():\n    assert humanize.__version__\n",
		}
	}
	hatch := "[project]\nname = \"humanize\"\ndynamic = [\"version\"]\n\n[tool.hatch]\nversion.source = \"vcs\"\nbuild.hooks.vcs.version-file = \"src/humanize/_version.py\"\n"
	check := Check{Name: "tests", Kind: KindPytest, Timeout: time.Minute}

	t.Run("named by the build", func(t *testing.T) {
		dir := writeTree(t, files(hatch))
		r := &Runner{Sandbox: testSandbox(t)}
		run := func(ctx context.Context, cs []Check) []Result { return r.Run(ctx, dir, cs) }
		base := run(context.Background(), []Check{check})
		if base[0].Tests <= 0 || base[0].Errored != base[0].Tests {
			t.Fatalf("the base run did not error everywhere (%s): the premise does not hold\n%s", base[0].Summary, base[0].Output)
		}
		got := Adapt(context.Background(), run, dir, []Check{check}, base)[0]
		if got.Condition == nil || len(got.Condition.Files) != 1 || got.Condition.Files[0].Path != "src/humanize/_version.py" {
			t.Fatalf("condition %+v, want the version file src/humanize/_version.py; result %s\n%s", got.Condition, got.Summary, got.Output)
		}
		if !got.Passed || got.Tests != 2 || !strings.Contains(strings.Join(got.Notes, "\n"), "src/humanize/_version.py written for the checks") {
			t.Errorf("adapted run: passed %v, %d tests (%s), notes %q; want 2 passed with a note\n%s", got.Passed, got.Tests, got.Summary, got.Notes, got.Output)
		}
		if _, err := os.Lstat(filepath.Join(dir, "src/humanize/_version.py")); err == nil {
			t.Error("the version file is left in the worktree after the check")
		}
		again := r.Run(context.Background(), dir, Conditioned([]Check{check}, []Result{got}))[0]
		if !again.Passed || again.Tests != 2 {
			t.Errorf("conditioned run: passed %v, %d tests (%s)\n%s", again.Passed, again.Tests, again.Summary, again.Output)
		}
		// A version file the worktree holds (the maker's) is the one the check imports.
		own := filepath.Join(dir, "src/humanize/_version.py")
		if err := os.WriteFile(own, []byte("__version__ = ''\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		mine := r.Run(context.Background(), dir, Conditioned([]Check{check}, []Result{got}))[0]
		if mine.Passed || mine.Tests != 2 {
			t.Errorf("with the worktree's own version file: passed %v, %d tests (%s); want test_version to fail on it", mine.Passed, mine.Tests, mine.Summary)
		}
		if data, err := os.ReadFile(own); err != nil || string(data) != "__version__ = ''\n" {
			t.Errorf("the worktree's own version file was changed or removed: %q, %v", data, err)
		}
	})
	// platformdirs: once the package imports, most tests error on the fixture of a plugin
	// nobody installed (pytest-mock's mocker), so the adapted run has more errors than the
	// base's failed modules; it still gates, with the tests that pass, where the base gated none.
	t.Run("then tests error on a missing plugin's fixture", func(t *testing.T) {
		tree := files(hatch)
		tree["tests/test_mocked.py"] = "import humanize\n\nimport pytest\n\n\n@pytest.mark.parametrize('n', [1, 2, 3])\ndef test_mocked(ticketd_absent_mocker, n):\n    assert humanize.apnumber(n)\n"
		dir := writeTree(t, tree)
		r := &Runner{Sandbox: testSandbox(t)}
		run := func(ctx context.Context, cs []Check) []Result { return r.Run(ctx, dir, cs) }
		base := run(context.Background(), []Check{check})
		if base[0].Tests != 2 || base[0].Errored != 2 {
			t.Fatalf("the base run is not two modules that fail to import (%s): the premise does not hold\n%s", base[0].Summary, base[0].Output)
		}
		got := Adapt(context.Background(), run, dir, []Check{check}, base)[0]
		if got.Condition == nil || len(got.Condition.Files) != 1 || got.Tests != 5 || got.Errored != 3 {
			t.Fatalf("condition %+v, %d tests, %d errored (%s); want the version file written and 2 tests passing beside 3 that error on the fixture\n%s",
				got.Condition, got.Tests, got.Errored, got.Summary, got.Output)
		}
	})
	t.Run("not named by the build", func(t *testing.T) {
		dir := writeTree(t, files("[project]\nname = \"humanize\"\nversion = \"1.0\"\n"))
		r := &Runner{Sandbox: testSandbox(t)}
		run := func(ctx context.Context, cs []Check) []Result { return r.Run(ctx, dir, cs) }
		base := run(context.Background(), []Check{check})
		if got := Adapt(context.Background(), run, dir, []Check{check}, base)[0]; got.Condition != nil {
			t.Errorf("condition %+v for a module the build does not generate", got.Condition)
		}
	})
}

// Discovery reads a check as it runs under its condition: the start folder Adapt found for
// unittest (typing_extensions' src/) holds its tests, while the code beside them stays code.
func TestDiscoverOptionsUnderCondition(t *testing.T) {
	dir := writeTree(t, map[string]string{"src/typing_extensions.py": "", "src/test_typing_extensions.py": ""})
	check := Check{Name: "tests", Kind: KindUnittest}
	cond := &Condition{Args: []string{"-s", "src", "-t", "src"}}
	for _, tt := range []struct {
		name  string
		check Check
		start string
	}{
		{"as configured", check, "."},
		{"under the condition", check.With(cond), "src"},
	} {
		d := discover.FromDir(dir, DiscoverOptions([]Check{tt.check}))
		if d.UnittestStart != tt.start || !d.IsTestFile("src/test_typing_extensions.py") || d.IsTestPath("src/typing_extensions.py") {
			t.Errorf("%s: start %q, test module %v, code a test path %v; want start %q, a test module, code not a test path (%s)", tt.name,
				d.UnittestStart, d.IsTestFile("src/test_typing_extensions.py"), d.IsTestPath("src/typing_extensions.py"), tt.start, d.Describe())
		}
	}
}

// The -o python_files= of a Condition (a root tests.py) reaches discovery, so test selection
// and the evidence step take tests.py for a test module, not for code under test.
func TestDiscoverOptionsUnderPytestCondition(t *testing.T) {
	dir := writeTree(t, map[string]string{"texttable.py": "", "tests.py": "def test_x():\n    pass\n"})
	check := Check{Name: "tests", Kind: KindPytest}
	cond := &Condition{Args: []string{"-o", "python_files=test_*.py *_test.py tests.py"}}
	for _, tt := range []struct {
		name  string
		check Check
		test  bool
	}{
		{"as configured", check, false},
		{"under the condition", check.With(cond), true},
	} {
		d := discover.FromDir(dir, DiscoverOptions([]Check{tt.check}))
		if d.IsTestFile("tests.py") != tt.test || d.IsTestPath("texttable.py") {
			t.Errorf("%s: tests.py a test module %v, texttable.py a test path %v; want %v, false (%s)", tt.name,
				d.IsTestFile("tests.py"), d.IsTestPath("texttable.py"), tt.test, d.Describe())
		}
	}
}

// pydash: tests marked with pytest-mypy-testing's mypy_testing fail at the base without the
// plugin (as plain tests, or not collected under --strict-markers or -W error); the
// baseline says why, naming the mark and the modules. A test that fails for its own reason
// in a module without such a mark gets no such note.
func TestAdaptNotesUnknownMarkFailures(t *testing.T) {
	requirePytest(t)
	py, err := ResolvePytest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"tests/__init__.py":                        "",
		"tests/pytest_mypy_testing/__init__.py":    "",
		"tests/pytest_mypy_testing/test_arrays.py": "import pytest\n\n\n@pytest.mark.mypy_testing\ndef test_mypy_chunk() -> None:\n    reveal_type([1])  # R: builtins.list[builtins.int]\n",
		"tests/test_arrays.py":                     "def test_chunk():\n    assert [1]\n",
		"tests/test_broken.py":                     "def test_broken():\n    assert False\n",
	}
	for _, tt := range []struct {
		name    string
		args    []string
		want    string // part of the note; "" for none
		without bool   // the marked module left out: no note
	}{
		{"as plain tests", nil, "runs those tests as plain tests", false},
		{"--strict-markers in the command", []string{"--strict-markers"}, "--strict-markers refuses", false},
		{"-W error in the command", []string{"-W", "error"}, "runs those tests as plain tests", false},
		{"a failure of its own", nil, "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tree := maps.Clone(files)
			if tt.without {
				delete(tree, "tests/pytest_mypy_testing/test_arrays.py")
			}
			dir := writeTree(t, tree)
			check := Check{Name: "tests", Kind: KindPytest, Command: append(slices.Clone(py), tt.args...), Timeout: time.Minute}
			r := &Runner{Sandbox: testSandbox(t)}
			run := func(ctx context.Context, cs []Check) []Result { return r.Run(ctx, dir, cs) }
			base := run(context.Background(), []Check{check})
			got := Adapt(context.Background(), run, dir, []Check{check}, base)[0]
			var note string
			for _, n := range got.Notes {
				if strings.Contains(n, "mark no installed plugin registers") && strings.Contains(n, "fail at the base") {
					note = n
				}
			}
			if tt.want == "" {
				if note != "" {
					t.Errorf("note %q; want none", note)
				}
				return
			}
			if !strings.Contains(note, tt.want) || !strings.Contains(note, "pytest.mark.mypy_testing") || !strings.Contains(note, "tests/pytest_mypy_testing/test_arrays.py") || !strings.HasPrefix(note, "1 test(s)") {
				t.Errorf("notes %q; want one naming 1 test, pytest.mark.mypy_testing, its module and %q\n%s", got.Notes, tt.want, got.Output)
			}
		})
	}
}

// A project whose code reads its version from its installed metadata (click's __version__,
// `version("calc")` in a package's __init__.py) in a checkout the checks import from src/
// without installing it: importlib.metadata raises PackageNotFoundError and every test
// errors at the base. A one-file egg-info of the project's name is written beside the package
// for each check and removed after it; a distribution that is not the repository's own (a
// missing dependency's) is left as it is (the negative control).
func TestAdaptGeneratedMetadata(t *testing.T) {
	requirePytest(t)
	check := Check{Name: "tests", Kind: KindPytest, Timeout: time.Minute}
	for _, tt := range []struct {
		name, dist string
		want       string // the egg-info written, "" for none
	}{
		{"the repository's own package", "calc", "src/calc-0.0.0+ticketd.egg-info"},
		// wcwidth: only a test reads the metadata, and fails (not errors) on it.
		{"the repository's own package, read by a test", "", "src/calc-1.2.egg-info"},
		{"a dependency nobody installed", "ticketd-absent-dist", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			files := map[string]string{
				"pyproject.toml":       "[project]\nname = \"calc\"\ndynamic = [\"version\"]\n",
				"src/calc/__init__.py": "from importlib.metadata import version\n\n__version__ = version(\"" + tt.dist + "\")\n\n\ndef double(x):\n    return 2 * x\n",
				"tests/test_calc.py":   "import calc\n\n\ndef test_double():\n    assert calc.double(2) == 4\n\n\ndef test_version():\n    assert calc.__version__\n",
			}
			if tt.dist == "" {
				// The metadata's version is pyproject's static one, which __version__ repeats.
				files["pyproject.toml"] = "[project]\nname = \"calc\"\nversion = \"1.2\"  # also in calc/__init__.py\n\n[tool.x]\nversion = \"9\"\n"
				files["src/calc/__init__.py"] = "__version__ = \"1.2\"\n\n\ndef double(x):\n    return 2 * x\n"
				files["tests/test_calc.py"] = "import importlib.metadata\n\nimport calc\n\n\ndef test_double():\n    assert calc.double(2) == 4\n\n\ndef test_version():\n    assert importlib.metadata.version(\"calc\") == calc.__version__\n"
			}
			dir := writeTree(t, files)
			r := &Runner{Sandbox: testSandbox(t)}
			run := func(ctx context.Context, cs []Check) []Result { return r.Run(ctx, dir, cs) }
			base := run(context.Background(), []Check{check})
			if base[0].Tests <= 0 || base[0].Passed || !strings.Contains(base[0].Output+findingText(base[0]), "PackageNotFoundError") {
				t.Fatalf("the base run did not error on the missing metadata (%s): the premise does not hold\n%s", base[0].Summary, base[0].Output)
			}
			got := Adapt(context.Background(), run, dir, []Check{check}, base)[0]
			if tt.want == "" {
				if got.Condition != nil {
					t.Fatalf("condition %+v for another distribution's metadata", got.Condition)
				}
				return
			}
			if got.Condition == nil || len(got.Condition.Files) != 1 || got.Condition.Files[0].Path != tt.want {
				t.Fatalf("condition %+v, want the metadata file %s; result %s\n%s", got.Condition, tt.want, got.Summary, got.Output)
			}
			if !got.Passed || got.Tests != 2 || !strings.Contains(strings.Join(got.Notes, "\n"), tt.want+" written for the checks") {
				t.Errorf("adapted run: passed %v, %d tests (%s), notes %q; want 2 passed with a note\n%s", got.Passed, got.Tests, got.Summary, got.Notes, got.Output)
			}
			if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(tt.want))); err == nil {
				t.Error("the metadata file is left in the worktree after the check")
			}
			again := r.Run(context.Background(), dir, Conditioned([]Check{check}, []Result{got}))[0]
			if !again.Passed || again.Tests != 2 {
				t.Errorf("conditioned run: passed %v, %d tests (%s)\n%s", again.Passed, again.Tests, again.Summary, again.Output)
			}
		})
	}
}

// findingText is every finding's message of r, one a line.
func findingText(r Result) string {
	var b strings.Builder
	for _, f := range r.Findings {
		b.WriteString(f.Message + "\n")
	}
	return b.String()
}

// A monorepo whose only Python project is in a folder of its own (cucumber/tag-expressions'
// python/ beside go/, java/, ...), with no pytest configuration at the root: the check runs
// under that project's configuration (-c), its testpaths put under the folder, so its
// addopts (--doctest-glob=README.md), pythonpath and testpaths apply and its README's
// example gates fixes; the root's README, which a bare testpaths would name, is not
// collected. Discovery reads the -c the condition gives.
func TestAdaptSubprojectConfig(t *testing.T) {
	requirePytest(t)
	t.Parallel()
	check := Check{Name: "tests", Kind: KindPytest, Timeout: time.Minute}
	dir := writeTree(t, map[string]string{
		"README.md":             "Tag expressions in many languages.\n\n>>> 1 + 1\n3\n",
		"go/go.mod":             "module example.com/tags\n",
		"py/pyproject.toml":     "[project]\nname = \"calc\"\n\n[tool.pytest.ini_options]\naddopts = \"--doctest-glob=README.md\"\ntestpaths = [\"README.md\", \"tests\"]\npythonpath = [\".\"]\n",
		"py/calc.py":            "def double(x):\n    return 2 * x\n",
		"py/README.md":          "calc\n\n>>> from calc import double\n>>> double(2)\n4\n",
		"py/tests/test_calc.py": "from calc import double\n\n\ndef test_double():\n    assert double(3) == 6\n",
	})
	r := &Runner{Sandbox: testSandbox(t)}
	run := func(ctx context.Context, cs []Check) []Result { return r.Run(ctx, dir, cs) }
	base := run(context.Background(), []Check{check})
	got := Adapt(context.Background(), run, dir, []Check{check}, base)[0]
	if got.Condition == nil || !slices.Contains(got.Condition.Args, "py/pyproject.toml") {
		t.Fatalf("condition %+v, want -c py/pyproject.toml; result %s\n%s", got.Condition, got.Summary, got.Output)
	}
	readme := false
	for id, o := range got.Outcomes {
		readme = readme || strings.HasPrefix(id, "py/README.md") && o == OutcomePassed
	}
	if !got.Passed || got.Tests != 2 || !readme {
		t.Errorf("adapted run: passed %v, %d tests (%s), outcomes %v; want py/README.md's doctest and the test, both passed\n%s", got.Passed, got.Tests, got.Summary, got.Outcomes, got.Output)
	}
	tests := discover.FromDir(dir, DiscoverOptions(Conditioned([]Check{check}, []Result{got})))
	if tests.Config != "py/pyproject.toml" || !slices.Equal(tests.Paths, []string{"py/README.md", "py/tests"}) || !slices.Contains(tests.DoctestGlobs, "README.md") {
		t.Errorf("discovery under the condition: config %q, paths %q, doctest globs %q; want py/pyproject.toml, [py/README.md py/tests], README.md", tests.Config, tests.Paths, tests.DoctestGlobs)
	}
	// A selected run of one test module reads the same configuration (its pythonpath).
	sel := Conditioned([]Check{check}, []Result{got})[0]
	sel.Only = []string{"py/tests/test_calc.py"}
	if one := r.Run(context.Background(), dir, []Check{sel})[0]; !one.Passed || one.Tests != 1 {
		t.Errorf("selected run: passed %v, %d tests (%s)\n%s", one.Passed, one.Tests, one.Summary, one.Output)
	}
}

// Two test files with one basename in folders that are not packages: pytest collects the
// first and refuses the second ("import file mismatch"), which a project running its test
// folders one CI job each never sees. The check runs with --import-mode=importlib, kept
// because the rerun collects both; an --import-mode the configuration sets is left alone.
func TestAdaptImportFileMismatch(t *testing.T) {
	requirePytest(t)
	t.Parallel()
	check := Check{Name: "tests", Kind: KindPytest, Timeout: time.Minute}
	files := map[string]string{
		"shop/__init__.py":               "",
		"shop/util.py":                   "def slug(s):\n    return s.strip().lower().replace(\" \", \"-\")\n",
		"tests/unit/test_util.py":        "from shop.util import slug\n\n\ndef test_slug_lower():\n    assert slug(\"Hello\") == \"hello\"\n",
		"tests/integration/test_util.py": "from shop.util import slug\n\n\ndef test_slug_spaces():\n    assert slug(\"a b\") == \"a-b\"\n",
	}
	for _, tc := range []struct {
		name, ini string
		want      bool // the condition
	}{
		{"prepend mode", "[pytest]\ntestpaths = tests\n", true},
		{"the configuration names a mode", "[pytest]\ntestpaths = tests\naddopts = --import-mode=append\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tree := maps.Clone(files)
			tree["pytest.ini"] = tc.ini
			dir := writeTree(t, tree)
			r := &Runner{Sandbox: testSandbox(t)}
			run := func(ctx context.Context, cs []Check) []Result { return r.Run(ctx, dir, cs) }
			base := run(context.Background(), []Check{check})
			got := Adapt(context.Background(), run, dir, []Check{check}, base)[0]
			if !tc.want {
				if got.Condition != nil && slices.Contains(got.Condition.Args, "--import-mode=importlib") {
					t.Errorf("condition %+v; want the configuration's import mode left alone", got.Condition)
				}
				return
			}
			if got.Condition == nil || !slices.Contains(got.Condition.Args, "--import-mode=importlib") {
				t.Fatalf("condition %+v, want --import-mode=importlib; base %s\n%s", got.Condition, base[0].Summary, base[0].Output)
			}
			if !got.Passed || got.Tests != 2 {
				t.Errorf("adapted run: passed %v, %d tests (%s); want both test files collected and passing\n%s", got.Passed, got.Tests, got.Summary, got.Output)
			}
			if note := strings.Join(got.Condition.Notes, "\n"); !strings.Contains(note, "tests/unit/test_util.py did not collect") || !strings.Contains(note, "import file mismatch") {
				t.Errorf("notes %q; want the file that did not collect and why", got.Condition.Notes)
			}
		})
	}
}
