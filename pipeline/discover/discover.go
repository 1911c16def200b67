// Package discover knows where a repository keeps its tests, as its test runners find them:
// pytest's python_files, testpaths, python_classes and python_functions, its doctest options
// (--doctest-modules, --doctest-glob), and unittest's discovery pattern and start folder. A
// Tests value is built once per repository and base commit from the configuration files
// there and the configured check commands; the evidence step, the target tests, the first
// tier and the health check all ask it, so a regression test in a project's tests.py or a
// root test.py is seen wherever ticketd looks for tests.
package discover

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"io"
	"maps"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/ticketd/ticketd/pipeline/sandbox"
)

// Reader reads a repository file by its slash-separated path relative to the root; found
// is false when it is absent or not a regular file.
type Reader func(path string) (data []byte, found bool)

// Defaults of pytest and unittest, used when the repository configures nothing.
var (
	DefaultPythonFiles     = []string{"test_*.py", "*_test.py"}
	DefaultPythonClasses   = []string{"Test"}
	DefaultPythonFunctions = []string{"test"}
)

// DefaultUnittestPattern is `python -m unittest discover`'s default pattern.
const DefaultUnittestPattern = "test*.py"

// Tests is where a repository's test runners find its tests. The zero value and nil are
// pytest's defaults.
type Tests struct {
	// Pytest and Unittest say which runners the repository's checks use; neither means
	// pytest (the default check).
	Pytest, Unittest bool
	// Config is the file pytest's configuration was read from, "" when none.
	Config string
	// Files are python_files' patterns; Paths are testpaths, or the paths a pytest check's
	// command names (slash-separated, relative to the root).
	Files, Paths []string
	// Classes and Functions are python_classes and python_functions: prefixes or globs.
	Classes, Functions []string
	// DoctestModules is --doctest-modules; DoctestGlobs are --doctest-glob patterns.
	DoctestModules bool
	DoctestGlobs   []string
	// Addopts are the configuration's addopts, as words.
	Addopts []string
	// UnittestPattern and UnittestStart are unittest discover's -p and -s; UnittestTop is
	// its -t, "" when not given (the start folder is the top then); UnittestModules are the
	// modules or packages a unittest command names instead (`-m unittest tests`), as paths.
	UnittestPattern, UnittestStart, UnittestTop string
	UnittestModules                             []string
	// CodeFolders are the folders among Paths, UnittestStart and UnittestModules that hold
	// the code under test rather than tests: the project's own package (`testpaths =
	// ["toolz"]` for tests inside the package and its doctests), or a src/ folder. Only the
	// test modules and test folders inside them are tests.
	CodeFolders []string
	// Unread are the keys of pyproject.toml's [tool.pytest] table when the checks' pytest
	// (version, older than 9) does not read that table: coverage.py and pytest 9's own
	// documentation write it, pytest 7 and 8 read [tool.pytest.ini_options] alone and
	// ignore it without a word. Nil otherwise.
	Unread  []string
	version string
	// testpaths are the configuration's testpaths (or a -o testpaths= override) as
	// written, when pytest uses them: no check's command names paths of its own.
	testpaths []string
}

// Options are the repository's test checks' commands: argv as configured, empty for a
// check that runs the kind's default command.
type Options struct {
	Pytest   [][]string
	Unittest [][]string
	// PytestVersion is the version of the pytest the checks run ("7.2.1"), which decides
	// the configuration files and tables it reads (pytest < 9 ignores pytest.toml and
	// pyproject.toml's [tool.pytest]); "" when not known: the newest pytest's rules.
	PytestVersion string
}

// Default is pytest's default discovery.
func Default() *Tests { return Read(func(string) ([]byte, bool) { return nil, false }, Options{}) }

// defaults answers for a nil *Tests.
var defaults = Default()

