package validate

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A check that runs out of time says where it was. "timed out" alone leaves the maker
// guessing which test its change made loop, and the operator of a base commit that hangs
// which test to deselect. So before the check is killed, each of its Python processes gets
// SIGABRT, on which Python's fault handler (enabled in every sandbox by PYTHONFAULTHANDLER,
// and by pytest's own plugin) writes every thread's stack to stderr: the check's output,
// which the summary then reads (stoppedAt).

// stoppedAtNote joins a time-out's summary and where its check stopped.
const stoppedAtNote = "; stopped at "

// dumpGrace is how long the aborted processes get to write their stacks before the check
// is killed.
const dumpGrace = 2 * time.Second

// abortPythons sends SIGABRT to each Python process descended from pid, after setting its
// core-file size limit to 0 (an aborted process must not leave a core file in the
// worktree; one whose limit cannot be set is not signalled), and returns how many it
// signalled. Other processes are left to the kill that follows.
func abortPythons(pid int) int {
	n := 0
	for _, p := range descendants(pid) {
		if !isPython(p) {
			continue
		}
		if err := unix.Prlimit(p, unix.RLIMIT_CORE, &unix.Rlimit{}, nil); err != nil {
			continue
		}
		if syscall.Kill(p, syscall.SIGABRT) == nil {
			n++
		}
	}
	return n
}

// isPython reports whether pid runs a Python interpreter: its executable's name, or, where
// that cannot be read, its command name (a script such as pytest runs under its own name).
func isPython(pid int) bool {
	name := ""
	if exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); err == nil {
		name = filepath.Base(strings.TrimSuffix(exe, " (deleted)"))
	} else if comm, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); err == nil {
		name = strings.TrimSpace(string(comm))
		if name == "pytest" || strings.HasPrefix(name, "py.test") {
			return true
		}
	}
	return strings.HasPrefix(name, "python") || strings.HasPrefix(name, "pypy")
}

// A frame of a fault handler's dump: `  File "PATH", line N in FUNC`.
var dumpFrame = regexp.MustCompile(`^\s+File "([^"]+)", line (\d+) in (\S+)`)

// maxStoppedFrames bounds the frames stoppedAt names per stack.
const maxStoppedFrames = 4

// stoppedAt reads the stacks Python's fault handler wrote into output (abortPythons) and
// says where each stopped process was, innermost first, in the worktree's files (dir):
// "tests/test_x.py:12 in helper, called from tests/test_x.py:20 in test_loop". Stacks with
// no frame in the worktree (an interpreter idle in a tool's own code) are left out; "" when
// none is left.
func stoppedAt(output, dir string) string {
	var stacks []string
	var frames []string
	inDump := false
	flush := func() {
		if len(frames) > 0 {
			s := strings.Join(frames, ", called from ")
			if !slices.Contains(stacks, s) {
				stacks = append(stacks, s)
			}
		}
		frames = nil
	}
	sc := bufio.NewScanner(strings.NewReader(output))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasSuffix(line, "(most recent call first):") && (strings.HasPrefix(line, "Current thread ") || strings.HasPrefix(line, "Thread ")) {
			flush()
			inDump = true
			continue
		}
		if !inDump {
			continue
		}
		m := dumpFrame.FindStringSubmatch(line)
		if m == nil {
			flush()
			inDump = false
			continue
		}
		rel, ok := worktreeFile(m[1], dir)
		if ok && len(frames) < maxStoppedFrames {
			frames = append(frames, fmt.Sprintf("%s:%s in %s", rel, m[2], m[3]))
		}
	}
	flush()
	const maxStacks = 3
	if len(stacks) > maxStacks {
		stacks = append(stacks[:maxStacks], fmt.Sprintf("and %d more", len(stacks)-maxStacks))
	}
	return strings.Join(stacks, "; ")
}

// worktreeFile is path relative to the worktree dir, if it is one of the project's own
// files (not an installed package in a virtualenv kept in the worktree).
func worktreeFile(path, dir string) (string, bool) {
	rel, err := filepath.Rel(dir, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
		return "", false
	}
	if strings.Contains(rel, "site-packages/") || strings.Contains(rel, "dist-packages/") {
		return "", false
	}
	return rel, true
}
