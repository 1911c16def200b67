package discover

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/scripts/testenv"
)

func reader(files map[string]string) Reader {
	return func(p string) ([]byte, bool) {
		s, ok := files[p]
		return []byte(s), ok
	}
}

func TestIsTestFile(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		opts  Options
		yes   []string
		no    []string
	}{
		{"pytest defaults", nil, Options{},
			[]string{"tests/test_x.py", "x_test.py", "pkg/test_a.py"},
			[]string{"tests.py", "test.py", "tests/helpers.py", "conftest.py", "tests/__init__.py", "docs/x.md"}},
		{"python_files in setup.cfg", map[string]string{"setup.cfg": "[metadata]\nname = x\n\n[tool:pytest]\npython_files = tests.py test_*.py\n"}, Options{},
			[]string{"tests.py", "app/tests.py", "test_a.py"},
			[]string{"a_test.py", "test.py"}},
		{"python_files over lines in tox.ini", map[string]string{"tox.ini": "[tox]\nenvlist = py3\n\n[pytest]\npython_files =\n    tests.py\n    check_*.py\n"}, Options{},
			[]string{"tests.py", "check_a.py"},
			[]string{"test_a.py"}},
		{"pyproject array", map[string]string{"pyproject.toml": "[project]\nname = \"x\"\n\n[tool.pytest.ini_options]\npython_files = [\n  \"test_*.py\",  # the usual\n  \"tests.py\",\n]\ntestpaths = [\"src\"]\n"}, Options{},
			[]string{"src/pkg/tests.py", "src/test_a.py", "elsewhere/tests.py"},
			[]string{"src/pkg/mod.py"}},
		{"a broad pattern counts only in testpaths", map[string]string{"pytest.ini": "[pytest]\npython_files = *.py\ntestpaths = tests\n"}, Options{},
			[]string{"tests/helpers_x.py"},
			[]string{"pkg/mod.py"}},
		{"pytest.ini wins over pyproject", map[string]string{"pytest.ini": "", "pyproject.toml": "[tool.pytest.ini_options]\npython_files = \"tests.py\"\n"}, Options{},
			[]string{"test_a.py"},
			[]string{"tests.py"}},
		{"pytest 9's pytest.toml wins over pytest.ini", map[string]string{"pytest.toml": "[pytest]\npython_files = [\"check_*.py\"]\ntestpaths = [\"checks\"]\n", "pytest.ini": "[pytest]\npython_files = test_*.py\n"}, Options{},
			[]string{"checks/check_a.py"},
			[]string{"test_a.py", "checks/test_a.py"}},
		{"an empty .pytest.toml is the configuration", map[string]string{".pytest.toml": "", "setup.cfg": "[tool:pytest]\npython_files = tests.py\n"}, Options{},
			[]string{"test_a.py"},
			[]string{"tests.py"}},
		{"override on the command", nil, Options{Pytest: [][]string{{"python3", "-m", "pytest", "-o", "python_files=check_*.py"}}},
			[]string{"check_x.py"},
			[]string{"test_x.py"}},
		{"unittest default pattern", nil, Options{Unittest: [][]string{nil}},
			[]string{"test.py", "tests.py", "test_x.py", "pkg/testing.py"},
			[]string{"x_test.py", "helpers.py"}},
		{"unittest pattern and start", nil, Options{Unittest: [][]string{{"python3", "-m", "unittest", "discover", "-s", "tests", "-p", "*_spec.py"}}},
			[]string{"tests/a_spec.py"},
			[]string{"a_spec.py", "tests/test_a.py"}},
		{"unittest naming a module", nil, Options{Unittest: [][]string{{"python3", "-m", "unittest", "tests"}}},
			[]string{"tests.py"},
			[]string{"other.py"}},
		{"a tests/pytest.ini that the command's folder leads pytest to", map[string]string{"tests/pytest.ini": "[pytest]\npython_files = check_*.py\n"},
			Options{Pytest: [][]string{{"python3", "-m", "pytest", "-q", "tests/unit", "tests/check_b.py::test_b"}}},
			[]string{"tests/unit/check_a.py"},
			[]string{"tests/unit/test_a.py"}},
		{"a tests/pytest.ini the command's folder leads pytest to wins over the root's", map[string]string{"tests/pytest.ini": "[pytest]\npython_files = check_*.py\n", "tox.ini": "[pytest]\npython_files = spec_*.py\n"},
			Options{Pytest: [][]string{{"python3", "-m", "pytest", "tests"}}},
			[]string{"tests/check_a.py"},
			[]string{"tests/spec_a.py"}},
		{"a tests/pytest.ini that a bare pytest never reads", map[string]string{"tests/pytest.ini": "[pytest]\npython_files = check_*.py\n"}, Options{Pytest: [][]string{nil}},
			[]string{"tests/test_a.py"},
			[]string{"tests/check_a.py"}},
		{"doctest glob in addopts", map[string]string{"tox.ini": "[pytest]\naddopts = --doctest-glob='*.md' -q\n"}, Options{},
			[]string{"README.md", "docs/usage.md"},
			[]string{"docs/usage.rst", "test_usage.txt"}},
		{"doctest text files by default", nil, Options{},
			[]string{"test_usage.txt", "docs/testing.txt"},
			[]string{"notes.txt", "docs/usage.rst", "latest.txt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Read(reader(tt.files), tt.opts)
			for _, p := range tt.yes {
				if !d.IsTestFile(p) {
					t.Errorf("IsTestFile(%q) = false, want true (%s)", p, d.Describe())
				}
			}
			for _, p := range tt.no {
				if d.IsTestFile(p) {
					t.Errorf("IsTestFile(%q) = true, want false (%s)", p, d.Describe())
				}
			}
		})
	}
}