// Read builds the discovery of a repository from its configuration files (read) and its
// test checks' commands.
func Read(read Reader, o Options) *Tests {
	t := &Tests{Pytest: len(o.Pytest) > 0 || len(o.Unittest) == 0, Unittest: len(o.Unittest) > 0}
	// pytest looks from the folder of the paths a command names upwards: a folder's own
	// configuration wins over the root's.
	file, vals := commandConfig(read, pytestMajor(o.PytestVersion), o.Pytest)
	if file == "" {
		file, vals = nestedConfig(read, pytestMajor(o.PytestVersion), o.Pytest)
	}
	if file == "" {
		file, vals = pytestConfig(read, pytestMajor(o.PytestVersion))
	}
	t.Config = file
	t.Unread, t.version = unreadTable(read, file, pytestMajor(o.PytestVersion)), o.PytestVersion
	t.Files = vals["python_files"].words()
	t.Paths = cleanPaths(vals["testpaths"].words())
	t.testpaths = vals["testpaths"].words()
	t.Classes = vals["python_classes"].words()
	t.Functions = vals["python_functions"].words()
	t.Addopts = vals["addopts"].words()
	t.applyPytestArgs(t.Addopts, false)
	for _, argv := range o.Pytest {
		t.applyPytestArgs(pytestArgs(argv), true)
	}
	if len(t.Files) == 0 {
		t.Files = DefaultPythonFiles
	}
	if len(t.Classes) == 0 {
		t.Classes = DefaultPythonClasses
	}
	if len(t.Functions) == 0 {
		t.Functions = DefaultPythonFunctions
	}
	t.UnittestPattern, t.UnittestStart = DefaultUnittestPattern, "."
	for _, argv := range o.Unittest {
		t.applyUnittestArgs(unittestArgs(argv))
	}
	t.CodeFolders = codeFolders(read, append(append(slices.Clone(t.Paths), t.UnittestStart), t.UnittestModules...))
	return t
}

// commandConfig is the configuration file a check's command names with -c (--config-file),
// relative to the root: pytest reads that file alone, wherever the paths are. The first
// command naming one decides; an absolute path (-c /dev/null: no configuration) is not the
// repository's and reads as none.
func commandConfig(read Reader, major int, commands [][]string) (string, map[string]iniValue) {
	for _, argv := range commands {
		args := pytestArgs(argv)
		for i := 0; i < len(args); i++ {
			opt, val, hasVal := strings.Cut(args[i], "=")
			if opt != "-c" && opt != "--config-file" {
				continue
			}
			if !hasVal && i+1 < len(args) {
				i++
				val = args[i]
			}
			if strings.HasPrefix(val, "/") {
				return "", nil
			}
			p := cleanPath(val)
			if p == "" || p == "." {
				return "", nil
			}
			dir, base := path.Dir(p), path.Base(p)
			in := func(q string) ([]byte, bool) {
				if q != base {
					return nil, false
				}
				return read(path.Join(dir, q))
			}
			if file, vals := pytestConfig(in, major); file != "" {
				return p, vals
			}
			return "", nil
		}
	}
	return "", nil
}

// nestedConfig finds the configuration below the root that pytest reads when a check's
// command names paths: pytest looks in the folder the paths have in common and then each
// folder above it (a tests/pytest.ini is read by `pytest tests`, before any root file, and
// never by a bare `pytest`). The first command naming paths decides.
func nestedConfig(read Reader, major int, commands [][]string) (string, map[string]iniValue) {
	for _, argv := range commands {
		var dirs []string
		args := pytestArgs(argv)
		for i := 0; i < len(args); i++ {
			a := args[i]
			if strings.HasPrefix(a, "-") {
				if !strings.Contains(a, "=") && TakesValue(a) {
					i++
				}
				continue
			}
			p, _, _ := strings.Cut(a, "::")
			if p = cleanPath(p); p == "" {
				continue
			}
			if strings.HasSuffix(p, ".py") {
				p = path.Dir(p)
			}
			dirs = append(dirs, p)
		}
		if len(dirs) == 0 {
			continue
		}
		common := dirs[0]
		for _, d := range dirs[1:] {
			for !under(d, common) {
				common = path.Dir(common)
			}
		}
		for d := common; d != "." && d != "/" && d != ""; d = path.Dir(d) {
			in := func(p string) ([]byte, bool) { return read(d + "/" + p) }
			if file, vals := pytestConfig(in, major); file != "" {
				return d + "/" + file, vals
			}
		}
		return "", nil
	}
	return "", nil
}

