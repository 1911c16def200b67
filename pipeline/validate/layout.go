package validate

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ticketd/ticketd/pipeline/discover"
)

// A src/ layout keeps the package in src/<pkg>/, so that the tests cannot import the
// checkout by accident: the project expects `pip install -e .` first. A checkout that
// nothing installs (a fresh worktree) then fails every test with "No module named pkg" —
// or, worse, imports the copy an editable install of the operator's clone points at, so
// the fix under test is never the code that runs. Python, pytest and unittest checks of such
// a repository get <worktree>/src on PYTHONPATH, unless something already puts it there:
// a pytest `pythonpath` setting, a conftest.py that edits sys.path, or the check's own
// env (PYTHONPATH set there, even to "", wins).

// Bounds of the layout scan: the test files read, and the bytes of each.
const (
	maxLayoutTestFiles = 400
	maxLayoutScanBytes = 64 << 10
)

// SrcLayout returns the packages of dir's package folder that its tests import, when nothing
// in the repository's configuration puts that folder on the path; nil otherwise. The folder
// is src/, or the one the packaging configuration names (packageFolder: PyYAML's lib/).
func SrcLayout(dir string) []string {
	_, pkgs := packageLayout(dir)
	return pkgs
}

// packageLayout is SrcLayout with the folder the packages are in: src/, or the one the
// packaging configuration names (packageFolder).
func packageLayout(dir string) (folder string, pkgs []string) {
	folder = packageFolder(dir)
	if pkgs = layoutPackages(dir, folder); len(pkgs) == 0 {
		return "", nil
	}
	return folder, pkgs
}

func layoutPackages(dir, folder string) []string {
	pkgs := srcPackages(filepath.Join(dir, filepath.FromSlash(folder)))
	if len(pkgs) == 0 || pathConfigured(dir) {
		return nil
	}
	// Any runner's idea of a test counts, and a test package's __init__.py too: its imports
	// are the tests' (tests/__init__.py importing the package for `from . import pkg`).
	s := &testImportScan{
		dir:      dir,
		tests:    discover.FromDir(dir, discover.Options{Pytest: [][]string{nil}, Unittest: [][]string{nil}}),
		imported: map[string]bool{},
	}
	_ = filepath.WalkDir(dir, s.visit)
	var out []string
	for _, p := range pkgs {
		if s.imported[p] {
			out = append(out, p)
		}
	}
	return out
}

// testImportScan collects the top-level modules that a repository's test files import,
// reading at most maxLayoutTestFiles of them.
type testImportScan struct {
	dir      string
	tests    *discover.Tests
	imported map[string]bool
	n        int // test files read
}

// visit is the WalkDir step: it skips hidden, cache and virtualenv folders, and reads the
// absolute imports of test files, conftest.py files and test packages' __init__.py.
func (s *testImportScan) visit(p string, d fs.DirEntry, err error) error {
	if err != nil {
		return nil
	}
	name := d.Name()
	if d.IsDir() {
		if p != s.dir && layoutSkipsDir(name) {
			return filepath.SkipDir
		}
		return nil
	}
	rel, err := filepath.Rel(s.dir, p)
	if err != nil || !d.Type().IsRegular() {
		return nil
	}
	if !s.isTestSource(filepath.ToSlash(rel), name) {
		return nil
	}
	if s.n++; s.n > maxLayoutTestFiles {
		return filepath.SkipAll
	}
	for _, imp := range ParseImports(readRegular(p, maxLayoutScanBytes)) {
		if imp.Level == 0 {
			top, _, _ := strings.Cut(imp.Module, ".")
			s.imported[top] = true
		}
	}
	return nil
}

// layoutSkipsDir names the folders the scan never enters: hidden ones, caches, installs.
func layoutSkipsDir(name string) bool {
	return strings.HasPrefix(name, ".") || name == "__pycache__" || name == "node_modules" || name == "venv"
}

// isTestSource reports whether the file rel (named name) holds imports the tests make.
func (s *testImportScan) isTestSource(rel, name string) bool {
	return s.tests.IsTestFile(rel) || name == "conftest.py" || s.tests.IsTestPackageInit(rel)
}

// SrcLayoutNote is the note a check's result carries when SrcLayout put folder (src, or
// the package folder the packaging configuration names) on its path.
func SrcLayoutNote(folder string, pkgs []string) string {
	why := ""
	if folder != "src" {
		why = " (the packaging configuration's package_dir)"
	}
	return folder + "/ put on PYTHONPATH: the tests import " + strings.Join(pkgs, ", ") +
		" from " + folder + "/" + why + ", and no pytest pythonpath setting or conftest.py puts it on the path; without it they would import an installed copy, or nothing (set env: {PYTHONPATH: ...} on the check to override)"
}

// srcPackages lists the importable names directly in src: folders holding Python files
// (regular or namespace packages) and modules.
func srcPackages(src string) []string {
	entries, err := os.ReadDir(src)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "__") {
			continue // hidden files, __pycache__, a stray __init__.py
		}
		switch {
		case e.IsDir() && !strings.Contains(name, ".") && !strings.Contains(name, "-") && holdsPackage(filepath.Join(src, name), 3):
			out = append(out, name)
		case e.Type().IsRegular() && strings.HasSuffix(name, ".py") && name != "setup.py" && name != "conftest.py":
			out = append(out, strings.TrimSuffix(name, ".py"))
		}
	}
	slices.Sort(out)
	return out
}

