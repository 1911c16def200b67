package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/store"
)

// Tests where real projects keep them: a tests.py that pytest's python_files names, a root
// test.py that only unittest runs, a src/ package that only tests/__init__.py imports, and a
// check whose command names the test folder, beside a module that fails to import at the
// base. Each ticket's fix comes as upstream fixes do, with its regression test (or, for the
// last, making the failing test the issue names pass); each must ship in one submit.

// kvstoreRepo: pytest configured in setup.cfg to collect tests.py (Django style).
func kvstoreRepo(t *testing.T, root string) realRepo {
	t.Helper()
	r := realRepo{name: "kvstore", path: filepath.Join(root, "kvstore"), title: "Settings whose value contains '=' cannot be loaded"}
	writeRepo(t, r.path, map[string]string{
		"setup.cfg":  "[metadata]\nname = kvstore\n\n[tool:pytest]\npython_files = tests.py\n",
		"kvstore.py": "def parse_line(line):\n    key, value = line.split(\"=\")\n    return key.strip(), value.strip()\n",
		"tests.py":   "from kvstore import parse_line\n\n\ndef test_simple():\n    assert parse_line(\"a = 1\") == (\"a\", \"1\")\n",
	})
	r.patch = fixPatch(t, r.path, map[string][2]string{
		"kvstore.py": {`line.split("=")`, `line.split("=", 1)`},
		"tests.py":   {"def test_simple():\n", "def test_value_with_equals():\n    assert parse_line(\"url = a=b\") == (\"url\", \"a=b\")\n\n\ndef test_simple():\n"},
	})
	return r
}

// meanRepo: a module and a root test.py of unittest cases; pytest collects nothing there.
func meanRepo(t *testing.T, root string) realRepo {
	t.Helper()
	r := realRepo{name: "mean", path: filepath.Join(root, "mean"), title: "Mean of an empty list crashes the dashboard"}
	writeRepo(t, r.path, map[string]string{
		"mean.py": "def mean(xs):\n    return sum(xs) / len(xs)\n",
		"test.py": "import unittest\n\nfrom mean import mean\n\n\nclass MeanTest(unittest.TestCase):\n    def test_mean(self):\n        self.assertEqual(mean([1, 3]), 2)\n\n\nif __name__ == \"__main__\":\n    unittest.main()\n",
	})
	r.patch = fixPatch(t, r.path, map[string][2]string{
		"mean.py": {"    return sum(xs) / len(xs)\n", "    if not xs:\n        return 0.0\n    return sum(xs) / len(xs)\n"},
		"test.py": {"    def test_mean(self):\n", "    def test_mean_of_nothing(self):\n        self.assertEqual(mean([]), 0.0)\n\n    def test_mean(self):\n"},
	})
	return r
}

// tomletRepo: a src/ layout whose test modules import the package only through
// tests/__init__.py (`from . import toml_impl`), as tomli's tests do.
func tomletRepo(t *testing.T, root string) realRepo {
	t.Helper()
	r := realRepo{name: "tomlet", path: filepath.Join(root, "tomlet"), title: "Comment lines make the config loader crash"}
	writeRepo(t, r.path, map[string]string{
		"pyproject.toml":         "[project]\nname = \"tomlet\"\nversion = \"1.0\"\n\n[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n",
		"src/tomlet/__init__.py": "from ._parser import loads\n\n__all__ = [\"loads\"]\n",
		"src/tomlet/_parser.py":  "def loads(text):\n    out = {}\n    for line in text.splitlines():\n        if not line.strip():\n            continue\n        key, value = line.split(\"=\", 1)\n        out[key.strip()] = value.strip()\n    return out\n",
		"tests/__init__.py":      "import tomlet as toml_impl\n\n__all__ = [\"toml_impl\"]\n",
		"tests/test_loads.py":    "from . import toml_impl\n\n\ndef test_pairs():\n    assert toml_impl.loads(\"a = 1\\nb = 2\") == {\"a\": \"1\", \"b\": \"2\"}\n",
	})
	r.patch = fixPatch(t, r.path, map[string][2]string{
		"src/tomlet/_parser.py": {"        if not line.strip():\n", "        if not line.strip() or line.lstrip().startswith(\"#\"):\n"},
		"tests/test_loads.py":   {"def test_pairs():\n", "def test_comment_lines():\n    assert toml_impl.loads(\"# c\\na = 1\") == {\"a\": \"1\"}\n\n\ndef test_pairs():\n"},
	})
	return r
}

