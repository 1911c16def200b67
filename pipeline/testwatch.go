package pipeline

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ticketd/ticketd/pipeline/validate"
)

// A check cannot rewrite the tests that judge it. The code under test runs inside the test
// runner, in a worktree it may write: it could rewrite a test module the runner has not
// collected yet, or a conftest.py, so that the base's test passes in a weakened form, and put
// it back before the run ends. The Python files of the base's tests and the test
// configuration are stamped before each check run and compared after; a run that changed
// one judged nothing (validate.Result.Abort), and the attempt stops saying which file.

// maxWatched bounds the files stamped around a check run.
const maxWatched = 20_000

// watched are the worktree's files a check may not change: the Python files of its tests
// (test modules, conftest.py files, helpers in test folders), the data files they read
// themselves (isTestInput), the folders they list themselves (golden/, whose entries they
// read) and the test configuration files at its root, as the base commit has them outside the change. Read once per
// attempt; the files the change added are its own, and not watched.
func (t *testTree) watched() []string {
	t.watchOnce.Do(func() {
		var files []string
		if t.imports != nil {
			files = t.imports.Files()
		} else {
			files = pythonFiles(t.dir)
		}
		for _, p := range files {
			if t.isTestPath(p) || path.Base(p) == "conftest.py" {
				t.watch = append(t.watch, p)
			}
		}
		for p := range t.inputs() {
			t.watch = append(t.watch, p)
		}
		// A folder the tests list: a file made or removed in it during the run changes
		// what they find there.
		for p := range t.listed() {
			t.watch = append(t.watch, p)
		}
		for name := range infraNames {
			if fi, err := os.Lstat(filepath.Join(t.dir, name)); err == nil && fi.Mode().IsRegular() {
				t.watch = append(t.watch, name)
			}
		}
		slices.Sort(t.watch)
		t.watch = t.watch[:min(len(t.watch), maxWatched)]
	})
	return t.watch
}

// pythonFiles lists the .py files under dir, slash-separated and relative to it, skipping
// hidden folders (.git, .venv) and caches: the watch's list when no import scan of the base
// was made.
func pythonFiles(dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if p != dir && (strings.HasPrefix(d.Name(), ".") || d.Name() == "__pycache__" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if rel, err := filepath.Rel(dir, p); err == nil && strings.HasSuffix(rel, ".py") && d.Type().IsRegular() {
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
}

// fileStamp is what a write to a file changes: its size and times, and on Linux its inode
// and change time, which no process without privilege can set back.
type fileStamp struct {
	present bool
	size    int64
	mod     time.Time
	perm    fs.FileMode
	ino     uint64
	change  int64
}

// rewritten reports whether the file stamped a was written, replaced or removed by the time
// of b. A change time that moved with the mode alone is the sandbox granting the checks'
// group the worktree (a ticketd running as root, on a file system without default ACLs),
// not a write.
func (a fileStamp) rewritten(b fileStamp) bool {
	if a.present != b.present || a.size != b.size || !a.mod.Equal(b.mod) || a.ino != b.ino {
		return true
	}
	return a.change != b.change && a.perm == b.perm
}

func stampOf(dir, p string) fileStamp {
	fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p)))
	if err != nil {
		return fileStamp{}
	}
	ino, change := inodeChange(fi)
	return fileStamp{present: true, size: fi.Size(), mod: fi.ModTime(), perm: fi.Mode(), ino: ino, change: change}
}

// stamps stamps each of files in dir.
func stamps(dir string, files []string) []fileStamp {
	out := make([]fileStamp, len(files))
	for i, p := range files {
		out[i] = stampOf(dir, p)
	}
	return out
}

// watchRun runs checks through run and, when one of the tree's watched files changed while
// they ran, marks every result as judging nothing.
func (t *testTree) watchRun(checks []validate.Check, run func() []validate.Result) []validate.Result {
	if !slices.ContainsFunc(checks, runsCode) {
		return run()
	}
	files := t.watched()
	before := stamps(t.dir, files)
	res := run()
	after := stamps(t.dir, files)
	var changed []string
	for i := range files {
		if before[i].rewritten(after[i]) {
			changed = append(changed, files[i])
		}
	}
	if len(changed) == 0 {
		return res
	}
	reason := fmt.Sprintf("a check changed %s, of the base's tests or their configuration, while it ran (code under test rewriting the tests that judge it); its results cannot be trusted",
		strings.Join(clipList(changed, 5), ", "))
	out := slices.Clone(res)
	for i := range out {
		out[i].Passed = false
		out[i].Abort = reason
		out[i].Summary = reason + ". " + out[i].Summary
	}
	return out
}

// runsCode reports whether a check runs the code under test (a test runner or a Python
// command), and so can write the worktree from inside it.
func runsCode(c validate.Check) bool {
	return c.Kind == validate.KindPytest || c.Kind == validate.KindUnittest || c.Kind == validate.KindPython
}
