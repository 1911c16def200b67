package pipeline

import (
	"context"
	"os"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/ticketd/ticketd/pipeline/discover"
	"github.com/ticketd/ticketd/pipeline/validate"
)

// testTree is the worktree as the checks see it: where the repository keeps its tests, and
// its files as they are at the base commit, which the checks set in place of the change's
// (see baseview.go and swap.go).
type testTree struct {
	dir string
	// baseFile reads a path at the base commit (Job.BaseFile); nil when it cannot.
	baseFile func(ctx context.Context, path string) (data []byte, found bool, err error)
	given    *discover.Tests // Job.Tests, read at the base commit; nil: read from dir once
	// imports is the base's import graph (Job.Imports); nil: none.
	imports *validate.BaseImports
	checks  []validate.Check // the job's checks, which say how the runners find tests
	// baseline is the checks' run at the base commit (Job.Baseline): which data files the
	// base's tests read (see isTestInput).
	baseline []validate.Result
	once     sync.Once
	found    *discover.Tests
	// inputOnce and input are the data files the base's tests read themselves, read once.
	inputOnce sync.Once
	input     map[string]bool
	// listOnce and lists are the folders the base's tests list themselves, read once.
	listOnce sync.Once
	lists    map[string]bool
	// watch is what a check may not change (watched), read once.
	watchOnce sync.Once
	watch     []string
}

func newTestTree(job Job) *testTree {
	return &testTree{dir: job.Dir, baseFile: job.BaseFile, given: job.Tests, checks: job.Checks, imports: job.Imports, baseline: job.Baseline}
}

// tests is where the repository keeps its tests: Job.Tests, read at the base commit with the
// baseline, else read once from the worktree's configuration and the job's checks.
func (t *testTree) tests() *discover.Tests {
	t.once.Do(func() {
		t.found = t.given
		if t.found == nil {
			t.found = discover.FromDir(t.dir, validate.DiscoverOptions(t.checks))
		}
	})
	return t.found
}

// isTestPath reports whether a path belongs to the tests rather than the code under test: a
// test module as the repository's runners find it (tests.py where python_files says so, a
// root test.py that unittest runs), a conftest.py, a doctest file, or anything in a test
// folder or testpath (see discover.Tests.IsTestPath), or a data file the base's tests read
// themselves (isTestInput). The evidence step keeps these as the change left them when it
// sets the code back to the base commit.
func (t *testTree) isTestPath(p string) bool { return t.tests().IsTestPath(p) || t.isTestInput(p) }

// isTestInput reports whether p is a data file outside the tests that the base's tests read
// themselves: in the base run a test module, conftest.py or helper of the tests opened it
// (validate.FileRead), not only the code under test. Such a file holds what the tests
// expect (golden output, expected values), so it is part of the tests: the gate judges the
// change with its base version, as it does a test file the change edits, a check may not
// rewrite it, and a change to it is a test change. A data file the tests reach only through
// the code (a table the code loads) is the code's: a fix may correct it.
//
// A file the change adds, or edits, in a folder the base's tests list themselves (they read
// golden/*.json, whatever is there) is the tests' too, Python source aside: a new
// golden/zz.json would stand over the base's expected values.
func (t *testTree) isTestInput(p string) bool {
	return t.inputs()[p] || t.listed()[path.Dir(p)] && !strings.HasSuffix(p, ".py")
}

// listed are the folders outside the tests that the base's tests list themselves
// (validate.Result.Lists), read once.
func (t *testTree) listed() map[string]bool {
	t.listOnce.Do(func() {
		t.lists = map[string]bool{}
		for _, r := range t.baseline {
			for _, l := range r.Lists {
				if l.File != "." && !t.tests().IsTestPath(l.File) && t.tests().IsTestPath(l.By) {
					t.lists[l.File] = true
				}
			}
		}
	})
	return t.lists
}

// inputs are the data files the base's tests read themselves (isTestInput), read once.
func (t *testTree) inputs() map[string]bool {
	t.inputOnce.Do(func() {
		t.input = map[string]bool{}
		for _, r := range t.baseline {
			for _, rd := range r.Reads {
				if !t.tests().IsTestPath(rd.File) && t.tests().IsTestPath(rd.By) {
					t.input[rd.File] = true
				}
			}
		}
	})
	return t.input
}