// geomRepo: tests inside the package (geom/test), run by a check whose command names that
// folder; one test module there needs an optional dependency nobody installed, so the
// folder has a collection error at the base. The issue names the failing test.
func geomRepo(t *testing.T, root, python string) realRepo {
	t.Helper()
	r := realRepo{name: "geom", path: filepath.Join(root, "geom"), title: "Perimeter of a rectangle is half what it should be",
		body:   "The perimeter of a 2x3 rectangle comes out as 5.\n\n    FAILED geom/test/test_shapes.py::test_perimeter - assert 5 == 10\n\nExpected 10.",
		checks: fmt.Sprintf("[{name: tests, kind: pytest, command: [%s, -m, pytest, geom/test]}]", python)}
	writeRepo(t, r.path, map[string]string{
		"geom/__init__.py":         "",
		"geom/shapes.py":           "def area(w, h):\n    return w * h\n\n\ndef perimeter(w, h):\n    return w + h\n",
		"geom/test/__init__.py":    "",
		"geom/test/test_shapes.py": "from geom.shapes import area, perimeter\n\n\ndef test_area():\n    assert area(2, 3) == 6\n\n\ndef test_perimeter():\n    assert perimeter(2, 3) == 10\n",
		"geom/test/test_plot.py":   "import ticketd_fixture_matplotlib\n\n\ndef test_plot():\n    pass\n",
	})
	r.patch = fixPatch(t, r.path, map[string][2]string{
		"geom/shapes.py": {"    return w + h\n", "    return 2 * (w + h)\n"},
	})
	return r
}

// lintRepo: addopts names the options of plugins (pytest-flake8, pytest-black) the checks'
// interpreter lacks, so every plain run is a usage error.
func lintRepo(t *testing.T, root string) realRepo {
	t.Helper()
	r := realRepo{name: "lintcfg", path: filepath.Join(root, "lintcfg"), title: "Slug of a title with several spaces has double dashes"}
	writeRepo(t, r.path, map[string]string{
		"tox.ini":      "[tox]\nenvlist = py3\n\n[pytest]\naddopts = --flake8 --black -q\n",
		"slug.py":      "def slugify(title):\n    return title.lower().replace(\" \", \"-\")\n",
		"test_slug.py": "from slug import slugify\n\n\ndef test_simple():\n    assert slugify(\"Hello World\") == \"hello-world\"\n",
	})
	r.patch = fixPatch(t, r.path, map[string][2]string{
		"slug.py":      {`    return title.lower().replace(" ", "-")`, `    return "-".join(title.lower().split())`},
		"test_slug.py": {"def test_simple():\n", "def test_several_spaces():\n    assert slugify(\"a  b\") == \"a-b\"\n\n\ndef test_simple():\n"},
	})
	return r
}

// tablerRepo: pytest functions in a root tests.py and no pytest configuration; the project
// runs `pytest tests.py` (texttable's tox.ini), so a bare pytest collects nothing there and
// unittest finds no TestCase.
func tablerRepo(t *testing.T, root string) realRepo {
	t.Helper()
	r := realRepo{name: "tabler", path: filepath.Join(root, "tabler"), title: "Integer cells are truncated instead of rounded"}
	writeRepo(t, r.path, map[string]string{
		"tox.ini":   "[testenv]\ndeps = pytest-cov\ncommands = pytest --cov=tabler tests.py\n",
		"tabler.py": "def fmt_int(x):\n    return str(int(float(x)))\n",
		"tests.py":  "from tabler import fmt_int\n\n\ndef test_int():\n    assert fmt_int(3) == \"3\"\n",
	})
	r.patch = fixPatch(t, r.path, map[string][2]string{
		"tabler.py": {"    return str(int(float(x)))\n", "    return str(int(round(float(x))))\n"},
		"tests.py":  {"def test_int():\n", "def test_rounds():\n    assert fmt_int(2.7) == \"3\"\n\n\ndef test_int():\n"},
	})
	return r
}