// unreadTable are the keys of pyproject.toml's [tool.pytest] table, sorted, when a pytest
// of the given major version ignores it: one older than 9, whose configuration is
// pyproject.toml or none (another file would win in pytest 9 too).
func unreadTable(read Reader, config string, major int) []string {
	if major >= 9 || config != "" && config != "pyproject.toml" {
		return nil
	}
	data, ok := read("pyproject.toml")
	if !ok {
		return nil
	}
	if len(data) > maxConfigBytes {
		data = data[:maxConfigBytes]
	}
	vals, found, _ := tomlTable(string(data), "tool.pytest")
	if !found || len(vals) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(vals))
}

// UnreadNote says which settings the checks' pytest ignores (Unread), "" when none.
func (t *Tests) UnreadNote() string {
	if t == nil || len(t.Unread) == 0 {
		return ""
	}
	return fmt.Sprintf("pyproject.toml sets %s in [tool.pytest], a table only pytest 9 and later read: the checks' pytest %s reads [tool.pytest.ini_options] alone and ignores them without a word, so they do not apply (tests only they would collect do not run and gate no fix); move them to [tool.pytest.ini_options], or install pytest 9 for the checks' interpreter",
		strings.Join(t.Unread, ", "), cmp.Or(t.version, "in use"))
}

// codeFolders are the folders of dirs that hold the code under test: a src/ folder, or a
// package (an __init__.py) not named like a test folder. A testpath or a folder a check's
// command names is often the package itself, so that pytest collects the tests inside it
// and, with --doctest-modules, the examples in its modules; those modules stay code.
func codeFolders(read Reader, dirs []string) []string {
	var out []string
	for _, d := range dirs {
		if d == "." || d == "" || strings.HasSuffix(d, ".py") || slices.Contains(out, d) {
			continue
		}
		base := path.Base(d)
		if strings.Contains(strings.ToLower(base), "test") {
			continue
		}
		if _, pkg := read(d + "/__init__.py"); pkg || base == "src" {
			out = append(out, d)
		}
	}
	return out
}

// FromDir builds the discovery of the checkout in dir (see Read).
func FromDir(dir string, o Options) *Tests { return Read(DirReader(dir), o) }

