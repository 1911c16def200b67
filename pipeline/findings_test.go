package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/pipeline/discover"
	"github.com/ticketd/ticketd/pipeline/validate"
)

// Added suppressions are found with their file and line; a moved line is not added, and an
// issue that names the suppression asks for it.
func TestAddedSuppressions(t *testing.T) {
	diff := `diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,4 +1,5 @@
-import os  # noqa: F401
+import os  # noqa: F401
+import sys  # noqa
 def add(a, b):
-    return a - b
+    return a + b  # type: ignore[operator]
diff --git a/tests/test_calc.py b/tests/test_calc.py
new file mode 100644
--- /dev/null
+++ b/tests/test_calc.py
@@ -0,0 +1,12 @@
+import unittest
+import pytest
+
+
+@pytest.mark.skip(reason="later")
+def test_a():
+    pass
+
+
+class T(unittest.TestCase):
+    @unittest.expectedFailure
+    def test_b(self): self.skipTest("x")
diff --git a/lib.py b/lib.py
--- a/lib.py
+++ b/lib.py
@@ -1,1 +1,6 @@
+# mypy: disable-error-code="return-value"
+# flake8: noqa
+x = 1  # NOQA: E501
+from pytest import mark
+@mark.xfail
 def f(): pass
diff --git a/setup.cfg b/setup.cfg
--- a/setup.cfg
+++ b/setup.cfg
@@ -1,1 +1,2 @@
 [flake8]
+per-file-ignores = tests/*:E501
`
	got := addedSuppressions(diff, "add is wrong")
	want := []string{
		"calc.py:2: adds a # noqa",
		"calc.py:4: adds a # type: ignore",
		"tests/test_calc.py:5: adds a skip marker",
		"tests/test_calc.py:11: adds an expected-failure marker",
		"tests/test_calc.py:12: adds a skip marker",
		"lib.py:1: adds a # type: ignore",
		"lib.py:2: adds a # noqa",
		"lib.py:3: adds a # noqa",
		"lib.py:5: adds an expected-failure marker",
		"setup.cfg:2: adds per-file ignores",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d findings:\n%s\nwant %d", len(got), strings.Join(got, "\n"), len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("finding %d = %q, want it to start %q", i, got[i], w)
		}
	}
	asked := addedSuppressions(diff, "Please mark the flaky test with skip; keep the noqa and the type: ignore (mypy: disable-error-code), and the xfail. per-file ignores too.")
	if len(asked) != 0 {
		t.Errorf("the issue asked for them, yet: %q", asked)
	}
	if paths := slices.Collect(func(yield func(string) bool) {
		for _, fd := range splitDiff(diff) {
			if !yield(fd.path) {
				return
			}
		}
	}); !slices.Equal(paths, []string{"calc.py", "tests/test_calc.py", "lib.py", "setup.cfg"}) {
		t.Errorf("splitDiff paths %q", paths)
	}
}

// A change to what configures or feeds the checks is named, whatever file holds it: pytest's
// own files of pytest 9, and the ignore files Ruff obeys.
func TestFindingsNameCheckConfiguration(t *testing.T) {
	job := Job{Ticket: Ticket{Title: "add is wrong"}, Tests: discover.Default()}
	changed := []string{"calc.py", "pytest.toml", "sub/.pytest.toml", ".gitignore", "pkg/.ignore", "docs/ignore.md"}
	got := submitFindings(context.Background(), job, newTestTree(job), "", changed)
	want := []string{
		"pytest.toml: changes the test configuration",
		"sub/.pytest.toml: changes the test configuration",
		".gitignore: changes which files the checks see",
		"pkg/.ignore: changes which files the checks see",
	}
	if len(got) != len(want) {
		t.Fatalf("findings for %q:\n%s\nwant %d", changed, strings.Join(got, "\n"), len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("finding %d = %q, want it to start %q", i, got[i], w)
		}
	}
}

