package validate

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"github.com/ticketd/ticketd/pipeline/discover"
	"github.com/ticketd/ticketd/pipeline/sandbox"
)

// A base test may read its expected values from a data file outside the test folders
// (pkg/data/expected.json, golden/output.txt). A change that rewrites such a file to match
// broken code would make the base's test pass in its base version. So every pytest and
// unittest run records which of the worktree's files its Python code opened for reading, and
// from which of the worktree's Python files (the innermost one on the stack): the base run's
// record tells the gate which data files the base's tests read themselves (pipeline's
// testTree), and those are judged in their base versions like the test files. A file the
// tests only read through the code under test (a data table the code loads) is the code's,
// unless a test hands it over: a worktree file on the stack (or the one that started the
// process) whose source names it (load("golden/x")) reads it too.
//
// The record is made by a Python audit hook on "open" (readsAuditSource) that ticketd writes
// into a folder of the check's reports, outside the worktree, put first on PYTHONPATH with a
// sitecustomize.py that loads it: every Python process of the check that keeps PYTHONPATH
// loads it at its start, before any of the repository's code runs, so the processes a test
// starts (`python -c "open('golden/x')..."`, a script of the tests) are recorded too, their
// reads attributed to the test that started them where no file of the worktree is on their
// stack. The worktree files a command line names count as read by the Python file that
// started it, whatever the process is: one that is not Python (`cat golden/x`, a shell)
// records nothing itself, and the project's own command line (`python -m pkg.cli golden/x`)
// reads it as the code. pytest also loads a plugin (-p) that names the test running, for the
// rewrites' record. The same module notes, at each process's exit, the libraries it loaded
// (Result.Modules), and in a unittest check's own process what unittest's result was told.

// FileRead is one worktree file a test run opened for reading (File), and the innermost
// worktree Python file on the stack when it did (By), both relative to the worktree.
type FileRead struct {
	File string `json:"file"`
	By   string `json:"by"`
}

// Module names of the recording, unlikely to be a project's own; readsDir is the folder of
// the reports they are written into, and that goes first on PYTHONPATH.
const (
	readsPlugin = "_ticketd_reads"
	readsAudit  = "_ticketd_audit"
	readsDir    = "_ticketd"
)

// readsFilePrefix names the files the hook writes, one per process.
const readsFilePrefix = "ticketd-reads-"

// Bounds on what is read back: records per run, files (processes) and bytes per file.
const (
	maxReads      = 20_000
	maxReadsFiles = 2048
	maxReadsBytes = 4 << 20
)

