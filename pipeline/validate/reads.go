package validate

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/ticketd/ticketd/pipeline/discover"
	"github.com/ticketd/ticketd/pipeline/sandbox"
)

// A base test may read its expected values from a data file outside the test folders
// (pkg/data/expected.json, golden/output.txt). A change that rewrites such a file to match
// broken code would make the base's test pass in its base version. So every pytest run
// records which of the worktree's files its Python code opened for reading, and from which
// of the worktree's Python files (the innermost one on the stack): the base run's record
// tells the gate which data files the base's tests read themselves (pipeline's testTree),
// and those are judged in their base versions like the test files. A file the tests only
// read through the code under test (a data table the code loads) is the code's.
//
// The record is made by a pytest plugin that ticketd writes into the check's reports folder,
// outside the worktree, and loads with -p before any of the repository's code runs: a
// Python audit hook on "open".

// FileRead is one worktree file a test run opened for reading (File), and the innermost
// worktree Python file on the stack when it did (By), both relative to the worktree.
type FileRead struct {
	File string `json:"file"`
	By   string `json:"by"`
}

// readsPlugin is the module name of the recording plugin, unlikely to be a project's own.
const readsPlugin = "_ticketd_reads"

// readsFilePrefix names the files the plugin writes, one per process (pytest-xdist's
// workers load it too).
const readsFilePrefix = "ticketd-reads-"

// Bounds on what is read back: reads per run, files (processes) and bytes per file.
const (
	maxReads      = 20_000
	maxReadsFiles = 64
	maxReadsBytes = 4 << 20
)

// readsPluginSource records, in memory, each open for reading of a file under the working
// directory (the worktree) that is not Python source, with the innermost frame of a file
// under it ("R\tfile\tby" lines), and each write over, rename over or removal of a file
// there that existed before the run (not one the run made), with that frame and the test
// running ("W\tfile\tby\ttest"), and
// writes them out when pytest ends. It records nothing where Python has no audit hooks
// (before 3.8).
const readsPluginSource = `import os
import sys
import time

import pytest

_START = time.time()
_ROOT = os.path.join(os.getcwd(), "")
_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "` + readsFilePrefix + `%d.txt")
_MAX = 20000
_WRITE = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_seen = {}
_test = [""]


def _rel(path):
    path = os.path.normpath(os.path.join(os.getcwd(), os.fsdecode(os.fspath(path))))
    return path[len(_ROOT):] if path.startswith(_ROOT) else None


def _by():
    f = sys._getframe(2)
    while f is not None and not f.f_code.co_filename.startswith(_ROOT):
        f = f.f_back
    return None if f is None else f.f_code.co_filename[len(_ROOT):]


def _note(key):
    if "\n" not in key:
        _seen[key] = None


def _hook(event, args):
    if len(_seen) >= _MAX or event not in ("open", "os.rename", "os.remove"):
        return
    try:
        if event == "open":
            path, mode, flags = args
            if isinstance(path, int):
                return
            write = any(c in mode for c in "wax+") if mode is not None else flags & _WRITE
        else:
            path, write = args[1] if event == "os.rename" else args[0], True
            if isinstance(path, int):
                return
        rel = _rel(path)
        if rel is None:
            return
        if not write:
            if not rel.endswith((".py", ".pyc")):
                by = _by()
                if by is not None:
                    _note("R\t" + rel + "\t" + by)
        elif os.path.lexists(path) and os.lstat(path).st_mtime < _START:
            _note("W\t" + rel + "\t" + (_by() or "") + "\t" + _test[0])
    except Exception:
        pass


if hasattr(sys, "addaudithook"):
    sys.addaudithook(_hook)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _test[0] = item.nodeid
    try:
        yield
    finally:
        _test[0] = ""


def pytest_unconfigure(config):
    lines = list(_seen)
    if not lines:
        return
    try:
        with open(_OUT % os.getpid(), "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write("\n".join(lines) + "\n")
    except OSError:
        pass
`

// recordsReads reports whether a pytest command can load the recording plugin: an
// interpreter running pytest as a module reads PYTHONPATH unless -I or -E comes before -m.
func recordsReads(argv []string) bool {
	if !isModuleRun(argv, "pytest") {
		return len(argv) == 0 || !shebangIgnoresPath(argv[0])
	}
	for _, a := range argv[1:] {
		if a == "-m" {
			break
		}
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.ContainsAny(a[1:], "IE") {
			return false
		}
	}
	return true
}

// shebangIgnoresPath reports whether the script at path starts its interpreter with -I or
// -E (a `#!/usr/bin/python3 -I` console script), which ignores PYTHONPATH: pytest could not
// import the plugin and would stop at its start. Anything but a regular file is read as no
// script: never a FIFO's open or a device's read.
func shebangIgnoresPath(path string) bool {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	head := make([]byte, 256)
	n, _ := io.ReadFull(f, head)
	line, _, _ := strings.Cut(string(head[:n]), "\n")
	if !strings.HasPrefix(line, "#!") {
		return false
	}
	for _, a := range strings.Fields(line)[1:] {
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.ContainsAny(a[1:], "IE") {
			return true
		}
	}
	return false
}