// taggerRepo: a monorepo whose only Python project is in py/ (cucumber/tag-expressions'
// python/ beside go/, java/, ...), configured there (--doctest-glob=README.md, testpaths,
// pythonpath), nothing Python at the root; the project's README example shows the bug.
func taggerRepo(t *testing.T, root string) realRepo {
	t.Helper()
	r := realRepo{name: "tagger", path: filepath.Join(root, "tagger"), title: "Tags with surrounding spaces are not normalised"}
	writeRepo(t, r.path, map[string]string{
		"README.md":                 "Tag normalisation in Go and Python.\n",
		"go/tags.go":                "package tags\n",
		"py/pyproject.toml":         "[project]\nname = \"tagger\"\n\n[tool.pytest.ini_options]\naddopts = \"--doctest-glob=README.md\"\ntestpaths = [\"README.md\", \"tests\"]\npythonpath = [\"src\"]\n",
		"py/README.md":              "tagger\n\n>>> from tagger import norm\n>>> norm(' @Slow ')\n'@slow'\n",
		"py/src/tagger/__init__.py": "def norm(tag):\n    return tag.lower()\n",
		"py/tests/test_norm.py":     "from tagger import norm\n\n\ndef test_lower():\n    assert norm(\"@A\") == \"@a\"\n",
	})
	r.patch = fixPatch(t, r.path, map[string][2]string{
		"py/src/tagger/__init__.py": {"    return tag.lower()\n", "    return tag.strip().lower()\n"},
		"py/tests/test_norm.py":     {"def test_lower():\n", "def test_strips():\n    assert norm(\" @b\\t\") == \"@b\"\n\n\ndef test_lower():\n"},
	})
	return r
}

// stampRepo: a src/ package nobody installed whose version comes from its metadata
// (click's __version__): the test of it errors with PackageNotFoundError at the base.
func stampRepo(t *testing.T, root string) realRepo {
	t.Helper()
	r := realRepo{name: "stamp", path: filepath.Join(root, "stamp"), title: "Stamps of single-digit days lack the leading zero"}
	writeRepo(t, r.path, map[string]string{
		"pyproject.toml":        "[project]\nname = \"stamp\"\ndynamic = [\"version\"]\n",
		"src/stamp/__init__.py": "from importlib.metadata import version\n\n\ndef stamp(day):\n    return \"d%d\" % day\n\n\ndef banner():\n    return \"stamp \" + version(\"stamp\")\n",
		"tests/test_stamp.py":   "from stamp import stamp\n\n\ndef test_stamp():\n    assert stamp(12) == \"d12\"\n",
		"tests/test_banner.py":  "from stamp import banner\n\n\ndef test_banner():\n    assert banner().startswith(\"stamp \")\n",
	})
	r.patch = fixPatch(t, r.path, map[string][2]string{
		"src/stamp/__init__.py": {`    return "d%d" % day`, `    return "d%02d" % day`},
		"tests/test_stamp.py":   {"def test_stamp():\n", "def test_single_digit():\n    assert stamp(3) == \"d03\"\n\n\ndef test_stamp():\n"},
	})
	return r
}