// readsAuditSource records each open for reading of a file under the worktree (the first
// process's working directory, passed on to the processes it starts) that is not Python
// source, with the innermost frame of a file under it ("R\tfile\tby" lines), and again with
// each other file under it on the stack, or the one that started the process, whose source
// names the file (a test handing the file to the code: pkg.load("golden/x")); each write
// over, rename over or removal of a file there that existed before the run (not one the run
// made), with that frame and the test running ("W\tfile\tby\ttest"), or the folder of a file
// or folder it makes ("N\tfolder"); each listing of a folder under it other than the
// worktree's root, with that frame ("L\tfolder\tby"); each process started
// by a worktree file, with the worktree files its command line names ("S\tid\tby\tfile..."),
// which count as read by that file whatever the process does with them; and, at a process's
// exit, each top-level module it imported from outside the worktree, the standard library's
// aside ("M\tname"). Each
// record is appended as it is made (a process ended by os._exit or a signal keeps what it
// saw), to a file of its own per process. It records nothing where Python has no audit hooks
// (before 3.8).
const readsAuditSource = `import os
import sys

_DIR = os.path.dirname(os.path.abspath(__file__))
_OUT = os.path.join(_DIR, "` + readsFilePrefix + `%d.txt")
_ROOT_FILE = os.path.join(_DIR, "root.txt")


def _read(p):
    try:
        with open(p, encoding="utf-8", errors="surrogateescape") as f:
            return f.read()
    except (OSError, ValueError):
        return None


def _put(p, text, flags):
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | flags, 0o644)
    try:
        os.write(fd, text.encode("utf-8", "surrogateescape"))
    finally:
        os.close(fd)


# The worktree (the first process's working directory) and when the run started: written by
# the first process, read by the ones it starts. Nothing goes through the environment, which
# the tests may read.
_r = _read(_ROOT_FILE)
_FIRST = False  # the check's own process, not one it started
if _r is None:
    import time

    _r = os.path.join(os.getcwd(), "") + "\n" + repr(time.time())
    try:
        _put(_ROOT_FILE, _r, os.O_EXCL)
        _FIRST = True
    except OSError:
        _r = _read(_ROOT_FILE) or _r
_ROOT, _, _r = _r.partition("\n")
try:
    _START = float(_r)
except ValueError:
    _START = 0.0


def _started_by():
    """What the process that started this one wrote when it did (see _spawn): its parent's,
    or its grandparent's through a shell."""
    pid = os.getppid()
    for _ in range(2):
        s = _read(os.path.join(_DIR, "spawn-%d.txt" % pid))
        if s is not None:
            return (s.split("\t") + ["", "", ""])[:3]
        st = _read("/proc/%d/stat" % pid)
        try:
            pid = int(st.rpartition(")")[2].split()[1])
        except (AttributeError, IndexError, ValueError):
            break
    return ["", "", ""]


_BY, _TEST, _SPAWN = _started_by()
_MAX = 20000
_WRITE = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_CODE = (".py", ".pyc", ".pyi", ".pyx", ".so", ".sh", ".bash", ".pl", ".rb", ".js", ".ts", ".lua", ".php", ".tcl")
_SPAWNS = ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn")
_seen = {}
_spawned = [0]
# The test running (pytest's node id), set by ticketd's pytest plugin; in a process a test
# started, that test.
test = [_TEST]


def _rel(path, base=None):
    path = os.path.normpath(os.path.join(base or os.getcwd(), os.fsdecode(os.fspath(path))))
    return path[len(_ROOT):] if path.startswith(_ROOT) else None


def _by():
    f = sys._getframe(1)
    while f is not None and not f.f_code.co_filename.startswith(_ROOT):
        f = f.f_back
    return _BY if f is None else f.f_code.co_filename[len(_ROOT):]


_sources = {}


def _names(rel, name):
    """Whether the worktree's Python file rel names a file called name: in quotes, or after a
    slash and before a closing quote ("golden/pair.json", os.path.join(d, "pair.json"))."""
    src = _sources.get(rel)
    if src is None:
        src = (_read(_ROOT + rel) or "")[: 1 << 20]
        if len(_sources) < 256:
            _sources[rel] = src
    i = src.find(name)
    while i >= 0:
        if i > 0 and src[i - 1] in "\"'/\\" and src[i + len(name) : i + len(name) + 1] in ("\"", "'"):
            return True
        i = src.find(name, i + 1)
    return False


def _namers(rel, by):
    """The worktree's Python files other than by that are on the stack, or started this
    process, and whose source names the file rel: a test that hands a file to the code
    (pkg.load(path)) or to a command of the project's (python -m pkg.cli path) names it, and
    what the file holds is then what the test expects."""
    files = []
    f = sys._getframe(1)
    while f is not None and len(files) < 32:
        fn = f.f_code.co_filename
        if fn.startswith(_ROOT) and fn[len(_ROOT) :] != by and fn[len(_ROOT) :] not in files:
            files.append(fn[len(_ROOT) :])
        f = f.f_back
    if _BY and _BY != by and _BY not in files:
        files.append(_BY)
    name = os.path.basename(rel)
    return [p for p in files if p.endswith(".py") and _names(p, name)]


def _note(key):
    if key in _seen or "\n" in key or len(_seen) >= _MAX:
        return
    _seen[key] = None
    # Opened for each record: a descriptor kept open could be closed by the code, and its
    # number given to one of the code's own files.
    _put(_OUT % os.getpid(), key + "\n", os.O_APPEND)


def _named(argv, cwd):
    """The worktree's data files a command line names (not the program, not code)."""
    if isinstance(argv, (str, bytes, os.PathLike)):
        argv, first = [argv], 0
    else:
        argv, first = list(argv or ())[:256], 1
    words = []
    for i, a in enumerate(argv):
        try:
            a = os.fsdecode(os.fspath(a))
        except TypeError:
            continue
        if any(c.isspace() for c in a):  # a shell's command, or sh -c's
            import shlex

            try:
                words.extend(shlex.split(a))
            except ValueError:
                words.extend(a.split())
        elif i >= first:
            words.append(a)
    base = os.path.join(os.getcwd(), os.fsdecode(os.fspath(cwd))) if cwd else os.getcwd()
    out = []
    for w in words[:256]:
        if w.startswith("-") and "=" in w:
            w = w.split("=", 1)[1]
        rel = _rel(w, base) if w else None
        if not rel or "\t" in rel or rel.endswith(_CODE):
            continue
        p = _ROOT + rel
        if os.path.isfile(p) and not os.access(p, os.X_OK) and rel not in out:
            out.append(rel)
    return out


def _spawn(event, args):
    if event == "subprocess.Popen":
        argv, cwd = args[1], args[2]
    elif event == "os.system":
        argv, cwd = args[0], None
    elif event == "os.spawn":
        argv, cwd = args[2], None
    else:
        argv, cwd = args[1], None
    by = _by()
    _spawned[0] += 1
    sid = "%d.%d" % (os.getpid(), _spawned[0])
    files = _named(argv, cwd) if by else []
    if files:
        _note("S\t" + sid + "\t" + by + "\t" + "\t".join(files))
    else:
        sid = ""
    name = " ".join(test[0].split())
    _put(os.path.join(_DIR, "spawn-%d.txt" % os.getpid()), (by or "") + "\t" + name + "\t" + sid, os.O_TRUNC)


def _hook(event, args):
    if len(_seen) >= _MAX:
        return
    try:
        if event in _SPAWNS:
            _spawn(event, args)
            return
        if event == "open":
            path, mode, flags = args
            if isinstance(path, int):
                return
            write = any(c in mode for c in "wax+") if mode is not None else flags & _WRITE
        elif event in ("os.rename", "os.remove", "os.mkdir"):
            path, write = args[1] if event == "os.rename" else args[0], True
            if isinstance(path, int):
                return
        elif event in ("os.listdir", "os.scandir"):
            path = args[0]
            # Not the import system's listings: an import from a test lists every folder
            # it searches, which says nothing about what the test expects.
            if isinstance(path, int) or sys._getframe(1).f_code.co_filename.startswith("<frozen"):
                return
            rel = _rel(path if path is not None and path != "" else ".")
            by = _by() if rel else None
            if by:
                _note("L\t" + rel + "\t" + by)
            return
        else:
            return
        rel = _rel(path)
        if rel is None:
            return
        if not write:
            if not rel.endswith((".py", ".pyc")):
                by = _by()
                if by:
                    _note("R\t" + rel + "\t" + by)
                    for p in _namers(rel, by):
                        _note("R\t" + rel + "\t" + p)
        elif not os.path.lexists(path):
            _note("N\t" + os.path.dirname(rel))
        elif os.lstat(path).st_mtime < _START:
            _note("W\t" + rel + "\t" + (_by() or "") + "\t" + test[0])
    except Exception:
        pass


def chain():
    """Runs the sitecustomize module this folder's stands in front of, if any."""
    import importlib.machinery
    import importlib.util

    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != _DIR]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    mod = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = mod
    spec.loader.exec_module(mod)


_SITE = ("sitecustomize", "usercustomize")


def _modules():
    """At exit, the top-level modules this process imported from outside the worktree, the
    standard library's aside (an installed library, one in a virtualenv kept in the
    worktree): ("M\tname"), which a new module of that name on the worktree's import path
    would stand in for."""
    std = getattr(sys, "stdlib_module_names", ())
    try:
        for name, m in list(sys.modules.items())[:4096]:
            f = getattr(m, "__file__", None)
            if "." in name or name.startswith(("_ticketd", "__")) or name in std or name in _SITE or not isinstance(f, str):
                continue
            f = os.path.abspath(f)
            if f.startswith(_ROOT) and "-packages" + os.sep not in f[len(_ROOT) :]:
                continue
            _note("M\t" + name)
    except Exception:
        pass


def _unittest_run():
    """Whether this process runs python -m unittest, as its command line says."""
    argv = list(getattr(sys, "orig_argv", ()))
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "-m":
            return argv[i + 1 : i + 2] == ["unittest"]
        if a.startswith("-m"):
            return a[2:] == "unittest"
        if not a.startswith("-") or a == "-c":
            return False
        i += 2 if a in ("-W", "-X") else 1
    return False


_UNITTEST = (("addSuccess", "passed"), ("addFailure", "failed"), ("addError", "error"), ("addSkip", "skipped"),
             ("addExpectedFailure", "xfailed"), ("addUnexpectedSuccess", "xpassed"))


def _unittest_id(test):
    return " ".join(str(test.id()).split())


def _record_unittest():
    """Records each outcome unittest's result is given ("U\tid\toutcome"), beside the text
    it prints, which code under test can rewrite (a stream of its own in place of stderr)
    without naming anything of the runner. Only in the check's own process: a suite a test
    runs in a process of its own is not the check's."""
    import unittest.result

    cls = unittest.result.TestResult

    def wrap(name, outcome):
        orig = getattr(cls, name)

        def add(self, test, *args):
            try:
                _note("U\t" + _unittest_id(test) + "\t" + outcome)
            except Exception:
                pass
            return orig(self, test, *args)

        setattr(cls, name, add)

    for name, outcome in _UNITTEST:
        wrap(name, outcome)
    sub = cls.addSubTest

    def add_sub(self, test, subtest, err):
        if err is not None:
            try:
                failed = issubclass(err[0], test.failureException)
                _note("U\t" + _unittest_id(test) + "\t" + ("failed" if failed else "error"))
            except Exception:
                pass
        return sub(self, test, subtest, err)

    cls.addSubTest = add_sub


if hasattr(sys, "addaudithook"):
    import atexit

    sys.addaudithook(_hook)
    atexit.register(_modules)
    if _FIRST and _unittest_run():
        try:
            _record_unittest()
        except Exception:
            pass
`

