package validate

import (
	"bufio"
	"bytes"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

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
// under it, and writes them out as "file\tby" lines when pytest ends. It records nothing
// where Python has no audit hooks (before 3.8).
const readsPluginSource = `import os
import sys

_ROOT = os.path.join(os.getcwd(), "")
_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "` + readsFilePrefix + `%d.txt")
_MAX = 20000
_WRITE = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_seen = {}


def _hook(event, args):
    if event != "open" or len(_seen) >= _MAX:
        return
    try:
        path, mode, flags = args
        if isinstance(path, int):
            return
        if mode is not None:
            if any(c in mode for c in "wax+"):
                return
        elif flags & _WRITE:
            return
        path = os.path.normpath(os.path.join(os.getcwd(), os.fsdecode(os.fspath(path))))
        if not path.startswith(_ROOT) or path.endswith((".py", ".pyc")):
            return
        f = sys._getframe(1)
        while f is not None and not f.f_code.co_filename.startswith(_ROOT):
            f = f.f_back
        if f is None:
            return
        key = path[len(_ROOT):] + "\t" + f.f_code.co_filename[len(_ROOT):]
        if "\n" not in key:
            _seen[key] = None
    except Exception:
        pass


if hasattr(sys, "addaudithook"):
    sys.addaudithook(_hook)


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
		return true
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
	env = slices.Clone(env)
	i := slices.IndexFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "PYTHONPATH=") })
	switch {
	case i < 0:
		env = append(env, "PYTHONPATH="+inner)
	case env[i] == "PYTHONPATH=":
		env[i] = "PYTHONPATH=" + inner // an empty entry would put the working directory on the path
	default:
		env[i] += string(os.PathListSeparator) + inner
	}
	return append(slices.Clone(argv), "-p", readsPlugin), env
}

// collectReads reads back what the plugin recorded in reports: each file read and by what,
// once, sorted. Anything that is not the plugin's plain file, or is larger than it writes,
// is left unread.
func collectReads(reports string) []FileRead {
	if reports == "" {
		return nil
	}
	names, _ := filepath.Glob(filepath.Join(reports, readsFilePrefix+"*.txt"))
	seen := map[FileRead]bool{}
	var out []FileRead
	for _, name := range names[:min(len(names), maxReadsFiles)] {
		data, err := sandbox.ReadReport(name, maxReadsBytes)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() && len(out) < maxReads {
			file, by, ok := strings.Cut(sc.Text(), "\t")
			r := FileRead{File: path.Clean(filepath.ToSlash(file)), By: path.Clean(filepath.ToSlash(by))}
			if !ok || file == "" || by == "" || !filepath.IsLocal(r.File) || !filepath.IsLocal(r.By) || seen[r] {
				continue
			}
			seen[r] = true
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b FileRead) int { return strings.Compare(a.File+"\x00"+a.By, b.File+"\x00"+b.By) })
	return out
}