func TestRealRepositoryLayouts(t *testing.T) {
	t.Parallel() // a night of its own: repositories, store, model server, clock
	realNight(t)
	pytest, err := resolvedPytest()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	kv, mean, tomlet, geom, lint := kvstoreRepo(t, root), meanRepo(t, root), tomletRepo(t, root), geomRepo(t, root, pytest[0]), lintRepo(t, root)
	tabler, stamp, tagger := tablerRepo(t, root), stampRepo(t, root), taggerRepo(t, root)
	var cases []scriptedmodel.Case
	for _, r := range []realRepo{kv, mean, tomlet, geom, lint, tabler, stamp, tagger} {
		cases = append(cases, scriptedmodel.Case{Match: r.title, Patch: r.patch})
	}
	n := runNight(t, realConfig(t, root, scriptedServer(t, cases), kv, mean, tomlet, geom, lint, tabler, stamp, tagger), 0)

	for _, tc := range []struct {
		r       realRepo
		test    string
		env     []string
		args    []string // pytest options the test's own runs need
		inNotes string   // a note the ticket's events must hold ("" for none)
		report  []string
	}{
		{kv, "tests.py::test_value_with_equals", nil, nil, "",
			[]string{"Evidence that the change fixes the bug", "tests: tests.py::test_value_with_equals"}},
		{mean, "test.py::MeanTest::test_mean_of_nothing", nil, nil, "runs with unittest",
			[]string{"Evidence that the change fixes the bug", "test.MeanTest.test_mean_of_nothing"}},
		{tomlet, "tests/test_loads.py::test_comment_lines", []string{"PYTHONPATH=src"}, nil, "src/ put on PYTHONPATH: the tests import tomlet",
			[]string{"Evidence that the change fixes the bug", "tests/test_loads.py::test_comment_lines"}},
		{geom, "geom/test/test_shapes.py::test_perimeter", nil, nil, "",
			[]string{"Target tests (they pass): geom/test/test_shapes.py::test_perimeter", "failing at the base too: tests: geom/test/test_plot.py"}},
		{lint, "test_slug.py::test_several_spaces", nil, []string{"-o", "addopts="}, "names options of plugins this interpreter lacks (--flake8 --black)",
			[]string{"Evidence that the change fixes the bug", "tests: test_slug.py::test_several_spaces"}},
		// tests.py is the tests: its new test is the evidence, its edit a test change.
		{tabler, "tests.py::test_rounds", nil, nil, `the check runs with -o "python_files=test_*.py *_test.py tests.py"`,
			[]string{"New tests that failed at the base commit and ran and passed with the change: tests: tests.py::test_rounds", "Edited test files of the base commit (never evidence; their base versions ran): tests.py"}},
		// The banner test runs (and passes) instead of erroring as an unrelated base failure.
		{stamp, "tests/test_stamp.py::test_single_digit", []string{"PYTHONPATH=src"}, nil, "src/stamp-0.0.0+ticketd.egg-info written for the checks",
			[]string{"tests: tests/test_stamp.py::test_single_digit", "0 already at the base and unrelated still failing"}},
		// The project's README example, collected by its own configuration's --doctest-glob,
		// fails at the base and passes with the fix.
		{tagger, "py/tests/test_norm.py::test_strips", nil, nil, "the pytest configuration of py/pyproject.toml applies",
			[]string{"tests: py/tests/test_norm.py::test_strips", "tests: py/README.md::README.md"}},
	} {
		tk := ticketByRepo(t, n.store, tc.r.name)
		all, ok := submits(t, n.store, tk.ID)
		report, _ := os.ReadFile(filepath.Join(tk.ResultDir, "report.md"))
		if tk.State != store.StateDone || all != 1 || ok != 1 {
			t.Errorf("%s: ticket %s (%s) after %d submit(s), %d accepted; want done in one submit\n%s", tc.r.name, tk.State, tk.Reason, all, ok, report)
			continue
		}
		if tc.inNotes != "" {
			events, _ := n.store.Events(context.Background(), tk.ID)
			noted := false
			for _, e := range events {
				noted = noted || e.Kind == "note" && strings.Contains(e.Reason, tc.inNotes)
			}
			if !noted {
				t.Errorf("%s: no note says %q: %+v", tc.r.name, tc.inNotes, events)
			}
		}
		for _, want := range tc.report {
			if !strings.Contains(string(report), want) {
				t.Errorf("%s: report lacks %q:\n%s", tc.r.name, want, report)
			}
		}
		if passed, out := pytestAt(t, tc.r.path, "main", tc.test, tc.env, tc.args...); passed {
			t.Errorf("%s: %s passes at the base:\n%s", tc.r.name, tc.test, out)
		}
		if passed, out := pytestAt(t, tc.r.path, tk.Branch, tc.test, tc.env, tc.args...); !passed {
			t.Errorf("%s: %s fails on %s:\n%s", tc.r.name, tc.test, tk.Branch, out)
		}
	}
}

