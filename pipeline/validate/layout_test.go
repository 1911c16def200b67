package validate

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// srcProject is a src/ layout that nothing puts on the path: no pytest configuration, no
// conftest.py, tests in tests/ without __init__.py, as `pip install -e .` projects are.
func srcProject() map[string]string {
	return map[string]string{
		"pyproject.toml":              "[project]\nname = \"tally\"\nversion = \"1.0\"\n\n[build-system]\nrequires = [\"setuptools\"]\nbuild-backend = \"setuptools.build_meta\"\n",
		"src/tally/__init__.py":       "from .core import total\n",
		"src/tally/core.py":           "def total(xs):\n    return sum(xs)\n",
		"src/tally.egg-info/PKG-INFO": "Name: tally\n",
		"tests/test_core.py":          "from tally import total\n\n\ndef test_total():\n    assert total([1, 2]) == 3\n",
	}
}

func TestSrcLayout(t *testing.T) {
	with := func(extra map[string]string) map[string]string {
		files := srcProject()
		for k, v := range extra {
			files[k] = v
		}
		return files
	}
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"src package the tests import, nothing configured", srcProject(), []string{"tally"}},
		{"a src module", map[string]string{"src/tally.py": "x = 1\n", "test_tally.py": "import tally\n"}, []string{"tally"}},
		{"pytest pythonpath in pyproject.toml", with(map[string]string{"pyproject.toml": "[tool.pytest.ini_options]\npythonpath = [\"src\"]\n"}), nil},
		{"pytest pythonpath in tox.ini", with(map[string]string{"tox.ini": "[pytest]\npythonpath = src\n"}), nil},
		{"pytest pythonpath in setup.cfg", with(map[string]string{"setup.cfg": "[tool:pytest]\npythonpath = src\n"}), nil},
		{"a conftest.py that edits sys.path", with(map[string]string{"conftest.py": "import sys\nsys.path.insert(0, 'src')\n"}), nil},
		{"a conftest.py that does not", with(map[string]string{"tests/conftest.py": "import pytest\n"}), []string{"tally"}},
		{"tests import something else", map[string]string{"src/tally/__init__.py": "", "tests/test_x.py": "import os\n"}, nil},
		{"no src folder", map[string]string{"tally/__init__.py": "", "tests/test_x.py": "import tally\n"}, nil},
		{"tests inside the package", map[string]string{"src/tally/__init__.py": "", "src/tally/tests/test_x.py": "from tally import x\n"}, []string{"tally"}},
		{"imported only by tests/__init__.py (tomli)", map[string]string{"src/tomli/__init__.py": "", "tests/__init__.py": "import tomli as tomllib\n", "tests/test_x.py": "from . import tomllib\n"}, []string{"tomli"}},
		{"a tests.py that pytest's settings name", map[string]string{"src/tally/__init__.py": "", "setup.cfg": "[tool:pytest]\npython_files = tests.py\n", "tests.py": "import tally\n"}, []string{"tally"}},
		{"setup.py package_dir names lib/ (PyYAML)", map[string]string{"setup.py": "setup(\n    package_dir={'': 'lib'},\n)\n", "lib/tally/__init__.py": "", "tests/test_x.py": "import tally\n"}, []string{"tally"}},
		{"setup.cfg package_dir on its own line", map[string]string{"setup.cfg": "[metadata]\nname = tally\n\n[options]\npackage_dir =\n    =lib\n", "lib/tally/__init__.py": "", "tests/test_x.py": "import tally\n"}, []string{"tally"}},
		{"pyproject package-dir table", map[string]string{"pyproject.toml": "[tool.setuptools.package-dir]\n\"\" = \"python\"\n", "python/tally.py": "", "test_x.py": "import tally\n"}, []string{"tally"}},
		{"pyproject inline package-dir", map[string]string{"pyproject.toml": "[tool.setuptools]\npackage-dir = {\"\" = \"lib\"}\n", "lib/tally/__init__.py": "", "tests/test_x.py": "import tally\n"}, []string{"tally"}},
		{"pyproject packages.find where", map[string]string{"pyproject.toml": "[tool.setuptools.packages.find]\nwhere = [\"lib\"]\n", "lib/tally/__init__.py": "", "tests/test_x.py": "import tally\n"}, []string{"tally"}},
		{"a declared folder that does not exist", map[string]string{"setup.py": "setup(package_dir={'': 'lib'})\n", "src/tally/__init__.py": "", "tests/test_x.py": "import tally\n"}, []string{"tally"}},
		{"package_dir of the root itself", map[string]string{"setup.py": "setup(package_dir={'': '.'})\n", "tally/__init__.py": "", "tests/test_x.py": "import tally\n"}, nil},
		{"lib/ that nothing declares", map[string]string{"lib/tally/__init__.py": "", "tests/test_x.py": "import tally\n"}, nil},
		{"a namespace package under src/ (zope.*)", map[string]string{"src/zope/deprecation/__init__.py": "", "src/zope/deprecation/tests.py": "from zope.deprecation import x\n"}, []string{"zope"}},
		{"a package's __init__.py is not a test's", map[string]string{"src/tally/__init__.py": "", "app/__init__.py": "import tally\n"}, nil},
	}
	for _, tt := range tests {
		got := SrcLayout(writeTree(t, tt.files))
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: SrcLayout = %v; want %v", tt.name, got, tt.want)
		}
	}
}

