package validate

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ticketd/ticketd/pipeline/discover"
	"github.com/ticketd/ticketd/pipeline/sandbox"
)

// An Import is one module a Python file names in an import statement. Module is the dotted
// name after `import` or `from` (without the leading dots); Level counts those dots (0 for an
// absolute import); Names are what a `from` import takes from it (submodules or attributes:
// a static scan cannot tell which).
type Import struct {
	Module string
	Level  int
	Names  []string
	Star   bool // from module import *
}

// maxScanBytes bounds how much of one Python file the import scan reads: imports sit at the
// top, and a generated multi-megabyte file must not slow every submit.
const maxScanBytes = 256 << 10

// ParseImports returns the import statements of Python source: `import a.b as c, d`,
// `from x import y, z`, `from . import y`, `from ..p import (y,\n z)`, indented ones (inside
// functions or try blocks) included. It reads lines, not a syntax tree, so an import written
// in a string may be counted: the caller uses the answer to run more tests, never fewer.
func ParseImports(src []byte) []Import {
	var out []Import
	var pending strings.Builder // a statement continued by "(" or "\"
	open := false
	// Lines are sliced out of src, not copied: only an import line becomes a string, so a
	// scan of ten thousand files allocates for their imports, not for their text.
	for rest := src; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		if i := bytes.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		if open {
			pending.WriteString(" ")
			pending.Write(line)
			if bytes.Contains(line, []byte(")")) || (!strings.Contains(pending.String(), "(") && !bytes.HasSuffix(bytes.TrimSpace(line), []byte("\\"))) {
				open = false
				out = append(out, parseStatement(pending.String())...)
				pending.Reset()
			}
			continue
		}
		trimmed := bytes.TrimSpace(line)
		if !bytes.HasPrefix(trimmed, []byte("import ")) && !bytes.HasPrefix(trimmed, []byte("from ")) {
			continue
		}
		if (bytes.Contains(trimmed, []byte("(")) && !bytes.Contains(trimmed, []byte(")"))) || bytes.HasSuffix(trimmed, []byte("\\")) {
			open = true
			pending.Write(trimmed)
			continue
		}
		out = append(out, parseStatement(string(trimmed))...)
	}
	if open {
		out = append(out, parseStatement(pending.String())...)
	}
	return out
}

// statementSpacer turns an import statement's continuations and parentheses into spaces.
var statementSpacer = strings.NewReplacer("\\", " ", "(", " ", ")", " ", "\t", " ")

// parseStatement parses one logical import line (semicolon-separated statements allowed).
func parseStatement(s string) []Import {
	var out []Import
	for _, stmt := range strings.Split(s, ";") {
		stmt = statementSpacer.Replace(stmt)
		fields := strings.Fields(stmt)
		if len(fields) < 2 {
			continue
		}
		switch fields[0] {
		case "import":
			for _, part := range strings.Split(strings.Join(fields[1:], " "), ",") {
				if name, ok := dotted(firstField(part)); ok {
					out = append(out, Import{Module: name})
				}
			}
		case "from":
			mod := fields[1]
			level := len(mod) - len(strings.TrimLeft(mod, "."))
			mod = mod[level:]
			if mod != "" {
				if _, ok := dotted(mod); !ok {
					continue
				}
			} else if level == 0 {
				continue
			}
			imp := Import{Module: mod, Level: level}
			imp.Star = len(fields) == 4 && fields[2] == "import" && fields[3] == "*"
			if len(fields) >= 4 && fields[2] == "import" {
				for _, part := range strings.Split(strings.Join(fields[3:], " "), ",") {
					if name, ok := dotted(firstField(part)); ok && !strings.Contains(name, ".") {
						imp.Names = append(imp.Names, name)
					}
				}
			}
			out = append(out, imp)
		}
	}
	return out
}