// testInputs are the paths of changed that are data files the base's tests read
// (isTestInput).
func (t *testTree) testInputs(changed []string) []string {
	return slices.DeleteFunc(slices.Clone(changed), func(p string) bool { return !t.isTestInput(p) })
}

// testPaths are the paths of changed that belong to the tests (isTestPath) or configure the
// checks: what inTestView sets to the base commit.
func (t *testTree) testPaths(changed []string) []string {
	var out []string
	for _, p := range changed {
		if (t.isTestPath(p) || isInfraPath(p)) && !hasGitElement(p) {
			out = append(out, p)
		}
	}
	return out
}

// changedTestModules are the changed paths that are test modules (as the repository's test
// runners find them, see tests) and exist now.
//
// A test module that read a changed data file of the tests at the base commit
// (validate.Result.Reads) counts too: jmespath's regression tests are cases added to
// tests/compliance/*.json, which tests/test_compliance.py turns into parametrized tests. Run
// as the change left the data, its new cases are the change's new tests (they must fail at
// the base commit's code to be evidence); the gate still judges the data in its base version.
func (t *testTree) changedTestModules(changed []string) []string {
	var out []string
	add := func(p string) {
		if slices.Contains(out, p) || hasGitElement(p) {
			return
		}
		if fi, err := os.Lstat(t.dir + "/" + p); err == nil && fi.Mode().IsRegular() {
			out = append(out, p)
		}
	}
	data := map[string]bool{}
	for _, p := range changed {
		switch {
		case t.tests().IsTestFile(p):
			add(p)
		case !strings.HasSuffix(p, ".py") && t.isTestPath(p) && !isInfraPath(p):
			data[p] = true
		}
	}
	if len(data) == 0 {
		return out
	}
	for _, r := range t.baseline {
		for _, rd := range r.Reads {
			if data[rd.File] && t.tests().IsTestFile(rd.By) {
				add(rd.By)
			}
		}
	}
	return out
}

// editedTests are the test paths of changed that the base commit has: edits to existing
// tests (or their removal), which the report lists and never counts as evidence.
func (t *testTree) editedTests(ctx context.Context, changed []string) []string {
	var out []string
	for _, p := range changed {
		if !t.isTestPath(p) || isInfraPath(p) || t.baseFile == nil {
			continue
		}
		if _, found, err := t.baseFile(ctx, p); err == nil && found {
			out = append(out, p)
		}
	}
	return out
}

// newTestIDs are the test functions of test module file that its base version lacks.
func (t *testTree) newTestIDs(ctx context.Context, file string) []string {
	cur := t.tests().TestIDs(file, readLimited(t.dir+"/"+file, maxIndexBytes))
	if t.baseFile == nil {
		return nil
	}
	base, found, err := t.baseFile(ctx, file)
	if err != nil {
		return nil
	}
	var old []string
	if found {
		old = t.tests().TestIDs(file, base)
	}
	return slices.DeleteFunc(cur, func(id string) bool { return slices.Contains(old, id) })
}

// atBase runs fn with every changed path that is not a test (isTestPath) as it is at the base
// commit — its base content, or absent when the change added it — and then puts each back
// as the change left it (see swapToBase).
func (t *testTree) atBase(ctx context.Context, changed []string, fn func()) error {
	var code []string
	for _, p := range changed {
		if !t.isTestPath(p) {
			code = append(code, p)
		}
	}
	return t.swapToBase(ctx, code, fn)
}

// inTestView runs fn with the tests as the base commit has them: every changed test path
// and configuration file set to its base version, and the test files the change added
// absent. The code is the change's. What fn runs there is the base's test suite judging the
// change: a test the change edited, skipped, weakened or deleted speaks in its base version,
// and a test module the change added cannot patch the others. Without changed test paths fn
// runs in the tree as it is.
func (t *testTree) inTestView(ctx context.Context, changed []string, fn func()) error {
	paths := t.testPaths(changed)
	if len(paths) == 0 {
		fn()
		return nil
	}
	return t.swapToBase(ctx, paths, fn)
}