// A src/ layout without configuration runs with src on PYTHONPATH (and says so in the
// result's notes); the check's env can override it, and then the tests cannot import the
// package: the negative control.
func TestRunSrcLayout(t *testing.T) {
	requirePytest(t)
	dir := writeTree(t, srcProject())
	r := &Runner{Sandbox: testSandbox(t)}
	tests := []struct {
		name     string
		check    Check
		passed   bool
		noteWant bool
	}{
		{"automatic", Check{Name: "tests", Kind: KindPytest, Timeout: time.Minute}, true, true},
		{"env overrides it", Check{Name: "tests", Kind: KindPytest, Timeout: time.Minute, Env: map[string]string{"PYTHONPATH": ""}}, false, false},
		{"env names it", Check{Name: "tests", Kind: KindPytest, Timeout: time.Minute, Env: map[string]string{"PYTHONPATH": filepath.Join(dir, "src")}}, true, false},
		{"a python verification too", Check{Name: "verify", Kind: KindPython, Command: []string{"-c", "from tally import total; assert total([2]) == 2"}, Timeout: time.Minute}, true, true},
	}
	for _, tt := range tests {
		res := r.Run(context.Background(), dir, []Check{tt.check})[0]
		if res.Passed != tt.passed {
			t.Errorf("%s: passed %v (%s), want %v\n%s", tt.name, res.Passed, res.Summary, tt.passed, res.Output)
		}
		hasNote := len(res.Notes) == 1 && strings.Contains(res.Notes[0], "src/ put on PYTHONPATH") && strings.Contains(res.Notes[0], "tally")
		if hasNote != tt.noteWant {
			t.Errorf("%s: notes %q; want the src/ note: %v", tt.name, res.Notes, tt.noteWant)
		}
	}
}

func TestBaselineTimeouts(t *testing.T) {
	checks := []Check{
		{Name: "slow", Kind: KindPytest},
		{Name: "quick", Kind: KindPytest},
		{Name: "set", Kind: KindPytest, Timeout: 30 * time.Second},
		{Name: "hung", Kind: KindPytest},
		{Name: "unseen", Kind: KindRuff},
	}
	baseline := []Result{
		{Name: "slow", Duration: 90 * time.Second},
		{Name: "quick", Duration: 2 * time.Second},
		{Name: "set", Duration: 20 * time.Second},
		{Name: "hung", Duration: 10 * time.Minute, TimedOut: true},
	}
	want := map[string]time.Duration{"slow": 270 * time.Second, "quick": MinDerivedTimeout, "set": 30 * time.Second, "hung": 0, "unseen": 0}
	for _, c := range BaselineTimeouts(checks, baseline) {
		if c.Timeout != want[c.Name] {
			t.Errorf("%s: timeout %s; want %s", c.Name, c.Timeout, want[c.Name])
		}
		if derived := c.TimeoutNote != ""; derived != (c.Name == "slow" || c.Name == "quick") {
			t.Errorf("%s: note %q", c.Name, c.TimeoutNote)
		}
	}
	if got := BaselineTimeouts(checks, baseline)[0].TimeoutNote; !strings.Contains(got, "1m30s") || !strings.Contains(got, "3×") {
		t.Errorf("note %q; want it to name the baseline's 1m30s and the factor", got)
	}
	if checks[0].Timeout != 0 {
		t.Error("BaselineTimeouts changed its input")
	}
}