// readsSitecustomize starts the recording in every Python process that keeps PYTHONPATH,
// then runs the sitecustomize it hides (the distribution's, a virtualenv's). Its own lines
// are Python 2's too: a Python 2 process a test starts must not print an error.
const readsSitecustomize = `# ticketd: record which worktree files this check's Python processes read (` + readsAudit + `.py).
try:
    import ` + readsAudit + `
except Exception:
    ` + readsAudit + ` = None
if ` + readsAudit + ` is not None:
    ` + readsAudit + `.chain()
`

// readsPluginSource is the pytest plugin: it makes sure the hook is in (a pytest started
// with -S runs no sitecustomize) and names the test running for the rewrites' record.
const readsPluginSource = `import pytest

import ` + readsAudit + ` as _audit


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _audit.test[0] = item.nodeid
    try:
        yield
    finally:
        _audit.test[0] = ""
`

// recordsReads reports whether a pytest or unittest command's Python reads PYTHONPATH, where
// the recording is: an interpreter running the tool as a module does unless -I or -E comes
// before -m; a script, unless its shebang says so.
func recordsReads(argv []string) bool {
	if !isModuleRun(argv, "pytest") && !isModuleRun(argv, "unittest") {
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

// withReadsPlugin writes the recording into a folder of the check's reports (host path
// reports, inner path inner), and returns env with that folder first on PYTHONPATH and, for
// pytest, argv loading the plugin. On failure to write it, the run goes on unrecorded.
func withReadsPlugin(argv, env []string, reports, inner string, pytest bool) ([]string, []string) {
	if reports == "" || !recordsReads(argv) {
		return argv, env
	}
	dir := filepath.Join(reports, readsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return argv, env
	}
	for name, src := range map[string]string{readsAudit: readsAuditSource, "sitecustomize": readsSitecustomize, readsPlugin: readsPluginSource} {
		if err := os.WriteFile(filepath.Join(dir, name+".py"), []byte(src), 0o644); err != nil {
			return argv, env
		}
	}
	// The last PYTHONPATH is the one the command gets (os/exec keeps the last of a repeated
	// name): the check's own, or the src/ layout's, after the one the daemon passes on. The
	// folder goes first in it, so that its sitecustomize is the one Python runs (it runs the
	// one it stands in front of); the folder holds nothing else a project could import.
	var path string
	env = slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		v, ok := strings.CutPrefix(kv, "PYTHONPATH=")
		if ok {
			path = v
		}
		return ok
	})
	folder := inner + "/" + readsDir
	if path != "" { // an empty entry would put the working directory on the path
		folder += string(os.PathListSeparator) + path
	}
	if pytest {
		argv = append(slices.Clone(argv), "-p", readsPlugin)
	}
	return argv, append(env, "PYTHONPATH="+folder)
}