// withReadsPlugin writes the recording plugin into the check's reports folder (host path
// reports, inner path inner), and returns argv loading it and env with that folder last on
// PYTHONPATH. On failure to write it, the run goes on unrecorded.
func withReadsPlugin(argv, env []string, reports, inner string) ([]string, []string) {
	if reports == "" || !recordsReads(argv) {
		return argv, env
	}
	if err := os.WriteFile(filepath.Join(reports, readsPlugin+".py"), []byte(readsPluginSource), 0o644); err != nil {
		return argv, env
	}
	// The last PYTHONPATH is the one the command gets (os/exec keeps the last of a repeated
	// name): the check's own, or the src/ layout's, after the one the daemon passes on.
	var path string
	env = slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		v, ok := strings.CutPrefix(kv, "PYTHONPATH=")
		if ok {
			path = v
		}
		return ok
	})
	if path == "" {
		path = inner // an empty entry would put the working directory on the path
	} else {
		path += string(os.PathListSeparator) + inner
	}
	return append(slices.Clone(argv), "-p", readsPlugin), append(env, "PYTHONPATH="+path)
}

// fileRewrite is a file of the worktree that a test run wrote over, renamed over or
// removed (File), the worktree file on the stack that did (By, "" when none) and the test
// running then (Test, "" outside a test: at collection).
type fileRewrite struct {
	File, By, Test string
}

// collectReads reads back what the plugin recorded in reports: each file read and by what,
// and each Python file rewritten, once each, sorted. Anything that is not the plugin's plain
// file, or is larger than it writes, is left unread.
func collectReads(reports string) ([]FileRead, []fileRewrite) {
	if reports == "" {
		return nil, nil
	}
	names, _ := filepath.Glob(filepath.Join(reports, readsFilePrefix+"*.txt"))
	seen := map[string]bool{}
	var reads []FileRead
	var writes []fileRewrite
	for _, name := range names[:min(len(names), maxReadsFiles)] {
		data, err := sandbox.ReadReport(name, maxReadsBytes)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() && len(reads)+len(writes) < maxReads {
			f := strings.Split(sc.Text(), "\t")
			if seen[sc.Text()] || len(f) < 3 || !local(f[1]) {
				continue
			}
			seen[sc.Text()] = true
			switch {
			case f[0] == "R" && len(f) == 3 && local(f[2]):
				reads = append(reads, FileRead{File: path.Clean(f[1]), By: path.Clean(f[2])})
			case f[0] == "W" && len(f) == 4:
				writes = append(writes, fileRewrite{File: path.Clean(f[1]), By: f[2], Test: f[3]})
			}
		}
	}
	slices.SortFunc(reads, func(a, b FileRead) int { return strings.Compare(a.File+"\x00"+a.By, b.File+"\x00"+b.By) })
	slices.SortFunc(writes, func(a, b fileRewrite) int { return strings.Compare(a.File+"\x00"+a.Test, b.File+"\x00"+b.Test) })
	return reads, writes
}

// local reports whether p is a non-empty slash-separated path inside the worktree.
func local(p string) bool { return p != "" && filepath.IsLocal(filepath.FromSlash(p)) }

// rewrittenTests are the rewrites of writes that hit the tests (test modules, conftest.py,
// helpers in test folders, as the check's discovery in dir finds them), in words: "test
// tests/test_a.py::test_x rewrote tests/test_b.py". A run of the base's tests that rewrites
// them cannot judge a change: every attempt's check would stop there (the gate stamps the
// base's tests around each run).
func rewrittenTests(dir string, c Check, writes []fileRewrite) []string {
	if len(writes) == 0 {
		return nil
	}
	tests := discover.FromDir(dir, DiscoverOptions([]Check{c}))
	var out []string
	for _, w := range writes {
		if !strings.HasSuffix(w.File, ".py") || !tests.IsTestPath(w.File) {
			continue
		}
		verb := "rewrote or removed"
		switch {
		case w.Test != "":
			out = append(out, fmt.Sprintf("test %s %s %s", w.Test, verb, w.File))
		case w.By != "":
			out = append(out, fmt.Sprintf("%s (as pytest collected it) %s %s", w.By, verb, w.File))
		default:
			out = append(out, fmt.Sprintf("the run %s %s", verb, w.File))
		}
	}
	return slices.Compact(out)
}

// ownOutput drops from reads the files the run itself wrote over (writes): a file a test
// writes is its output, not what it expects, and no input for the gate to keep.
func ownOutput(reads []FileRead, writes []fileRewrite) []FileRead {
	if len(writes) == 0 {
		return reads
	}
	return slices.DeleteFunc(reads, func(r FileRead) bool {
		return slices.ContainsFunc(writes, func(w fileRewrite) bool { return w.File == r.File })
	})
}