// A module named like a check's tool is named wherever a folder on a check's import path
// could hold it: in any folder that is not a package, unless the operator allowed it.
func TestShadowFindings(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"pkg", "lib", "lib/_pytest"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "pkg", "__init__.py"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	job := Job{Dir: dir, AllowPaths: []string{"vendor/pluggy.py"}, Checks: []validate.Check{{Name: "tests", PythonPath: []string{"lib"}}},
		BaseFile: func(_ context.Context, p string) ([]byte, bool, error) { return nil, p == "lib/queue.py", nil }}
	changed := []string{"lib/pytest.py", "lib/_pytest/runner.py", "a/b/sitecustomize.py", "pkg/pytest.py",
		"lib/pytest.txt", "vendor/pluggy.py", "lib/calc.py", "pytest.py", "lib/typing.py", "lib/json/__init__.py",
		"lib/queue.py", "scripts/typing.py", "lib/pkg/typing.py"}
	got := shadowFindings(context.Background(), job, changed)
	want := []string{"lib/pytest.py: a module named like the check tool \"pytest\" in lib/",
		"lib/_pytest/runner.py: a module named like the check tool \"_pytest\" in lib/",
		"a/b/sitecustomize.py: a module named like the check tool \"sitecustomize\" in a/b/",
		"lib/typing.py: a module named like \"typing\", which Python and the checks' tools import, in lib/",
		"lib/json/__init__.py: a module named like \"json\", which Python and the checks' tools import, in lib/"}
	if len(got) != len(want) {
		t.Fatalf("findings for %q:\n%s\nwant %d", changed, strings.Join(got, "\n"), len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("finding %d = %q, want it to start %q", i, got[i], w)
		}
	}
}

// A new Python file in a folder Ruff skips by default is named where a ruff check would miss
// it; not without a ruff check, not where the base already keeps files in that folder (the
// project's vendored code, edited or added to), not where the operator allowed it, and not
// for a file that is not Python.
func TestLintSkippedFindings(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"dist/helpers.py", "src/pkg/.venv/x.py", "Build/y.py", "_build/vendored.py", "_build/new.py", "node_modules/ok.py", "dist/notes.txt", "pkg/calc.py"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	changed := []string{"dist/helpers.py", "src/pkg/.venv/x.py", "Build/y.py", "_build/vendored.py", "_build/new.py", "node_modules/ok.py", "dist/notes.txt", "pkg/calc.py"}
	job := Job{Dir: dir, AllowPaths: []string{"node_modules/ok.py"},
		Checks: []validate.Check{{Name: "tests", Kind: validate.KindPytest}, {Name: "lint", Kind: validate.KindRuff}},
		BaseFile: func(_ context.Context, p string) ([]byte, bool, error) {
			return nil, p == "_build/vendored.py" || p == "pkg/calc.py", nil
		}}
	got := lintSkippedFindings(context.Background(), job, changed)
	want := []string{"dist/helpers.py: a new Python file in dist/", "src/pkg/.venv/x.py: a new Python file in src/pkg/.venv/", "Build/y.py: a new Python file in Build/"}
	if len(got) != len(want) {
		t.Fatalf("findings for %q:\n%s\nwant %q", changed, strings.Join(got, "\n"), want)
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("finding %d = %q, want it to start %q", i, got[i], w)
		}
	}
	job.Checks = job.Checks[:1]
	if got := lintSkippedFindings(context.Background(), job, changed); len(got) != 0 {
		t.Errorf("without a ruff check: %q, want none", got)
	}
}

// What the refusal says the issue can allow is what submitFindings lets an issue allow: a
// suppression, never a change to the test configuration.
func TestFindingsRefusalSaysWhatTheIssueAllows(t *testing.T) {
	job := Job{Ticket: Ticket{Title: "skip the slow test", Body: "Please skip it, and fix conftest.py too."}}
	diff := "diff --git a/test_a.py b/test_a.py\n--- a/test_a.py\n+++ b/test_a.py\n@@ -1,1 +1,2 @@\n+@pytest.mark.skip\n def test_a():\n"
	got := submitFindings(context.Background(), job, newTestTree(job), diff, []string{"test_a.py", "conftest.py"})
	if len(got) != 1 || !strings.HasPrefix(got[0], "conftest.py: changes the test configuration") {
		t.Fatalf("findings %q: want only conftest.py's, the skip being asked for", got)
	}
	if strings.Contains(refusedFindings, "may not do unless the issue asks") {
		t.Errorf("the refusal says an issue can allow any of it: %q", refusedFindings)
	}
}