// A time-out derived from the baseline says so in the result's summary.
func TestDerivedTimeoutNamed(t *testing.T) {
	dir := t.TempDir()
	r := &Runner{Sandbox: testSandbox(t)}
	c := BaselineTimeouts([]Check{{Name: "sleepy", Kind: KindCommand, Command: []string{"sleep", "30"}}},
		[]Result{{Name: "sleepy", Duration: time.Second}})[0]
	c.Timeout = 200 * time.Millisecond // what a 3× rule gives a 67 ms baseline, without the floor
	res := r.Run(context.Background(), dir, []Check{c})[0]
	if !res.TimedOut || !strings.Contains(res.Summary, "derived from the base commit's run of 1s") {
		t.Errorf("summary %q (timed out %v); want the derivation named", res.Summary, res.TimedOut)
	}
}

func TestCheckEnvValidate(t *testing.T) {
	ok := Check{Name: "t", Kind: KindPytest, Env: map[string]string{"PYTHONPATH": "src", "APP_MODE": "test"}}
	if err := ok.Validate(); err != nil {
		t.Errorf("Validate(%+v) = %v", ok, err)
	}
	bad := Check{Name: "t", Kind: KindPytest, Env: map[string]string{"1X": "y"}}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), `env: "1X"`) {
		t.Errorf("Validate(%+v) = %v; want the bad name named", bad, err)
	}
}

// A package folder named by setup.py's package_dir (PyYAML's lib/) goes on the path ahead of
// an installed distribution of the same name, which would otherwise import silently and be
// what every check tests. The "installed" copy here is a folder on the PYTHONPATH the
// daemon's environment passes on.
func TestRunPackageDirAheadOfInstalledCopy(t *testing.T) {
	requirePytest(t)
	dir := writeTree(t, map[string]string{
		"setup.py":                     "from setuptools import setup\nsetup(name='tally', package_dir={'': 'lib'}, packages=['tally'])\n",
		"lib/tally/__init__.py":        "WHERE = 'worktree'\n",
		".installed/tally/__init__.py": "WHERE = 'installed'\n",
		"tests/test_where.py":          "import tally\n\n\ndef test_where():\n    assert tally.WHERE == 'worktree'\n",
	})
	t.Setenv("PYTHONPATH", filepath.Join(dir, ".installed"))
	r := &Runner{Sandbox: testSandbox(t)}
	res := r.Run(context.Background(), dir, []Check{{Name: "tests", Kind: KindPytest, Timeout: time.Minute}})[0]
	if !res.Passed {
		t.Errorf("passed false (%s); want the worktree's lib/tally imported\n%s", res.Summary, res.Output)
	}
	if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "lib/ put on PYTHONPATH") || !strings.Contains(res.Notes[0], "package_dir") {
		t.Errorf("notes %q; want the lib/ note naming package_dir", res.Notes)
	}
}

// A check run in a repository's environment gets the package folder ahead of the editable
// install the environment holds, even when the repository's own configuration puts it on the
// path (the environment's path hooks would come first): lib/ when package_dir names it.
func TestPathFoldersInEnvironment(t *testing.T) {
	for _, tt := range []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"src/", map[string]string{"conftest.py": "import sys\nsys.path.insert(0, 'src')\n", "src/tally/__init__.py": ""}, []string{"src"}},
		{"lib/ by package_dir", map[string]string{"conftest.py": "import sys\nsys.path.insert(0, 'lib')\n", "setup.py": "setup(package_dir={'': 'lib'})\n", "lib/tally/__init__.py": ""}, []string{"lib"}},
		{"no package folder", map[string]string{"tally/__init__.py": ""}, nil},
	} {
		folders, _ := pathFolders(writeTree(t, tt.files), Check{Name: "tests", Kind: KindPytest, EnvDir: "/envs/tally"})
		if !slices.Equal(folders, tt.want) {
			t.Errorf("%s: pathFolders = %v; want %v", tt.name, folders, tt.want)
		}
	}
}