func TestIsTestPath(t *testing.T) {
	d := Read(reader(map[string]string{"setup.cfg": "[tool:pytest]\ntestpaths = checks\n"}), Options{Pytest: [][]string{nil}, Unittest: [][]string{{"py", "-m", "unittest", "discover", "-s", "spec"}}})
	for p, want := range map[string]bool{
		"checks/helpers.py":    true,
		"spec/fixtures.py":     true,
		"tests/__init__.py":    true,
		"pkg/testing/x.py":     true,
		"conftest.py":          true,
		"pkg/mod.py":           false,
		"pkg/__init__.py":      false,
		"checkers/x.py":        false,
		"src/pkg/tests/foo.py": true,
	} {
		if got := d.IsTestPath(p); got != want {
			t.Errorf("IsTestPath(%q) = %v, want %v", p, got, want)
		}
	}
	if !d.IsTestPackageInit("tests/__init__.py") || d.IsTestPackageInit("pkg/__init__.py") {
		t.Error("IsTestPackageInit: tests/__init__.py is a test package's, pkg/__init__.py is not")
	}
}

// TestIsTestPathCodeFolders: a testpath or a folder a check's command names is often the
// project's own package (toolz: testpaths = ["toolz"]; sortedcontainers: testpaths = docs
// src/sortedcontainers tests with --doctest-modules; boltons' tox: pytest --doctest-modules
// boltons tests). Its modules are the code under test, not tests: the evidence step must set
// them back to the base, and the test view must keep the change's version.
func TestIsTestPathCodeFolders(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		o     Options
		want  map[string]bool
	}{
		{"toolz: the package is the testpath",
			map[string]string{"pyproject.toml": "[tool.pytest.ini_options]\ntestpaths = [\"toolz\"]\n", "toolz/__init__.py": ""},
			Options{Pytest: [][]string{nil}},
			map[string]bool{"toolz/dicttoolz.py": false, "toolz/curried/__init__.py": false, "toolz/__init__.py": false,
				"toolz/tests/test_dicttoolz.py": true, "toolz/tests/helpers.py": true, "toolz/test_inline.py": true}},
		{"sortedcontainers: src package, docs and tests as testpaths",
			map[string]string{"tox.ini": "[pytest]\naddopts=\n    --doctest-modules\n    --doctest-glob \"*.rst\"\ntestpaths=docs src/sortedcontainers tests\n",
				"src/sortedcontainers/__init__.py": ""},
			Options{Pytest: [][]string{nil}},
			map[string]bool{"src/sortedcontainers/sortedlist.py": false, "docs/conf.py": true, "docs/intro.rst": true,
				"tests/sortedcollection.py": true, "tests/test_coverage_sortedlist.py": true}},
		{"boltons: the check's command names the package",
			map[string]string{"boltons/__init__.py": ""},
			Options{Pytest: [][]string{{"python3", "-m", "pytest", "--doctest-modules", "boltons", "tests"}}},
			map[string]bool{"boltons/strutils.py": false, "tests/conftest.py": true, "tests/jsonl_test_data.txt": true}},
		{"a src folder as testpath",
			map[string]string{"pytest.ini": "[pytest]\ntestpaths = src tests\naddopts = --doctest-modules\n"},
			Options{Pytest: [][]string{nil}},
			map[string]bool{"src/pkg/mod.py": false, "src/pkg/tests/test_mod.py": true, "tests/helpers.py": true}},
		{"unittest naming the package",
			map[string]string{"toolz/__init__.py": ""},
			Options{Unittest: [][]string{{"python3", "-m", "unittest", "toolz"}}},
			map[string]bool{"toolz/dicttoolz.py": false, "toolz/tests/test_x.py": true}},
		{"folders of tests stay tests",
			map[string]string{"setup.cfg": "[tool:pytest]\ntestpaths = checks integration_tests\n", "integration_tests/__init__.py": ""},
			Options{Pytest: [][]string{nil}},
			map[string]bool{"checks/helpers.py": true, "integration_tests/helpers.py": true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Read(reader(tt.files), tt.o)
			for p, want := range tt.want {
				if got := d.IsTestPath(p); got != want {
					t.Errorf("IsTestPath(%q) = %v, want %v (paths %q, code folders %q)", p, got, want, d.Paths, d.CodeFolders)
				}
			}
		})
	}
}