// Code under test that reaches into pytest is found where the tests cannot see it coming:
// in the code, not in a test or a conftest, not in a module that was already the project's
// pytest integration, and not where the issue is about that integration.
func TestRunnerReaches(t *testing.T) {
	base := map[string]string{"calc.py": "def add(a, b):\n    return a - b\n", "plugin.py": "import pytest\n"}
	hostBase := map[string]string{"calc.py": base["calc.py"], "pyproject.toml": "[project]\nname = \"host\"\ndependencies = [\n  \"pluggy>=1.5\",\n  \"click\",\n]\n"}
	treeOf := func(base map[string]string) *testTree {
		job := Job{BaseFile: func(_ context.Context, p string) ([]byte, bool, error) {
			b, ok := base[p]
			return []byte(b), ok, nil
		}}
		job.Tests = discover.Default()
		return newTestTree(job)
	}
	tree, host := treeOf(base), treeOf(hostBase)
	added := func(path string, lines ...string) string {
		return "diff --git a/" + path + " b/" + path + "\n--- a/" + path + "\n+++ b/" + path + "\n@@ -1,1 +1," + fmt.Sprint(len(lines)+1) + " @@\n def add(a, b):\n+" + strings.Join(lines, "\n+") + "\n"
	}
	tests := []struct {
		name, diff, issue string
		tree              *testTree // nil: tree
		want              []string  // prefixes
	}{
		{"pluggy in a project that does not use it", added("calc.py", "import pluggy"), "add is wrong", nil, []string{"calc.py:2: "}},
		{"pluggy in a project built on it", added("hooks.py", "import pluggy", `hookspec = pluggy.HookspecMarker("host")`), "add is wrong", host, nil},
		{"the runner's internals in a project built on pluggy", added("hooks.py", "import pluggy, _pytest.reports"), "add is wrong", host, []string{"hooks.py:2: "}},
		{"internals", added("calc.py", "import _pytest.reports as _r", "x = 1"), "add is wrong", nil, []string{"calc.py:2: adds code that reaches into the test runner"}},
		{"a hook", added("calc.py", "def pytest_runtest_makereport(item, call):"), "add is wrong", nil, []string{"calc.py:2: "}},
		{"under pytest or not", added("calc.py", `if "pytest" in sys.modules:`, `if os.environ.get("PYTEST_CURRENT_TEST"):`), "add is wrong", nil, []string{"calc.py:2: ", "calc.py:3: "}},
		{"the report", added("calc.py", `p = [a for a in sys.argv if a.startswith("--junitxml=")]`), "add is wrong", nil, []string{"calc.py:2: "}},
		{"unittest's assertions", added("calc.py", "unittest.TestCase.assertEqual = lambda *a, **k: None", "TestCase.run = run", `setattr(TestCase, "fail", f)`), "add is wrong", nil, []string{"calc.py:2: ", "calc.py:3: ", "calc.py:4: "}},
		{"a comparison", added("calc.py", "if TestCase.maxDiff == 3:"), "add is wrong", nil, nil},
		{"plain code", added("calc.py", "return a + b  # pytest finds this"), "add is wrong", nil, nil},
		{"a test module", added("test_calc.py", "from _pytest.monkeypatch import MonkeyPatch"), "add is wrong", nil, nil},
		{"a conftest", added("conftest.py", "def pytest_configure(config):"), "add is wrong", nil, nil},
		{"the project's pytest plugin", added("plugin.py", "def pytest_configure(config):", "    config.addinivalue_line(\"markers\", \"slow\")"), "add is wrong", nil, nil},
		{"the project's pytest plugin rewriting reports", added("plugin.py", "@pytest.hookimpl(hookwrapper=True)", "def pytest_runtest_makereport(item, call):", "    rep.outcome = \"passed\"", "    session.exitstatus = 0", "def pytest_collection_modifyitems(items):"),
			"add is wrong", nil, []string{"plugin.py:2: ", "plugin.py:3: ", "plugin.py:4: ", "plugin.py:5: ", "plugin.py:6: "}},
		{"an issue about the plugin's reports", added("plugin.py", "def pytest_runtest_makereport(item, call):"), "the pytest hook pytest_runtest_makereport drops the duration", nil, nil},
		{"an issue about the plugin", added("calc.py", "import pluggy"), "the pytest plugin crashes", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := tt.tree
			if tr == nil {
				tr = tree
			}
			got := runnerReaches(context.Background(), tr, tt.diff, tt.issue)
			if len(got) != len(tt.want) {
				t.Fatalf("diff:\n%s\ngot %q, want %d finding(s) %q", tt.diff, got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("finding %d = %q, want it to start %q", i, got[i], w)
				}
			}
		})
	}
}