// fileRewrite is a file of the worktree that a test run wrote over, renamed over or
// removed (File), the worktree file on the stack that did (By, "" when none) and the test
// running then (Test, "" outside a test: at collection).
type fileRewrite struct {
	File, By, Test string
}

// collectReads reads back what the recording wrote in reports: each file read and by what,
// each folder listed and by what (lists: a folder the run also made a file or folder in is
// left out, as the run's own output), and each file rewritten, once each, sorted. The files a
// started process's command line names count as read by the file that started it, whatever
// the process is (a program that is not Python, a Python that records its own reads, the
// project's own command line). Anything that is not the recording's
// plain file, or is larger than it writes, is left unread. modules are the top-level modules
// the run's processes imported from outside the worktree, sorted.
func collectReads(reports string) runRecord {
	var reads, lists []FileRead
	var writes []fileRewrite
	var modules []string
	unittest := map[string]Outcome{}
	if reports == "" {
		return runRecord{}
	}
	names, _ := filepath.Glob(filepath.Join(reports, readsDir, readsFilePrefix+"*.txt"))
	seen := map[string]bool{}
	made := map[string]bool{}        // folders the run made something in
	started := map[string][]string{} // spawn id -> "by", then the files its command names
	for _, name := range names[:min(len(names), maxReadsFiles)] {
		data, err := sandbox.ReadReport(name, maxReadsBytes)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() && len(reads)+len(lists)+len(writes)+len(started) < maxReads {
			f := strings.Split(sc.Text(), "\t")
			if seen[sc.Text()] || len(f) < 2 {
				continue
			}
			seen[sc.Text()] = true
			switch {
			case f[0] == "U" && len(f) == 3 && validOutcome[Outcome(f[2])] && len(unittest) < maxReads:
				setOutcome(unittest, f[1], Outcome(f[2]))
			case f[0] == "M" && len(f) == 2 && len(modules) < maxModules && moduleName.MatchString(f[1]):
				modules = append(modules, f[1])
			case f[0] == "N" && len(f) == 2:
				made[path.Clean(cmp.Or(f[1], "."))] = true
			case f[0] == "L" && len(f) == 3 && local(f[1]) && local(f[2]):
				lists = append(lists, FileRead{File: path.Clean(f[1]), By: path.Clean(f[2])})
			case f[0] == "S" && len(f) >= 4 && local(f[2]):
				started[f[1]] = f[2:]
			case f[0] == "R" && len(f) == 3 && local(f[1]) && local(f[2]):
				reads = append(reads, FileRead{File: path.Clean(f[1]), By: path.Clean(f[2])})
			case f[0] == "W" && len(f) == 4 && local(f[1]):
				writes = append(writes, fileRewrite{File: path.Clean(f[1]), By: f[2], Test: f[3]})
			}
		}
	}
	// A file a command line names is what its starter chose to hand over, whether or not the
	// process records itself: a Python command of the project's (python -m pkg.cli golden/x)
	// reads it as the code, but what it holds is what the test that named it expects.
	for _, s := range started {
		for _, file := range s[1:] {
			if local(file) {
				reads = append(reads, FileRead{File: path.Clean(file), By: path.Clean(s[0])})
			}
		}
	}
	slices.SortFunc(reads, func(a, b FileRead) int { return strings.Compare(a.File+"\x00"+a.By, b.File+"\x00"+b.By) })
	reads = slices.Compact(reads)
	lists = slices.DeleteFunc(lists, func(l FileRead) bool { return made[l.File] })
	slices.SortFunc(lists, func(a, b FileRead) int { return strings.Compare(a.File+"\x00"+a.By, b.File+"\x00"+b.By) })
	slices.SortFunc(writes, func(a, b fileRewrite) int { return strings.Compare(a.File+"\x00"+a.Test, b.File+"\x00"+b.Test) })
	slices.Sort(modules)
	return runRecord{reads: reads, lists: lists, writes: writes, modules: slices.Compact(modules), unittest: unittest}
}

// runRecord is what collectReads reads back of one run (see readsAuditSource).
type runRecord struct {
	reads, lists []FileRead
	writes       []fileRewrite
	modules      []string
	// unittest is each outcome a unittest run's result was given, by test id (the worse of
	// two), whatever the run printed.
	unittest map[string]Outcome
}

// validOutcome are the outcomes the recording writes.
var validOutcome = map[Outcome]bool{OutcomePassed: true, OutcomeFailed: true, OutcomeError: true, OutcomeSkipped: true, OutcomeXFailed: true, OutcomeXPassed: true}

// maxModules bounds the modules collectReads keeps.
const maxModules = 4096

// moduleName matches a top-level Python module name.
var moduleName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

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