func TestTestIDs(t *testing.T) {
	src := `import unittest


def test_top():
    pass


def helper():
    pass


class TestThing:
    def test_a(self):
        def test_nested():
            pass

    def check_b(self):
        pass


class Helper:
    def test_not_collected(self):
        pass


class ParseCase(unittest.TestCase):
    def test_parse(self):
        pass

    def check_parse(self):
        pass
`
	tests := []struct {
		name  string
		files map[string]string
		opts  Options
		want  []string
	}{
		{"pytest defaults", nil, Options{}, []string{"t.py::test_top", "t.py::TestThing::test_a", "t.py::ParseCase::test_parse"}},
		{"python_functions check", map[string]string{"pytest.ini": "[pytest]\npython_functions = check_* test_*\n"}, Options{},
			[]string{"t.py::test_top", "t.py::TestThing::test_a", "t.py::TestThing::check_b", "t.py::ParseCase::test_parse", "t.py::ParseCase::check_parse"}},
		{"unittest only", nil, Options{Unittest: [][]string{nil}}, []string{"t.py::TestThing::test_a", "t.py::ParseCase::test_parse"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Read(reader(tt.files), tt.opts).TestIDs("t.py", []byte(src))
			if !slices.Equal(got, tt.want) {
				t.Errorf("TestIDs:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestPathArgs(t *testing.T) {
	exists := func(p string) bool { return p == "pkg/test" || p == "docs" }
	tests := []struct {
		argv []string
		want []int
	}{
		{[]string{"python3", "-m", "pytest", "pkg/test"}, []int{3}},
		{[]string{"python3", "-m", "pytest", "-k", "pkg/test", "pkg/test", "-p", "no:cacheprovider", "docs"}, []int{5, 8}},
		{[]string{"pytest", "--rootdir", "pkg/test", "-q", "t/test_x.py::test_y", "--ignore=docs"}, []int{4}},
		{[]string{"tox", "-e", "py"}, nil},
		{[]string{"pytest", "--cov", "pkg", "-n", "auto", "docs"}, []int{5}},
		{[]string{"python3", "-m", "pytest", "-m", "not slow", "unknown-word"}, nil},
	}
	for _, tt := range tests {
		if got := PathArgs(tt.argv, exists); !slices.Equal(got, tt.want) {
			t.Errorf("PathArgs(%q) = %v, want %v", tt.argv, got, tt.want)
		}
	}
}

func TestAddoptsAndShellJoin(t *testing.T) {
	d := Read(reader(map[string]string{"pyproject.toml": "[tool.pytest.ini_options]\naddopts = \"--flake8 -m 'not slow' --doctest-modules\"\n"}), Options{})
	want := []string{"--flake8", "-m", "not slow", "--doctest-modules"}
	if !slices.Equal(d.Addopts, want) || !d.DoctestModules {
		t.Fatalf("Addopts = %q (doctest modules %v), want %q", d.Addopts, d.DoctestModules, want)
	}
	if back := shellSplit(ShellJoin(want)); !slices.Equal(back, want) {
		t.Errorf("shellSplit(ShellJoin(%q)) = %q", want, back)
	}
	if back := shellSplit(ShellJoin([]string{"it's", ""})); !slices.Equal(back, []string{"it's", ""}) {
		t.Errorf("quote round trip: %q", back)
	}
}

// addopts as a multi-line TOML string, one option a line, as pytest (tomllib) reads it.
func TestAddoptsMultilineTOML(t *testing.T) {
	for _, tt := range []struct {
		name, toml string
		want       []string
	}{
		{"basic", "addopts = \"\"\"\n    --strict-markers\n    -n auto\n    --doctest-modules\n\"\"\"\ntestpaths = [\"tests\"]\n",
			[]string{"--strict-markers", "-n", "auto", "--doctest-modules"}},
		{"literal, closing on the last option's line", "addopts = '''-ra\n  --doctest-modules -m \"not slow\"'''\ntestpaths = [\"tests\"]\n",
			[]string{"-ra", "--doctest-modules", "-m", "not slow"}},
		{"a line-ending backslash", "addopts = \"\"\"-ra \\\n    --doctest-modules\"\"\"\ntestpaths = [\"tests\"]\n",
			[]string{"-ra", "--doctest-modules"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := Read(reader(map[string]string{"pyproject.toml": "[project]\nname = \"calc\"\n\n[tool.pytest.ini_options]\n" + tt.toml}), Options{})
			if !slices.Equal(d.Addopts, tt.want) || !d.DoctestModules || !slices.Equal(d.Paths, []string{"tests"}) {
				t.Errorf("%s:\nAddopts = %q, doctest modules %v, testpaths %q\nwant %q, true, [tests]", tt.toml, d.Addopts, d.DoctestModules, d.Paths, tt.want)
			}
		})
	}
}

func TestFnmatch(t *testing.T) {
	for _, tt := range []struct {
		pat, name string
		want      bool
	}{
		{"test_*.py", "test_a.py", true},
		{"test_*.py", "xtest_a.py", false},
		{"test?.py", "test1.py", true},
		{"[!_]*.py", "_a.py", false},
		{"[!_]*.py", "a.py", true},
		{"tests/*.py", "x/tests/a.py", true}, // via fnmatchPath
		{"a[b", "a[b", true},
	} {
		for range 2 { // the second call answers from the compiled pattern kept by the first
			var got bool
			if tt.pat == "tests/*.py" {
				got = fnmatchPath(tt.pat, tt.name)
			} else {
				got = fnmatch(tt.pat, tt.name)
			}
			if got != tt.want {
				t.Errorf("fnmatch(%q, %q) = %v, want %v", tt.pat, tt.name, got, tt.want)
			}
		}
	}
}

// FuzzRead: no configuration text makes Read panic or hang, and what it reads is usable.
func FuzzRead(f *testing.F) {
	f.Add("[pytest]\npython_files = tests.py\n  check_*.py\naddopts = -p no:x --doctest-glob '*.md'\n", "[tool.pytest.ini_options]\ntestpaths = [\"a\", 'b', # c\n]\n")
	f.Add("[tool:pytest\npython_files", "[tool.pytest]\naddopts = \"\\\"")
	f.Add("", "[tool.pytest.ini_options]\npython_files = [[\"x\"]]")
	f.Fuzz(func(t *testing.T, ini, toml string) {
		d := Read(reader(map[string]string{"tox.ini": ini, "pyproject.toml": toml}), Options{Pytest: [][]string{{"pytest", ini}}})
		_ = d.IsTestFile("tests/test_x.py")
		_ = d.IsTestPath("a/b.py")
		_ = d.TestIDs("t.py", []byte(ini))
		_ = d.Describe()
	})
}

// BenchmarkIsTestFile asks about 10,000 paths, as the first tier does for every file of a
// large repository: the patterns are compiled once, not per path.
func BenchmarkIsTestFile(b *testing.B) {
	d := Default()
	paths := make([]string, 10000)
	for i := range paths {
		if i%10 == 0 {
			paths[i] = fmt.Sprintf("tests/test_mod%d.py", i)
		} else {
			paths[i] = fmt.Sprintf("bigshop/pkg%d/mod%d.py", i%50, i)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for _, p := range paths {
			if d.IsTestFile(p) {
				n++
			}
		}
		if n != 1000 {
			b.Fatalf("%d test files, want 1000", n)
		}
	}
}

func TestMypyTargets(t *testing.T) {
	for _, tc := range []struct {
		name     string
		files    map[string]string
		wantFile string
		want     bool
	}{
		{"none", nil, "", false},
		{"pyproject array", map[string]string{"pyproject.toml": "[tool.mypy]\nfiles = [\"src\", \"tests/typing\"]\nstrict = true\n"}, "pyproject.toml", true},
		{"pyproject string", map[string]string{"pyproject.toml": "[tool.mypy]\nfiles = \"src\"\n"}, "pyproject.toml", true},
		{"pyproject packages", map[string]string{"pyproject.toml": "[tool.mypy]\npackages = [\"pkg\"]\n"}, "pyproject.toml", true},
		{"pyproject without files", map[string]string{"pyproject.toml": "[tool.mypy]\nstrict = true\n"}, "pyproject.toml", false},
		{"pyproject empty files", map[string]string{"pyproject.toml": "[tool.mypy]\nfiles = []\n"}, "pyproject.toml", false},
		{"pyproject without mypy: setup.cfg", map[string]string{"pyproject.toml": "[tool.ruff]\nline-length = 79\n", "setup.cfg": "[mypy]\nfiles = src, tests\n"}, "setup.cfg", true},
		{"only an override's files", map[string]string{"pyproject.toml": "[tool.mypy]\nstrict = true\n\n[[tool.mypy.overrides]]\nmodule = \"x\"\nfiles = \"y\"\n"}, "pyproject.toml", false},
		{"mypy.ini first", map[string]string{"mypy.ini": "[mypy]\nstrict = True\n", "pyproject.toml": "[tool.mypy]\nfiles = [\"src\"]\n"}, "mypy.ini", false},
		{".mypy.ini multi-line", map[string]string{".mypy.ini": "[mypy]\nfiles =\n    src,\n    tests\n"}, ".mypy.ini", true},
		{"setup.cfg without a section", map[string]string{"setup.cfg": "[metadata]\nname = x\n"}, "setup.cfg", false},
	} {
		file, ok := MypyTargets(reader(tc.files))
		if file != tc.wantFile || ok != tc.want {
			t.Errorf("%s: MypyTargets(%q) = %q, %v; want %q, %v", tc.name, tc.files, file, ok, tc.wantFile, tc.want)
		}
	}
}

// TestConfigByPytestVersion pins which file and table each pytest reads (pytest's
// findpaths.locate_config): pytest.toml, .pytest.toml, and pyproject.toml's [tool.pytest]
// are pytest 9's; .pytest.ini is the configuration without a [pytest] section only from 9
// on; pytest.ini always is; an unknown version reads as the newest.
func TestConfigByPytestVersion(t *testing.T) {
	attrs := "[project]\nname = \"attrs\"\n\n[tool.pytest]\nstrict = true\ntestpaths = [\"tests\"]\naddopts = [\"-ra\", \"--import-mode=importlib\"]\n"
	tests := []struct {
		name    string
		files   map[string]string
		version string
		config  string
		paths   []string
	}{
		{"[tool.pytest] on pytest 9", map[string]string{"pyproject.toml": attrs}, "9.0.1", "pyproject.toml", []string{"tests"}},
		{"[tool.pytest] unknown version", map[string]string{"pyproject.toml": attrs}, "", "pyproject.toml", []string{"tests"}},
		{"[tool.pytest] ignored by pytest 7", map[string]string{"pyproject.toml": attrs}, "7.2.1", "", nil},
		{"[tool.pytest] ignored by pytest 8, tox.ini read", map[string]string{"pyproject.toml": attrs, "tox.ini": "[pytest]\ntestpaths = t\n"}, "8.4.2", "tox.ini", []string{"t"}},
		{"ini_options on pytest 7", map[string]string{"pyproject.toml": "[tool.pytest.ini_options]\ntestpaths = [\"a\"]\n"}, "7.2.1", "pyproject.toml", []string{"a"}},
		{"[tool.pytest] holding only its ini_options on pytest 9", map[string]string{"pyproject.toml": "[tool.pytest]\n\n[tool.pytest.ini_options]\ntestpaths = [\"a\"]\n"}, "9.0.0", "pyproject.toml", []string{"a"}},
		{"an empty [tool.pytest] is no configuration", map[string]string{"pyproject.toml": "[tool.pytest]\n", "setup.cfg": "[tool:pytest]\ntestpaths = c\n"}, "9.0.0", "setup.cfg", []string{"c"}},
		{"pytest.toml unknown to pytest 8", map[string]string{"pytest.toml": "[pytest]\ntestpaths = [\"x\"]\n", "setup.cfg": "[tool:pytest]\ntestpaths = c\n"}, "8.4.2", "setup.cfg", []string{"c"}},
		{"pytest.toml on pytest 9", map[string]string{"pytest.toml": "[pytest]\ntestpaths = [\"x\"]\n", "pytest.ini": "[pytest]\ntestpaths = y\n"}, "9.1.1", "pytest.toml", []string{"x"}},
		{"an empty pytest.ini wins on pytest 7", map[string]string{"pytest.ini": "", "pyproject.toml": "[tool.pytest.ini_options]\ntestpaths = [\"a\"]\n"}, "7.2.1", "pytest.ini", nil},
		{".pytest.ini without [pytest] is skipped by pytest 8", map[string]string{".pytest.ini": "[other]\n", "tox.ini": "[pytest]\ntestpaths = t\n"}, "8.4.2", "tox.ini", []string{"t"}},
		{".pytest.ini without [pytest] wins on pytest 9", map[string]string{".pytest.ini": "[other]\n", "tox.ini": "[pytest]\ntestpaths = t\n"}, "9.0.0", ".pytest.ini", nil},
		{"tox.ini without [pytest] is skipped", map[string]string{"tox.ini": "[tox]\nenvlist = py3\n", "setup.cfg": "[tool:pytest]\ntestpaths = c\n"}, "7.2.1", "setup.cfg", []string{"c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Read(reader(tt.files), Options{PytestVersion: tt.version})
			if d.Config != tt.config || !slices.Equal(d.Paths, tt.paths) {
				t.Errorf("files %v, pytest %q: config %q, testpaths %q; want %q, %q", tt.files, tt.version, d.Config, d.Paths, tt.config, tt.paths)
			}
		})
	}
}

// UnittestModule names a module as unittest's discovery does: from the top-level folder,
// which is the start folder unless -t says otherwise.
func TestUnittestModule(t *testing.T) {
	for _, tt := range []struct {
		argv []string
		path string
		want string
	}{
		{nil, "tests/test_a.py", "tests.test_a"},
		{[]string{"python3", "-m", "unittest", "discover", "-s", "src", "-t", "src"}, "src/test_typing_extensions.py", "test_typing_extensions"},
		{[]string{"python3", "-m", "unittest", "discover", "-s", "src"}, "src/test_typing_extensions.py", "test_typing_extensions"},
		{[]string{"python3", "-m", "unittest", "discover", "-s", "tests"}, "tests/sub/test_a.py", "sub.test_a"},
		{[]string{"python3", "-m", "unittest", "discover", "-s", "pkg/tests", "-t", "."}, "pkg/tests/test_a.py", "pkg.tests.test_a"},
		{[]string{"python3", "-m", "unittest", "discover", "tests", "test*.py", "."}, "tests/test_a.py", "tests.test_a"},
		{[]string{"python3", "-m", "unittest", "discover", "-s", "src"}, "other/test_a.py", ""},
	} {
		d := Read(reader(nil), Options{Unittest: [][]string{tt.argv}})
		if got := d.UnittestModule(tt.path); got != tt.want {
			t.Errorf("%q: UnittestModule(%q) = %q, want %q", tt.argv, tt.path, got, tt.want)
		}
	}
}

// pytest before 9 reads pyproject.toml's [tool.pytest.ini_options] alone: the keys of a
// [tool.pytest] table are ignored, which discovery must both follow and say.
func TestUnreadToolPytestTable(t *testing.T) {
	const toml = "[tool.pytest]\npython_classes = [\"Describe\"]\ntestpaths = [\"spec\"]\n"
	for _, tt := range []struct {
		name, version string
		files         map[string]string
		unread        []string
	}{
		{"pytest 7", "7.2.1", map[string]string{"pyproject.toml": toml}, []string{"python_classes", "testpaths"}},
		{"pytest 8 with ini_options too", "8.3.0", map[string]string{"pyproject.toml": "[tool.pytest.ini_options]\naddopts = \"-q\"\n\n" + toml}, []string{"python_classes", "testpaths"}},
		{"pytest 9 reads it", "9.0.0", map[string]string{"pyproject.toml": toml}, nil},
		{"pytest.ini is the configuration", "7.2.1", map[string]string{"pytest.ini": "[pytest]\n", "pyproject.toml": toml}, nil},
		{"settings that are not strings", "7.2.1", map[string]string{"pyproject.toml": "[tool.pytest]\nxfail_strict = true\nminversion = 8\ntimeout = 2.5\nmarkers = { slow = \"slow tests\" }\n"},
			[]string{"markers", "minversion", "timeout", "xfail_strict"}},
	} {
		d := Read(reader(tt.files), Options{PytestVersion: tt.version})
		if !slices.Equal(d.Unread, tt.unread) {
			t.Errorf("%s: Unread = %q, want %q", tt.name, d.Unread, tt.unread)
		}
		if note := d.UnreadNote(); (note != "") != (tt.unread != nil) || tt.unread != nil && !strings.Contains(note, "pytest "+tt.version) {
			t.Errorf("%s: UnreadNote = %q", tt.name, note)
		}
		if tt.unread != nil && !slices.Equal(d.Classes, DefaultPythonClasses) {
			t.Errorf("%s: Classes = %q; pytest %s collects %q", tt.name, d.Classes, tt.version, DefaultPythonClasses)
		}
	}
}

// Values of [tool.pytest.ini_options] that are not strings (lists, booleans, numbers) are
// read as pytest 7 and 8 read them: its own loader (load_config_dict_from_file) is the
// oracle, run by the checks' usual interpreter. A list stays a list (addopts = ["-q"]), any
// other scalar becomes Python's str() of it (xfail_strict = true is "True"; an inline table
// is kept as written, which no setting ticketd reads takes).
func TestTOMLValuesAsPytestReadsThem(t *testing.T) {
	const pyproject = `[project]
name = "x"

[tool.pytest.ini_options]
addopts = ["-q", "--doctest-modules"]  # a list
testpaths = ["tests", "docs"]
python_files = "check_*.py test_*.py"
xfail_strict = true
strict = false
minversion = 7.0
timeout = 300
big = 1_000
hexed = 0x10
tiny = 1e-5
huge = 1e16
ratio = 2.50
`
	dir := t.TempDir()
	file := filepath.Join(dir, "pyproject.toml")
	if err := os.WriteFile(file, []byte(pyproject), 0o644); err != nil {
		t.Fatal(err)
	}
	script := "import json, pathlib, sys\nfrom _pytest.config.findpaths import load_config_dict_from_file\n" +
		"d = load_config_dict_from_file(pathlib.Path(sys.argv[1]))\nprint(json.dumps({k: v if isinstance(v, list) else str(v) for k, v in d.items()}))\n"
	out, err := exec.Command("/usr/bin/python3", "-c", script, file).Output()
	if err != nil {
		err = fmt.Errorf("/usr/bin/python3 with pytest: %w", err)
	}
	testenv.Need(t, testenv.Pytest, err)
	var want map[string]any
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatalf("pytest's values %s: %v", out, err)
	}
	_, got := pytestConfig(reader(map[string]string{"pyproject.toml": pyproject}), 7)
	for key, w := range want {
		g, ok := got[key]
		switch w := w.(type) {
		case string:
			if !ok || g.list || g.raw != w {
				t.Errorf("%s: ticketd reads %+v, pytest %q", key, g, w)
			}
		case []any:
			var items []string
			for _, it := range w {
				items = append(items, fmt.Sprint(it))
			}
			if !ok || !g.list || !slices.Equal(g.items, items) {
				t.Errorf("%s: ticketd reads %+v, pytest %q", key, g, items)
			}
		}
	}
	if len(got) != len(want) {
		t.Errorf("ticketd reads %d keys, pytest %d: %+v\n%s", len(got), len(want), got, out)
	}
	d := Read(reader(map[string]string{"pyproject.toml": pyproject}), Options{PytestVersion: "7.2.1"})
	if !d.DoctestModules || !slices.Equal(d.Paths, []string{"tests", "docs"}) || !slices.Equal(d.Files, []string{"check_*.py", "test_*.py"}) {
		t.Errorf("discovery: %s", d.Describe())
	}
}

// Configured testpaths that name nothing: pytest drops each silently, and with none left
// collects from the root; testpaths a check's command overrides with its own paths do not
// apply at all.
func TestMissingTestpaths(t *testing.T) {
	files := []string{"testing/test_a.py", "docs/test_d.py", "src/pkg/tests/unit/test_u.py", "pkg/__init__.py"}
	for _, tt := range []struct {
		name    string
		config  string
		opts    Options
		missing []string
		noteHas string // "" for no note
	}{
		{"all missing", "[pytest]\ntestpaths = tests\n", Options{}, []string{"tests"}, "pytest.ini sets testpaths = tests, which names no file or folder at the base commit: pytest then collects from the repository root"},
		{"one of two missing", "[pytest]\ntestpaths = tests docs\n", Options{}, []string{"tests"}, "pytest.ini's testpaths name tests, which is not at the base commit: pytest skips it without a word and collects from docs alone"},
		{"globs that match", "[pytest]\ntestpaths = src/*/tests **/unit docs/test_d.py\n", Options{}, nil, ""},
		{"a glob that matches nothing", "[pytest]\ntestpaths = src/*/spec testing\n", Options{}, []string{"src/*/spec"}, "collects from testing alone"},
		{"present", "[pytest]\ntestpaths = testing\n", Options{}, nil, ""},
		{"the command names its paths", "[pytest]\ntestpaths = tests\n", Options{Pytest: [][]string{{"python3", "-m", "pytest", "testing"}}}, nil, ""},
		{"an override on the command", "[pytest]\ntestpaths = testing\n", Options{Pytest: [][]string{{"python3", "-m", "pytest", "-o", "testpaths=spec"}}}, []string{"spec"}, "testpaths = spec"},
	} {
		d := Read(reader(map[string]string{"pytest.ini": tt.config}), tt.opts)
		missing, _ := d.MissingTestpaths(files)
		note := d.MissingTestpathsNote(files)
		if !slices.Equal(missing, tt.missing) || (tt.noteHas == "") != (note == "") || !strings.Contains(note, tt.noteHas) {
			t.Errorf("%s: missing %q, note %q; want %q, a note holding %q", tt.name, missing, note, tt.missing, tt.noteHas)
		}
	}
}

// TestConfigFor: pytest reads the configuration it finds from the folder its paths have in
// common upwards, a file without a pytest section not stopping it; a bare run starts at
// the root.
func TestConfigFor(t *testing.T) {
	files := map[string]string{
		"setup.cfg":               "[metadata]\nname = x\n",
		"tests/pytest.ini":        "[pytest]\n",
		"tests/unit/test_a.py":    "",
		"tests/test_b.py":         "",
		"other/test_c.py":         "",
		"pkg/sub/tox.ini":         "[pytest]\naddopts = -q\n",
		"pkg/sub/tests/test_d.py": "",
	}
	stat := func(p string) (bool, bool) {
		if _, ok := files[p]; ok {
			return true, false
		}
		for f := range files {
			if strings.HasPrefix(f, p+"/") {
				return true, true
			}
		}
		return false, false
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"tests"}, "tests/pytest.ini"},
		{[]string{"tests/unit/test_a.py::test_x"}, "tests/pytest.ini"},
		{[]string{"tests/test_b.py", "tests/unit/test_a.py"}, "tests/pytest.ini"},
		{[]string{"tests/test_b.py", "other/test_c.py"}, ""},
		{[]string{"missing/test_z.py", "tests/test_b.py"}, "tests/pytest.ini"},
		{[]string{"pkg/sub/tests/test_d.py"}, "pkg/sub/tox.ini"},
	} {
		if got := ConfigFor(reader(files), "7.2.1", tt.args, stat); got != tt.want {
			t.Errorf("ConfigFor(%q) = %q; want %q", tt.args, got, tt.want)
		}
	}
}

// A command's -c names the configuration pytest reads, wherever it is; an absolute one
// (-c /dev/null) is none of the repository's, and a file without pytest's section is none.
func TestCommandConfig(t *testing.T) {
	files := map[string]string{
		"setup.cfg":         "[metadata]\nname = root\n",
		"py/pyproject.toml": "[project]\nname = \"x\"\n\n[tool.pytest.ini_options]\npython_files = [\"check_*.py\"]\n",
		"py/pytest.ini":     "[pytest]\npython_files = other_*.py\n",
		"py/setup.cfg":      "[metadata]\nname = x\n",
	}
	for _, tt := range []struct {
		name, config string
		argv         []string
		files        []string
	}{
		{"the file named", "py/pyproject.toml", []string{"python3", "-m", "pytest", "-c", "py/pyproject.toml"}, []string{"check_*.py"}},
		{"--config-file=", "py/pytest.ini", []string{"python3", "-m", "pytest", "--config-file=./py/pytest.ini"}, []string{"other_*.py"}},
		{"absolute", "", []string{"python3", "-m", "pytest", "-c", "/dev/null"}, DefaultPythonFiles},
		{"no pytest section", "", []string{"python3", "-m", "pytest", "-c", "py/setup.cfg"}, DefaultPythonFiles},
	} {
		got := Read(reader(files), Options{Pytest: [][]string{tt.argv}, PytestVersion: "7.2.1"})
		if got.Config != tt.config || !slices.Equal(got.Files, tt.files) {
			t.Errorf("%s: config %q, python_files %q; want %q, %q", tt.name, got.Config, got.Files, tt.config, tt.files)
		}
	}
}