// Code under test that imports the tests' own modules, or plants one in sys.modules, could
// replace what a base test asserts with; code that writes bytecode could stand in for one.
// Both are found in the code, not in the tests, and not where the code has a module of that
// name itself, its base already handles bytecode, or the issue is about bytecode.
func TestTestAndBytecodeReaches(t *testing.T) {
	files := map[string]string{"calc.py": "def add(a, b):\n    return a - b\n", "mocked.py": "import mock\n", "tests/mock.py": "", "utils.py": "", "pkg/__init__.py": "", "pkg/helpers.py": "",
		"build.py": "import py_compile\n", "tests/__init__.py": "", "tests/helpers.py": "", "tests/utils.py": "", "tests/test_calc.py": ""}
	dir := t.TempDir()
	for p, c := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	job := Job{Dir: dir, Tests: discover.Default(), BaseFile: func(_ context.Context, p string) ([]byte, bool, error) {
		b, ok := files[p]
		return []byte(b), ok, nil
	}}
	tree := newTestTree(job)
	added := func(path string, lines ...string) string {
		return "diff --git a/" + path + " b/" + path + "\n--- a/" + path + "\n+++ b/" + path + "\n@@ -1,1 +1," + fmt.Sprint(len(lines)+1) + " @@\n def add(a, b):\n+" + strings.Join(lines, "\n+") + "\n"
	}
	tests := []struct {
		name, diff, issue string
		want              []string // prefixes
	}{
		{"a test helper imported", added("calc.py", "import helpers as _h", "from tests.helpers import check", "from helpers import check"), "add is wrong",
			[]string{"calc.py:2: adds code that reaches into the tests", "calc.py:3: ", "calc.py:4: "}},
		{"a test module in sys.modules", added("calc.py", `_s.modules["helpers"] = m`, `m = types.ModuleType("test_calc")`, `importlib.import_module("tests.helpers")`, `sys.modules.get("tests.utils")`), "add is wrong",
			[]string{"calc.py:2: ", "calc.py:3: ", "calc.py:4: ", "calc.py:5: "}},
		{"the code's own modules", added("calc.py", "import utils", "from pkg import helpers", "from . import helpers", "import os, sys", `sys.modules["calc"] = x`), "add is wrong", nil},
		{"a test importing a helper", added("tests/test_calc.py", "from helpers import check"), "add is wrong", nil},
		{"a dependency the base imports, named like a test helper", added("mocked.py", "from mock import patch"), "add is wrong", nil},
		{"that name in another file", added("calc.py", "from mock import patch"), "add is wrong", []string{"calc.py:2: "}},
		{"bytecode written", added("calc.py", "_pyc = importlib.util.cache_from_source(src)", `sys.pycache_prefix = "/tmp"`, "marshal.dump(code, f)", `open("x.pyc", "wb")`), "add is wrong",
			[]string{"calc.py:2: adds code that writes Python bytecode", "calc.py:3: ", "calc.py:4: ", "calc.py:5: "}},
		{"bytecode in a file that handles it at the base", added("build.py", "py_compile.compile(src, cfile=src + 'c')", `out = src + ".pyc"`), "add is wrong", nil},
		{"an issue about bytecode", added("calc.py", "import compileall"), "compileall is not run on install", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := append(testReaches(context.Background(), tree, tt.diff), bytecodeReaches(context.Background(), tree, tt.diff, tt.issue)...)
			if len(got) != len(tt.want) {
				t.Fatalf("diff:\n%s\ngot %q, want %d finding(s) %q", tt.diff, got, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("finding %d = %q, want it to start %q", i, got[i], w)
				}
			}
		})
	}
}