func firstField(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// dotted reports whether s is a dotted Python name (a.b.c), returning it.
func dotted(s string) (string, bool) {
	if s == "" {
		return "", false
	}
	for _, part := range strings.Split(s, ".") {
		if part == "" {
			return "", false
		}
		for i, r := range part {
			ok := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || r > 127 || (i > 0 && r >= '0' && r <= '9')
			if !ok {
				return "", false
			}
		}
	}
	return s, true
}

// IsTestFile reports whether a slash-separated path is a pytest test file by pytest's default
// names (test_*.py, *_test.py); a repository's own settings are discover.Tests'.
func IsTestFile(p string) bool { return defaultTests.IsTestFile(p) }

var defaultTests = discover.Default()

// skipDirs are never scanned for Python sources: tools' caches, environments, VCS data.
var skipDirs = []string{".git", ".venv", "venv", "node_modules", "__pycache__", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", "site-packages", "build", "dist"}

// ImportGraph is the repository's Python files and, for each, the repository files its
// imports resolve to. Paths are slash-separated and relative to the repository root.
type ImportGraph struct {
	// Tests says which files are test modules (the repository's discovery); nil means
	// pytest's default names.
	Tests *discover.Tests
	root  string
	// files maps each Python file to itself: the edges hold these strings, not copies.
	files   map[string]string
	dirs    map[string]bool // directories holding Python files, for namespace packages
	imports map[string][]string
	// pkgRoots maps a top-level package's name to the folders holding it that are not
	// already roots of every import (the root, src/): python/src for cucumber_expressions in
	// a monorepo's python/ folder, lib for PyYAML's yaml. A check imports from them once a
	// folder is on its path (package_dir, a project folder of its own), so an import the
	// usual roots do not resolve is looked for there too.
	pkgRoots map[string][]string
	// literals are the module-like string literals of every file (ParseDynamic): what
	// DynamicReason reads; opaque are, for each file that loads modules by computed names,
	// where it does (opaque.go): what the walk follows.
	literals map[string]bool
	opaque   map[string][]opaqueSite
	// stars are, for each file with star imports, the modules whose names they take
	// (starimports.go); top is the hash of each file's top-level code as scanned
	// (topLevelSig), baseTop the base commit's, nil without a base scan: a change is walked
	// by names only where its file's top-level code is the base's.
	stars   map[string][]string
	top     map[string]uint64
	baseTop map[string]uint64
}

// ScanImports reads every .py file under dir (skipping environments and caches, not
// following symlinks) and resolves its imports to files of the repository. Roots tried for
// an absolute import: the repository root, src/, and the importing file's directory and its
// parents (pytest's rootdir insertion for test files without __init__.py). Paths in gone
// (files the change deleted) count as modules, so the tests that still import them are found.
func ScanImports(dir string, gone ...string) (*ImportGraph, error) {
	g := &ImportGraph{root: dir, files: map[string]string{}, dirs: map[string]bool{}, imports: map[string][]string{}, literals: map[string]bool{}, opaque: map[string][]opaqueSite{},
		stars: map[string][]string{}, top: map[string]uint64{}}
	for _, p := range gone {
		if p = path.Clean(filepath.ToSlash(p)); strings.HasSuffix(p, ".py") {
			g.files[p] = p
		}
	}
	s := &importScan{g: g}
	if err := filepath.WalkDir(dir, s.visit); err != nil {
		return nil, fmt.Errorf("scan python imports under %s: %w", dir, err)
	}
	g.pkgRoots = packageRoots(g.files)
	// Every file is known: each is read, parsed and linked in turn, so only one file's
	// imports are held at a time, not the whole repository's.
	for _, rel := range s.py {
		s.scan(rel)
	}
	return g, nil
}

// packageRoots finds the top-level packages (a folder with __init__.py whose parent has
// none) outside the root and src/, by name: the folders that hold them.
func packageRoots(files map[string]string) map[string][]string {
	out := map[string][]string{}
	for f := range files {
		pkg, ok := strings.CutSuffix(f, "/__init__.py")
		if !ok {
			continue
		}
		parent := path.Dir(pkg)
		if parent == "." || parent == "src" {
			continue
		}
		if _, nested := files[parent+"/__init__.py"]; nested {
			continue
		}
		name := path.Base(pkg)
		if !slices.Contains(out[name], parent) {
			out[name] = append(out[name], parent)
		}
	}
	for _, roots := range out {
		slices.Sort(roots)
	}
	return out
}

// importScan is one ScanImports walk: it records the graph's files and folders, then reads
// each file's imports and links them.
type importScan struct {
	g   *ImportGraph
	py  []string // the regular .py files the walk found, in walk order
	buf []byte   // one read buffer for every file of the scan
}

// visit is the WalkDir step. Only the root being unreadable fails the scan.
func (s *importScan) visit(p string, d fs.DirEntry, err error) error {
	dir := s.g.root
	if err != nil {
		if p == dir {
			return err
		}
		return nil // an unreadable corner of the tree: skip it, the full suite still runs
	}
	if d.IsDir() {
		if p != dir && (slices.Contains(skipDirs, d.Name()) || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		return nil
	}
	if !d.Type().IsRegular() || !strings.HasSuffix(d.Name(), ".py") {
		return nil
	}
	rel, err := filepath.Rel(dir, p)
	if err != nil {
		return nil
	}
	// Rel slices p, the walk's absolute path: the graph keeps a copy of the relative part
	// only, not every file's full path.
	rel = strings.Clone(filepath.ToSlash(rel))
	s.g.files[rel] = rel
	s.py = append(s.py, rel)
	for d := path.Dir(rel); d != "." && !s.g.dirs[d]; d = path.Dir(d) {
		s.g.dirs[d] = true
	}
	return nil
}

// scan reads one file of the walk and links its imports; a file that can no longer be read
// (or was swapped for something that is not a regular file) has none.
func (s *importScan) scan(rel string) {
	src, err := readHeadInto(filepath.Join(s.g.root, filepath.FromSlash(rel)), maxScanBytes, s.buf[:0])
	if err != nil {
		return
	}
	s.buf = src
	s.g.top[rel] = topLevelSig(src)
	if imps := ParseImports(src); len(imps) > 0 {
		s.g.linkFile(rel, imps)
	}
	if scanDynamic(src, s.g.addLiteral) {
		s.g.opaque[rel] = opaqueSites(src)
	}
}

// addLiteral keeps a module-like string literal of the repository (once).
func (g *ImportGraph) addLiteral(name []byte) {
	if !g.literals[string(name)] { // no allocation for the lookup
		g.literals[string(name)] = true
	}
}

// DynamicReason says why file (a module of the repository) may be loaded by name at run
// time in tests the import graph does not show: a string literal somewhere in the
// repository names it, or a file no scanned file imports loads modules by a computed name
// (opaque.go; a computed import in a file the graph sees loading is walked as an import by
// TestsAffectedBy). "" when neither.
func (g *ImportGraph) DynamicReason(file string) string {
	for _, n := range ModuleNames(file) {
		if g.literals[n] {
			return fmt.Sprintf("%s may be imported by name: the string %q appears in the repository's code", file, n)
		}
	}
	return g.opaqueReason(file)
}

// linkFile resolves file's imports, once every file is known, to the graph's edges.
func (g *ImportGraph) linkFile(file string, imps []Import) {
	var targets, stars []string
	for _, imp := range imps {
		if imp.Star {
			stars = append(stars, g.starTargets(file, imp)...)
		}
		for _, target := range g.resolve(file, imp) {
			if target != file && !slices.Contains(targets, target) {
				targets = append(targets, target)
			}
		}
	}
	if len(targets) > 0 {
		g.imports[file] = slices.Clip(targets)
	}
	if len(stars) > 0 {
		g.stars[file] = slices.Clip(stars)
	}
}

// readHead reads up to n bytes of p, which the checks may have swapped for a FIFO or a
// symlink to a device: such a file is an error, never a wait.
func readHead(p string, n int64) ([]byte, error) {
	return readHeadInto(p, n, nil)
}

// readHeadInto is readHead appending to buf (reused across the files of a scan).
func readHeadInto(p string, n int64, buf []byte) ([]byte, error) {
	f, err := sandbox.OpenReport(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	w := bytes.NewBuffer(buf)
	_, err = w.ReadFrom(io.LimitReader(f, n))
	return w.Bytes(), err
}

// resolve maps one import of file to the repository files it may load: the module itself,
// every package __init__.py on its way, and for a `from` import each name that is a
// submodule.
func (g *ImportGraph) resolve(file string, imp Import) []string {
	roots := g.importRoots(file, imp)
	var out []string
	var parts []string
	if imp.Module != "" {
		parts = strings.Split(imp.Module, ".")
	}
	var named [][]string
	for _, name := range imp.Names {
		named = append(named, append(slices.Clip(parts), name))
	}
	for _, root := range roots {
		// Every root that has the module counts: which one sys.path puts first depends on
		// pytest's import mode, and a wider answer only runs more tests.
		g.modulePath(root, parts, &out)
		for _, p := range named {
			g.modulePath(root, p, &out)
		}
	}
	return out
}

// importRoots are the folders an import of file is resolved from: for a relative import
// its package, else the repository root, src/, the file's folder and its parents, and the
// other folders the imported top-level package was found in (pkgRoots: python/src, lib).
func (g *ImportGraph) importRoots(file string, imp Import) []string {
	if imp.Level > 0 {
		d := path.Dir(file)
		for range imp.Level - 1 {
			d = path.Dir(d)
		}
		return []string{d}
	}
	roots := []string{".", "src"}
	for d := path.Dir(file); ; d = path.Dir(d) {
		roots = append(roots, d)
		if d == "." || d == "/" {
			break
		}
	}
	if top, _, _ := strings.Cut(imp.Module, "."); top != "" {
		roots = append(roots, g.pkgRoots[top]...)
	} else {
		for _, name := range imp.Names {
			roots = append(roots, g.pkgRoots[name]...)
		}
	}
	return roots
}

// modulePath appends to out the files that importing parts under root loads (each package's
// __init__.py, then the module) and reports whether the whole dotted name exists there. A
// directory without __init__.py is a namespace package: nothing to load, the walk goes on.
func (g *ImportGraph) modulePath(root string, parts []string, out *[]string) bool {
	if len(parts) == 0 {
		if init, ok := g.files[path.Join(root, "__init__.py")]; ok {
			*out = append(*out, init)
			return true
		}
		return g.dirs[root]
	}
	dir := root
	for i, part := range parts {
		dir = path.Join(dir, part)
		last := i == len(parts)-1
		if init, ok := g.files[dir+"/__init__.py"]; ok {
			*out = append(*out, init)
		} else if mod, ok := g.files[dir+".py"]; ok {
			*out = append(*out, mod)
			return true // a module: later parts are its attributes
		} else if !g.dirs[dir] {
			return false
		}
		if last {
			return true
		}
	}
	return false
}

// TestsAffectedBy returns the test files (by the graph's Tests) that a change of the given
// paths may affect, sorted: the changed test files themselves, the test files that import a
// changed module directly or through other repository modules, and every test file at or
// below a changed or reached conftest.py or package __init__.py. A changed module that
// others star-import is followed by its names instead where its top-level code did not
// change (starimports.go). A changed non-Python file affects no test by this scan.
func (g *ImportGraph) TestsAffectedBy(changed []string) []string {
	w := &nameWalk{g: g, reverse: g.importers(), full: map[string]bool{}, names: map[string]map[string]bool{}, srcs: map[string][]byte{}}
	for _, c := range g.seedChanged(changed, w.full) {
		// A module that others star-import, whose top-level code is the base's, is walked by
		// its names (starimports.go).
		if g.isTest(c) || path.Base(c) == "conftest.py" || path.Base(c) == "__init__.py" || !g.starTarget(c) {
			w.queue = append(w.queue, c)
			continue
		}
		src := w.source(c)
		names := changedNames(src)
		if src == nil || len(names) == 0 || !g.narrowable(c, src) {
			w.queue = append(w.queue, c)
			continue
		}
		delete(w.full, c)
		w.addNames(c, names)
	}
	for len(w.queue) > 0 {
		f := w.queue[0]
		w.queue = w.queue[1:]
		w.triggerOpaque(f)
		w.step(f)
	}
	var out []string
	for f := range w.full {
		if _, ok := g.files[f]; ok && g.isTest(f) && fileExists(g.root, f) {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out
}

// importers is the graph reversed: for each file, the files that import it.
func (g *ImportGraph) importers() map[string][]string {
	reverse := map[string][]string{}
	for file, targets := range g.imports {
		for _, t := range targets {
			reverse[t] = append(reverse[t], file)
		}
	}
	return reverse
}

// seedChanged marks the changed Python files reached and returns them as the walk's start.
// A changed conftest.py reaches every test file at or below its folder directly (a fixture
// is not imported).
func (g *ImportGraph) seedChanged(changed []string, reached map[string]bool) []string {
	var queue []string
	for _, c := range changed {
		c = path.Clean(filepath.ToSlash(c))
		if path.Base(c) == "conftest.py" {
			g.markTestsBelow(path.Dir(c), reached)
		}
		if strings.HasSuffix(c, ".py") && !reached[c] {
			reached[c] = true
			queue = append(queue, c)
		}
	}
	return queue
}

// markTestsBelow marks every test file at or below folder d reached.
func (g *ImportGraph) markTestsBelow(d string, reached map[string]bool) {
	for f := range g.files {
		if g.isTest(f) && (d == "." || strings.HasPrefix(f, d+"/")) {
			reached[f] = true
		}
	}
}

// isTest reports whether f is a test module by the graph's discovery.
func (g *ImportGraph) isTest(f string) bool {
	if g.Tests == nil {
		return IsTestFile(f)
	}
	return g.Tests.IsTestFile(f)
}

// TestFiles is how many of the scanned files are test modules.
func (g *ImportGraph) TestFiles() int {
	n := 0
	for f := range g.files {
		if g.isTest(f) {
			n++
		}
	}
	return n
}

func fileExists(root, rel string) bool {
	_, err := os.Lstat(filepath.Join(root, filepath.FromSlash(rel)))
	return err == nil
}