// DirReader reads files of the checkout in dir, never following a symlink at the last
// element nor waiting on a FIFO a check may have left where a configuration file was.
func DirReader(dir string) Reader {
	return func(p string) ([]byte, bool) {
		if p == "" || strings.HasPrefix(p, "/") || slices.Contains(strings.Split(p, "/"), "..") {
			return nil, false
		}
		f, err := sandbox.OpenReport(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil {
			return nil, false
		}
		defer f.Close()
		data, err := io.ReadAll(io.LimitReader(f, maxConfigBytes))
		return data, err == nil
	}
}

// pytestValueOptions are pytest options whose value may follow as the next word: a path
// argument is never one of their values. pytest-cov's --cov takes one when a word that is
// not an option follows it (`--cov pkg`).
var pytestValueOptions = []string{"--cov", "-k", "-m", "-p", "-o", "-c", "-W", "-r", "--tb", "--rootdir", "--confcutdir",
	"--basetemp", "--ignore", "--ignore-glob", "--deselect", "--junitxml", "--junit-xml", "--junit-prefix",
	"--log-level", "--log-file", "--log-file-level", "--log-format", "--log-date-format", "--log-cli-level",
	"--log-cli-format", "--durations", "--durations-min", "--maxfail", "--import-mode", "--override-ini",
	"--config-file", "--cov-report", "--cov-config", "--cov-fail-under", "-n", "--numprocesses", "--dist",
	"--doctest-glob", "--capture", "--color", "--code-highlight", "--show-capture", "--timeout",
	"--reruns", "--reruns-delay", "--pythonwarnings", "--tx", "--max-worker-restart", "--lf-scope",
	"--last-failed-no-failures", "--doctest-report", "--debug-file"}

// TakesValue reports whether a pytest option word (without =value) takes the next word as
// its value.
func TakesValue(opt string) bool {
	return opt != "" && slices.Contains(pytestValueOptions, opt)
}

// pytestArgs are the words after the pytest invocation in argv: after `-m pytest`, or after
// a program named pytest or py.test; nil when argv does not run pytest visibly.
func pytestArgs(argv []string) []string {
	if i := pytestStart(argv); i >= 0 {
		return argv[i:]
	}
	return nil
}

// pytestStart is the index of the first word after the pytest invocation in argv, -1 when
// argv does not run pytest visibly.
func pytestStart(argv []string) int {
	for i, a := range argv {
		if a == "-m" && i+1 < len(argv) && argv[i+1] == "pytest" {
			return i + 2
		}
		if b := path.Base(a); b == "pytest" || b == "py.test" || b == "pytest-3" {
			return i + 1
		}
	}
	return -1
}

// PathArgs returns the indexes of argv's words that are path arguments of its pytest
// invocation (folders, files, node ids), for a run that must select its own tests instead.
// A word counts when it is not an option nor an option's value and exists is true for it
// or it holds "::" or ends in .py.
func PathArgs(argv []string, exists func(string) bool) []int {
	start := pytestStart(argv)
	if start < 0 {
		return nil
	}
	var out []int
	for i := start; i < len(argv); i++ {
		a := argv[i]
		if strings.HasPrefix(a, "-") {
			if !strings.Contains(a, "=") && TakesValue(a) {
				i++ // its value
			}
			continue
		}
		if strings.Contains(a, "::") || strings.HasSuffix(a, ".py") || (exists != nil && exists(a)) {
			out = append(out, i)
		}
	}
	return out
}

// applyPytestArgs reads the discovery options among pytest words (addopts, or a check's
// command, whose path arguments say where its tests are).
func (t *Tests) applyPytestArgs(args []string, command bool) {
	var paths []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		opt, val, hasVal := strings.Cut(a, "=")
		if !strings.HasPrefix(a, "-") {
			if command {
				id, _, _ := strings.Cut(a, "::")
				paths = append(paths, id)
			}
			continue
		}
		if !hasVal && TakesValue(opt) && i+1 < len(args) {
			i++
			val, hasVal = args[i], true
		}
		switch opt {
		case "--doctest-modules":
			t.DoctestModules = true
		case "--doctest-glob":
			if hasVal && val != "" {
				t.DoctestGlobs = append(t.DoctestGlobs, val)
			}
		case "-o", "--override-ini":
			t.overrideIni(val)
		}
	}
	if len(paths) > 0 {
		t.Paths = append(t.Paths, cleanPaths(paths)...)
		t.testpaths = nil // pytest collects what the command names, never testpaths
	}
}

// overrideIni applies one `-o key=value` that changes where pytest collects tests; other
// keys do not concern discovery.
func (t *Tests) overrideIni(kv string) {
	key, v, ok := strings.Cut(kv, "=")
	if !ok {
		return
	}
	words := shellSplit(v)
	switch strings.TrimSpace(key) {
	case "python_files":
		t.Files = words
	case "python_classes":
		t.Classes = words
	case "python_functions":
		t.Functions = words
	case "testpaths":
		t.Paths = cleanPaths(words)
		t.testpaths = words
	}
}

// unittestArgs are the words after `-m unittest` in argv; nil when argv does not run it.
func unittestArgs(argv []string) []string {
	for i, a := range argv {
		if a == "-m" && i+1 < len(argv) && argv[i+1] == "unittest" {
			return argv[i+2:]
		}
	}
	return []string{"discover"} // the kind's default command
}