// hogOnce runs the real checks, with TICKETD_TEST_HOG set on the first whole-suite run in a
// ticket's worktree: its conftest.py then hangs past the check's time-out, a deterministic
// stand-in for a machine too loaded to finish the suite in time.
type hogOnce struct {
	inner *validate.Runner
	mu    sync.Mutex
	done  bool
}

func (h *hogOnce) Run(ctx context.Context, dir string, checks []validate.Check) []validate.Result {
	run := slices.Clone(checks)
	h.mu.Lock()
	if !h.done && !strings.Contains(filepath.Base(dir), "-baseline-") && len(run) > 0 && len(run[0].Only) == 0 && run[0].Name == "tests" {
		h.done = true
		// The hogged run hangs (120 s) past a short time-out; every other run has the check's
		// own generous one, so none times out by the machine's load alone.
		run[0].Env, run[0].Timeout = map[string]string{"TICKETD_TEST_HOG": "1"}, 5*time.Second
	}
	h.mu.Unlock()
	return h.inner.Run(ctx, dir, run)
}

func (h *hogOnce) Preflight(ctx context.Context, dir string, c validate.Check, seen *validate.Probed) error {
	return h.inner.Preflight(ctx, dir, c, seen)
}

// A suite that times out once under a hog is run again on its own and judged on that run:
// the fix ships in one submit, and the report says the check was slow, not the change's.
func TestTimeoutOnceUnderHog(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	root := t.TempDir()
	kv := kvstoreRepo(t, root)
	write(t, filepath.Join(kv.path, "conftest.py"), "import os\nimport time\n\nif os.environ.get(\"TICKETD_TEST_HOG\"):\n    time.sleep(120)\n")
	git(t, kv.path, "add", "-A")
	git(t, kv.path, "commit", "-qm", "conftest")
	kv.checks = "[{name: tests, kind: pytest, timeout: 2m}]"
	cfg := realConfig(t, root, scriptedServer(t, []scriptedmodel.Case{{Match: kv.title, Patch: kv.patch}}), kv)
	st, err := OpenStore(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	checks := &hogOnce{inner: checkRunner(cfg, "", slog.New(slog.NewTextHandler(io.Discard, nil)))}
	d := &Daemon{Config: cfg, Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Checks: checks}
	if _, err := d.RunNight(context.Background(), "test"); err != nil {
		t.Fatal(err)
	}
	tk := ticketByRepo(t, st, kv.name)
	report, _ := os.ReadFile(filepath.Join(tk.ResultDir, "report.md"))
	all, ok := submits(t, st, tk.ID)
	if tk.State != store.StateDone || all != 1 || ok != 1 || !checks.done {
		t.Fatalf("ticket %s (%s) after %d submit(s), %d accepted (hog applied: %v); want done in one submit\n%s", tk.State, tk.Reason, all, ok, checks.done, report)
	}
	for _, want := range []string{"slow, not blamed on the change: tests timed out at first (load ", "the base commit's run took"} {
		if !strings.Contains(string(report), want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	if strings.Contains(string(report), "you caused") {
		t.Errorf("report blames the change:\n%s", report)
	}
}
