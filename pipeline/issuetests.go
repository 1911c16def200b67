package pipeline

import (
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"github.com/ticketd/ticketd/pipeline/discover"
)

// The tests an issue names are the ticket's targets: a fix must make them pass. Users name
// them as pytest prints them — a node id (tests/test_x.py::TestC::test_y, often in a
// "FAILED ... - AssertionError" summary line), a traceback frame (File ".../tests/test_x.py",
// line 9, in test_y), a section header (____ TestC.test_y ____) — or by the bare function
// name. Only tests that exist in the repository count: a user's own test in their
// application, or a name that matches nothing, binds nothing.

// Bounds of the test index: files walked, bytes read of each, and how many tests one bare
// name may match before it is too ambiguous to bind.
const (
	maxIndexFiles    = 5000
	maxIndexBytes    = 512 << 10
	maxBareNameMatch = 3
	maxIssueTests    = 10
)

var (
	// nodeIDRe matches a pytest node id: a .py path, then ::name parts, with parameters.
	nodeIDRe = regexp.MustCompile(`([A-Za-z0-9_./\\-]*[A-Za-z0-9_]\.py)((?:::[A-Za-z_][A-Za-z0-9_]*)+)(\[[^\]\s]*\])?`)
	// frameRe matches a Python traceback frame: File "path.py", line 12, in name.
	frameRe = regexp.MustCompile(`File "([^"]+\.py)", line \d+, in (test[A-Za-z0-9_]*)`)
	// pytestFrameRe matches pytest's short frame lines: path.py:12: in test_name.
	pytestFrameRe = regexp.MustCompile(`([A-Za-z0-9_./\\-]+\.py):\d+: in (test[A-Za-z0-9_]*)`)
	// headerRe matches pytest's failure section headers: ____ TestC.test_y[1] ____.
	headerRe = regexp.MustCompile(`_{3,} ((?:[A-Za-z_][A-Za-z0-9_]*\.)?test[A-Za-z0-9_]*)(?:\[[^\]\s]*\])? _{3,}`)
	// bareRe matches a bare test function name.
	bareRe = regexp.MustCompile(`\btest_[A-Za-z0-9_]+\b`)
)

// IssueTests returns the pytest node ids of the repository's tests (in dir, found as tests
// says; nil means pytest's defaults) that text names, in the order it names them, at most
// maxIssueTests.
func IssueTests(dir, text string, tests *discover.Tests) []string {
	if !strings.Contains(text, "test") {
		return nil
	}
	idx := indexTests(dir, tests)
	var out []string
	covered := map[string]bool{} // function names already bound to a test
	add := func(ids ...string) {
		for _, id := range ids {
			name := id[strings.LastIndex(id, "::")+2:]
			name, _, _ = strings.Cut(name, "[")
			covered[name] = true
			if len(out) < maxIssueTests && !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
	}
	for _, m := range nodeIDRe.FindAllStringSubmatch(text, -1) {
		if file := idx.file(m[1]); file != "" {
			id := file + m[2]
			if idx.has(id) {
				add(id + m[3])
			}
		}
	}
	for _, re := range []*regexp.Regexp{frameRe, pytestFrameRe} {
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			if file := idx.file(m[1]); file != "" {
				add(idx.inFile(file, m[2])...)
			}
		}
	}
	for _, m := range headerRe.FindAllStringSubmatch(text, -1) {
		class, name, ok := strings.Cut(m[1], ".")
		if !ok {
			class, name = "", m[1]
		}
		if ids := idx.named(class, name); len(ids) <= maxBareNameMatch {
			add(ids...)
		}
	}
	for _, name := range bareRe.FindAllString(text, -1) {
		if covered[name] {
			continue
		}
		if ids := idx.named("", name); len(ids) <= maxBareNameMatch {
			add(ids...)
		}
	}
	return out
}

// testIndex is what the repository's test modules define: node ids by file.
type testIndex struct {
	files []string            // test modules, slash-separated, relative to the root
	ids   map[string][]string // file → node ids (file::name, file::Class::name)
}

// indexTests reads the repository's test modules (as tests finds them) for their test
// functions, top level and in classes.
func indexTests(dir string, tests *discover.Tests) testIndex {
	idx := testIndex{ids: map[string][]string{}}
	n := 0
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		name := d.Name()
		if d.IsDir() {
			if p != dir && (strings.HasPrefix(name, ".") || name == "__pycache__" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || !d.Type().IsRegular() || !strings.HasSuffix(name, ".py") {
			return nil
		}
		if rel = filepath.ToSlash(rel); !tests.IsTestFile(rel) {
			return nil
		}
		if n++; n > maxIndexFiles {
			return filepath.SkipAll
		}
		idx.files = append(idx.files, rel)
		idx.ids[rel] = tests.TestIDs(rel, readLimited(p, maxIndexBytes))
		return nil
	})
	slices.Sort(idx.files)
	return idx
}

// file resolves a path as a user wrote it (relative, absolute on their machine, with
// backslashes) to a test module of the repository: the longest suffix of its path elements
// that names one; "" when none does.
func (x testIndex) file(p string) string {
	p = strings.ReplaceAll(p, `\`, "/")
	parts := strings.Split(strings.Trim(p, "/"), "/")
	for i := range parts {
		cand := strings.Join(parts[i:], "/")
		if _, ok := x.ids[cand]; ok {
			return cand
		}
	}
	// A bare file name: the one test module of that name, when it is unique.
	if len(parts) == 1 {
		var found []string
		for _, f := range x.files {
			if path.Base(f) == parts[0] {
				found = append(found, f)
			}
		}
		if len(found) == 1 {
			return found[0]
		}
	}
	return ""
}

func (x testIndex) has(id string) bool {
	file, _, _ := strings.Cut(id, "::")
	return slices.Contains(x.ids[file], id)
}

// inFile returns the ids of test function name in file, in any class.
func (x testIndex) inFile(file, name string) []string {
	var out []string
	for _, id := range x.ids[file] {
		if strings.HasSuffix(id, "::"+name) {
			out = append(out, id)
		}
	}
	return out
}

// named returns the ids of every test function called name (in class, when given).
func (x testIndex) named(class, name string) []string {
	var out []string
	for _, f := range x.files {
		for _, id := range x.ids[f] {
			if class != "" && strings.HasSuffix(id, "::"+class+"::"+name) || class == "" && strings.HasSuffix(id, "::"+name) {
				out = append(out, id)
			}
		}
	}
	return out
}

// TestFunctions lists the node ids of the tests in the Python source of file by pytest's
// default names; a repository's own settings are discover.Tests.TestIDs'.
func TestFunctions(file string, src []byte) []string {
	return discover.Default().TestIDs(file, src)
}

// readLimited reads up to n bytes of the regular file p; nil when it cannot. p is in a
// worktree the maker and the checks wrote: it is opened without following a symlink or
// waiting on a FIFO, and must be a regular file once open, so swapping it in between
// cannot hang the daemon or lead it elsewhere.
func readLimited(p string, n int64) []byte {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	data, _ := io.ReadAll(io.LimitReader(f, n))
	return data
}