// applyUnittestArgs reads unittest's discovery options, or the modules it names.
func (t *Tests) applyUnittestArgs(args []string) {
	if len(args) == 0 || args[0] == "discover" {
		var pos []string
		for i := 1; i < len(args); i++ {
			a := args[i]
			opt, val, hasVal := strings.Cut(a, "=")
			switch opt {
			case "-s", "--start-directory", "-p", "--pattern", "-t", "--top-level-directory", "-k":
				if !hasVal && i+1 < len(args) {
					i++
					val = args[i]
				}
				switch opt {
				case "-s", "--start-directory":
					t.UnittestStart = cleanPath(val)
				case "-p", "--pattern":
					t.UnittestPattern = val
				case "-t", "--top-level-directory":
					t.UnittestTop = cleanPath(val)
				}
			default:
				if !strings.HasPrefix(a, "-") {
					pos = append(pos, a)
				}
			}
		}
		if len(pos) > 0 {
			t.UnittestStart = cleanPath(pos[0])
		}
		if len(pos) > 1 {
			t.UnittestPattern = pos[1]
		}
		if len(pos) > 2 {
			t.UnittestTop = cleanPath(pos[2])
		}
		return
	}
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			continue
		}
		if strings.HasSuffix(a, ".py") {
			t.UnittestModules = append(t.UnittestModules, cleanPath(a))
			continue
		}
		// A dotted name: its leading parts name a module or a package.
		t.UnittestModules = append(t.UnittestModules, strings.ReplaceAll(a, ".", "/"))
	}
}