// holdsPackage reports whether dir is a package: it holds Python files, or it is a namespace
// package (src/zope/ without __init__.py) whose folders, down to depth levels, do.
func holdsPackage(dir string, depth int) bool {
	if hasPython(dir) {
		return true
	}
	if depth <= 1 {
		return false
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if name := e.Name(); e.IsDir() && !strings.HasPrefix(name, ".") && !strings.HasPrefix(name, "__") &&
			!strings.Contains(name, "-") && holdsPackage(filepath.Join(dir, name), depth-1) {
			return true
		}
	}
	return false
}

func hasPython(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".py") {
			return true
		}
	}
	return false
}

// pathConfigured reports whether the repository already says how its tests find the
// package: a pytest `pythonpath` option in any file pytest reads its configuration from,
// or a conftest.py at the root or in a test folder that edits sys.path.
func pathConfigured(dir string) bool {
	for _, f := range pytestConfigFiles {
		data := readRegular(filepath.Join(dir, f), 1<<20)
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			if key, _, ok := strings.Cut(strings.TrimSpace(sc.Text()), "="); ok && strings.TrimSpace(key) == "pythonpath" {
				return true
			}
		}
	}
	for _, c := range []string{"conftest.py", "tests/conftest.py", "test/conftest.py", "src/conftest.py"} {
		data := readRegular(filepath.Join(dir, filepath.FromSlash(c)), maxLayoutScanBytes)
		if bytes.Contains(data, []byte("sys.path")) {
			return true
		}
	}
	return false
}

// readRegular returns up to n bytes of the regular file p; nil when it cannot be read. A
// FIFO or a device where a configuration file should be must not hang the scan.
func readRegular(p string, n int64) []byte {
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	data, _ := readHead(p, n)
	return data
}

// pythonPathSet reports whether env (NAME=value pairs) sets PYTHONPATH.
func pythonPathSet(env map[string]string) bool {
	_, ok := env["PYTHONPATH"]
	return ok
}

// withSrcPath returns the Set pairs for a check of kind in dir: the check's PythonPath
// folders and, for a src/ layout nothing configures, src/, prepended to the PYTHONPATH the
// sandbox passes on (from base), and the note saying why src/ is there; nothing when the
// layout needs nothing or the check's env decides.
func withSrcPath(dir string, c Check, base []string) (set []string, note string) {
	switch c.Kind {
	case KindPytest, KindUnittest, KindPython:
	default:
		return nil, ""
	}
	if pythonPathSet(c.Env) {
		return nil, ""
	}
	folders, note := pathFolders(dir, c)
	if len(folders) == 0 && c.EnvDir == "" {
		return nil, ""
	}
	var parts []string
	for _, f := range folders {
		parts = append(parts, path.Join(filepath.ToSlash(dir), f))
	}
	if c.EnvDir != "" {
		// An environment may hold an editable install of the checkout it was built from:
		// the worktree comes first, whatever the test runner puts on the path by itself.
		parts = append(parts, filepath.ToSlash(dir))
	}
	value := strings.Join(parts, string(filepath.ListSeparator))
	for _, kv := range base {
		if v, ok := strings.CutPrefix(kv, "PYTHONPATH="); ok && v != "" {
			value += string(filepath.ListSeparator) + v
		}
	}
	return []string{"PYTHONPATH=" + value}, note
}

// pathFolders is the worktree folders, slash-separated and relative, that go first on a
// check's PYTHONPATH: its configured PythonPath (only folders inside the worktree), then
// src/ when the layout needs it, with the note saying so when ticketd chose it.
func pathFolders(dir string, c Check) (folders []string, note string) {
	for _, f := range c.PythonPath {
		if f = path.Clean(filepath.ToSlash(f)); !strings.HasPrefix(f, "..") && !path.IsAbs(f) && !slices.Contains(folders, f) {
			folders = append(folders, f)
		}
	}
	if folder, pkgs := packageLayout(dir); len(pkgs) > 0 && !slices.Contains(folders, folder) {
		folders = append(folders, folder)
		note = SrcLayoutNote(folder, pkgs)
	}
	if folder := packageFolder(dir); c.EnvDir != "" && len(srcPackages(filepath.Join(dir, filepath.FromSlash(folder)))) > 0 && !slices.Contains(folders, folder) {
		folders = append(folders, folder)
	}
	return folders, note
}

// envActivation is what running in the check's environment (EnvDir) sets: its bin/ first on
// the PATH the check would have (passed), and VIRTUAL_ENV, as activating it would.
func envActivation(c Check, passed []string) []string {
	if c.EnvDir == "" {
		return nil
	}
	pathValue := ""
	for _, kv := range passed {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathValue = v
		}
	}
	bin := filepath.Join(c.EnvDir, "bin")
	if pathValue != "" {
		bin += string(filepath.ListSeparator) + pathValue
	}
	return []string{"PATH=" + bin, "VIRTUAL_ENV=" + c.EnvDir}
}