func cleanPaths(ps []string) []string {
	var out []string
	for _, p := range ps {
		if c := cleanPath(p); c != "" && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

func cleanPath(p string) string {
	p = path.Clean(strings.ReplaceAll(strings.TrimSpace(p), `\`, "/"))
	p = strings.TrimPrefix(p, "./")
	if p == "" || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "..") {
		return ""
	}
	return p
}

// under reports whether p is dir or inside it ("." holds everything).
func under(p, dir string) bool {
	return dir == "." || p == dir || strings.HasPrefix(p, dir+"/")
}

// IsTestFile reports whether the slash-separated path p is a module a test runner of the
// repository collects tests from: a pytest module by python_files (a pattern without
// "test" in it, such as *.py, only inside testpaths), a unittest module by its pattern
// inside the start folder or one its command names, or a doctest file by --doctest-glob.
func (t *Tests) IsTestFile(p string) bool {
	if t == nil {
		t = defaults
	}
	base := path.Base(p)
	if base == "conftest.py" || base == "__init__.py" || base == "setup.py" {
		return false
	}
	if t.Pytest && t.IsDoctestFile(p) {
		return true
	}
	if !strings.HasSuffix(base, ".py") {
		return false
	}
	return t.Pytest && t.isPytestModule(p) || t.Unittest && t.isUnittestModule(p)
}

// isPytestModule reports whether python_files matches p; a pattern without "test" in it
// (*.py) counts only inside testpaths, or pytest would collect the whole code base.
func (t *Tests) isPytestModule(p string) bool {
	for _, pat := range t.Files {
		if !fnmatchPath(pat, p) {
			continue
		}
		if strings.Contains(strings.ToLower(pat), "test") || len(t.Paths) == 0 || t.inPaths(p) {
			return true
		}
	}
	return false
}

// isUnittestModule reports whether unittest's discovery or its command collects p.
func (t *Tests) isUnittestModule(p string) bool {
	if under(p, t.UnittestStart) && fnmatch(t.UnittestPattern, path.Base(p)) {
		return true
	}
	for _, m := range t.UnittestModules {
		if p == m+".py" {
			return true
		}
	}
	return false
}

// UnittestModule is the dotted name unittest's discovery gives the module at the
// slash-separated path p, which starts its tests' ids: the path from the top-level folder
// (-t, else the start folder: `-s src` names src/test_x.py test_x), "" when p is outside
// that folder. Discovery from the root names it by its whole path (tests.test_x).
func (t *Tests) UnittestModule(p string) string {
	if t == nil {
		t = defaults
	}
	top := cmp.Or(t.UnittestTop, t.UnittestStart, ".")
	rel, ok := strings.CutSuffix(p, ".py")
	if !ok {
		return ""
	}
	if top != "." {
		if rel, ok = strings.CutPrefix(rel, top+"/"); !ok {
			return ""
		}
	}
	return strings.ReplaceAll(rel, "/", ".")
}

// DefaultDoctestGlob is the text files pytest collects doctests from when no --doctest-glob
// is given: always on, --doctest-modules or not.
const DefaultDoctestGlob = "test*.txt"

// IsDoctestFile reports whether p is a text file pytest collects doctests from: one that
// --doctest-glob names, or without it DefaultDoctestGlob. Its examples run inside pytest, as
// a test module's code does.
func (t *Tests) IsDoctestFile(p string) bool {
	if t == nil || strings.HasSuffix(p, ".py") {
		return false
	}
	globs := t.DoctestGlobs
	if len(globs) == 0 {
		globs = []string{DefaultDoctestGlob}
	}
	for _, g := range globs {
		if fnmatchPath(g, p) {
			return true
		}
	}
	return false
}

func (t *Tests) inPaths(p string) bool {
	for _, d := range t.Paths {
		if under(p, d) {
			return true
		}
	}
	return false
}

// testFolders are folder names that hold tests by convention.
var testFolders = []string{"tests", "test", "testing"}

// IsTestPath reports whether p belongs to the tests rather than the code under test: a test
// module, a conftest.py, a doctest file, anything in a tests/, test/ or testing/ folder, in
// a testpath or a unittest start folder, or in a package a unittest command names, unless
// that folder is the code (CodeFolders).
func (t *Tests) IsTestPath(p string) bool {
	if t == nil {
		t = defaults
	}
	if t.IsTestFile(p) || path.Base(p) == "conftest.py" {
		return true
	}
	for _, part := range strings.Split(path.Dir(p), "/") {
		if slices.Contains(testFolders, part) {
			return true
		}
	}
	return t.Pytest && t.inTestpathFolder(p) || t.Unittest && t.inUnittestFolder(p)
}

// inTestpathFolder reports whether p is inside a folder (not ".") named by testpaths that
// is not the code.
func (t *Tests) inTestpathFolder(p string) bool {
	for _, d := range t.Paths {
		if d != "." && under(p, d) && !strings.HasSuffix(d, ".py") && !slices.Contains(t.CodeFolders, d) {
			return true
		}
	}
	return false
}

// inUnittestFolder reports whether p is inside unittest's start folder (not ".") or a
// package its command names, when that is not the code.
func (t *Tests) inUnittestFolder(p string) bool {
	if t.UnittestStart != "." && under(p, t.UnittestStart) && !slices.Contains(t.CodeFolders, t.UnittestStart) {
		return true
	}
	for _, m := range t.UnittestModules {
		if strings.HasPrefix(p, m+"/") && !slices.Contains(t.CodeFolders, m) {
			return true
		}
	}
	return false
}

// IsTestPackageInit reports whether p is the __init__.py of a folder of tests: its imports
// are the tests' (tests/__init__.py doing `import tomli as tomllib` for `from . import
// tomllib` in the test modules).
func (t *Tests) IsTestPackageInit(p string) bool {
	return path.Base(p) == "__init__.py" && t.IsTestPath(p)
}

// matchesName is pytest's python_classes / python_functions rule: a name matches an option
// it starts with, or a glob option it matches.
func matchesName(name string, opts []string) bool {
	for _, o := range opts {
		if strings.HasPrefix(name, o) {
			return true
		}
		if strings.ContainsAny(o, "*?[") && fnmatch(o, name) {
			return true
		}
	}
	return false
}

var (
	defRe   = regexp.MustCompile(`^(\s*)(?:async\s+)?def\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(`)
	classRe = regexp.MustCompile(`^class\s+([A-Za-z_][A-Za-z0-9_]*)\s*(\([^)]*\)?)?`)
)

// TestIDs lists the node ids (file::name, file::Class::name) of the tests in the Python
// source of file: top-level functions matching python_functions, and methods of top-level
// classes that pytest or unittest collects (matching python_classes, or a TestCase
// subclass, whose test* methods unittest runs). It reads lines, not a syntax tree: a def
// inside a string may be listed, which selects a test that then does not exist, never
// hides one.
func (t *Tests) TestIDs(file string, src []byte) []string {
	if t == nil {
		t = defaults
	}
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	ids := idScan{t: t, file: file}
	for sc.Scan() {
		ids.line(sc.Text())
	}
	return ids.out
}

// idScan is TestIDs' state between lines: the top-level class being read, if any.
type idScan struct {
	t    *Tests
	file string
	out  []string

	class       string // "" outside a class, "-" inside one that is not collected
	classIndent string // the indentation of the class's methods, once seen
	testCase    bool   // the class derives from a TestCase
}

// line reads one source line: a class header, top-level code that ends a class, or a def.
func (s *idScan) line(line string) {
	if m := classRe.FindStringSubmatch(line); m != nil {
		s.class, s.classIndent = m[1], ""
		s.testCase = strings.Contains(m[2], "TestCase")
		if !s.testCase && !matchesName(s.class, s.t.Classes) && !(s.t.Unittest && m[2] != "") {
			s.class = "-" // not collected: its methods are not tests
		}
		return
	}
	if endsClass(line) {
		s.class = ""
	}
	m := defRe.FindStringSubmatch(line)
	if m == nil {
		return
	}
	if id := s.def(m[1], m[2]); id != "" && !slices.Contains(s.out, id) {
		s.out = append(s.out, id)
	}
}

// endsClass reports whether line is top-level code other than a def, a decorator, a
// comment or a closing bracket: it ends the class above it.
func endsClass(line string) bool {
	if strings.TrimSpace(line) == "" || line[0] == ' ' || line[0] == '\t' || line[0] == '#' || line[0] == '@' || line[0] == ')' {
		return false
	}
	return !strings.HasPrefix(line, "def ") && !strings.HasPrefix(line, "async ")
}

// def is the node id of a def with this indentation and name, "" when it is not a test: a
// top-level function pytest collects, or a method of a collected class (not a nested
// function).
func (s *idScan) def(indent, name string) string {
	switch {
	case indent == "":
		s.class = ""
		if !s.t.Pytest || !matchesName(name, s.t.Functions) {
			return ""
		}
		return s.file + "::" + name
	case s.class != "" && (s.classIndent == "" || indent == s.classIndent):
		s.classIndent = indent
		method := matchesName(name, s.t.Functions) || (s.testCase || s.t.Unittest) && strings.HasPrefix(name, "test")
		if s.class == "-" || !method {
			return ""
		}
		return s.file + "::" + s.class + "::" + name
	}
	return "" // a nested function
}

// Describe says in one line where the tests are found, for notes and hints.
func (t *Tests) Describe() string {
	if t == nil {
		t = defaults
	}
	var parts []string
	if t.Pytest {
		s := "pytest: python_files " + strings.Join(t.Files, " ")
		if len(t.Paths) > 0 {
			s += ", testpaths " + strings.Join(t.Paths, " ")
		}
		if t.DoctestModules {
			s += ", --doctest-modules"
		}
		if len(t.DoctestGlobs) > 0 {
			s += ", --doctest-glob " + strings.Join(t.DoctestGlobs, " ")
		}
		if t.Config != "" {
			s += " (" + t.Config + ")"
		}
		parts = append(parts, s)
	}
	if t.Unittest {
		s := "unittest: pattern " + t.UnittestPattern + " under " + t.UnittestStart
		if len(t.UnittestModules) > 0 {
			s = "unittest: " + strings.Join(t.UnittestModules, " ")
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// fnmatchPath matches pattern as pytest's fnmatch_ex does: against the base name when the
// pattern has no "/", else against the whole path with any leading folders allowed.
func fnmatchPath(pattern, p string) bool {
	if !strings.Contains(pattern, "/") {
		return fnmatch(pattern, path.Base(p))
	}
	return fnmatch("*/"+strings.TrimPrefix(pattern, "/"), "/"+p)
}

// fnmatch is Python's fnmatch.fnmatch on POSIX: * and ? match any character, "/" included;
// [seq] and [!seq] match one character of (not of) seq.
func fnmatch(pattern, name string) bool {
	if plainGlob(pattern) {
		return matchPlain(pattern, name)
	}
	re := compiledGlob(pattern)
	return re != nil && re.MatchString(name)
}

// plainGlob reports a pattern of ASCII without a class: only "*", "?" and literal bytes, the
// shape of nearly every python_files pattern (test_*.py, *_test.py). matchPlain matches those
// without a regular expression: the first tier asks about every file of the repository, and
// the compiled pattern's match allocated and scanned per file.
func plainGlob(pattern string) bool {
	for i := 0; i < len(pattern); i++ {
		if pattern[i] >= utf8.RuneSelf || pattern[i] == '[' {
			return false
		}
	}
	return true
}

// matchPlain is what translate(pattern)'s expression matches, for a plainGlob pattern: "*"
// any run of characters, "?" one character (a UTF-8 sequence, or one byte that is not one, as
// the regexp package reads text), anything else itself, the whole name. A "*" gives back one
// character at a time, never part of one.
func matchPlain(pattern, name string) bool {
	px, nx := 0, 0
	starPx, starNx := -1, 0 // after the last "*": where to resume in pattern and in name
	for px < len(pattern) || nx < len(name) {
		if px < len(pattern) {
			switch c := pattern[px]; c {
			case '*':
				starPx, starNx = px+1, nx
				px++
				continue
			case '?':
				if nx < len(name) {
					_, w := utf8.DecodeRuneInString(name[nx:])
					px, nx = px+1, nx+w
					continue
				}
			default:
				if nx < len(name) && name[nx] == c {
					px, nx = px+1, nx+1
					continue
				}
			}
		}
		if starPx < 0 || starNx >= len(name) {
			return false
		}
		_, w := utf8.DecodeRuneInString(name[starNx:])
		starNx += w
		px, nx = starPx, starNx
	}
	return true
}

// maxCachedGlobs bounds the compiled patterns kept: a repository configures a handful, so
// the bound only matters against a configuration that names thousands.
const maxCachedGlobs = 256

var (
	globsMu sync.Mutex
	globs   = map[string]*regexp.Regexp{}
)

// compiledGlob is pattern translated and compiled, nil when it does not compile. Patterns
// are compiled once and kept: the first tier asks about every file of the repository, and
// compiling per file made garbage in proportion to the repository's size.
func compiledGlob(pattern string) *regexp.Regexp {
	globsMu.Lock()
	re, ok := globs[pattern]
	globsMu.Unlock()
	if ok {
		return re
	}
	re, err := regexp.Compile(translate(pattern))
	if err != nil {
		re = nil
	}
	globsMu.Lock()
	if len(globs) < maxCachedGlobs {
		globs[pattern] = re
	}
	globsMu.Unlock()
	return re
}

func translate(pattern string) string {
	var b strings.Builder
	b.WriteString(`(?s)^`)
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		switch c {
		case '*':
			b.WriteString(`.*`)
		case '?':
			b.WriteString(`.`)
		case '[':
			class, next := fnmatchClass(pattern, i)
			b.WriteString(class)
			i = next
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString(`$`)
	return b.String()
}

// ShellJoin joins words so that a shell-like split (pytest's for -o addopts=...) gives them
// back.
func ShellJoin(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		if w != "" && !strings.ContainsAny(w, " \t\n'\"\\") {
			out[i] = w
			continue
		}
		out[i] = "'" + strings.ReplaceAll(w, "'", `'"'"'`) + "'"
	}
	return strings.Join(out, " ")
}
