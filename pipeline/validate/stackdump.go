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
	"time"

	"golang.org/x/sys/unix"

	"github.com/ticketd/ticketd/pipeline/discover"
	"github.com/ticketd/ticketd/pipeline/sandbox"
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
	procs := sandbox.Descendants(pid)
	// pid is the check's own process, ours until we wait for it: its parent is us.
	listed := map[int]bool{os.Getpid(): true}
	for _, p := range procs {
		listed[p] = true
	}
	n := 0
	for _, p := range procs {
		if abortPython(p, listed) {
			n++
		}
	}
	return n
}

// abortPython aborts p, one of the processes listed, if it is still that process: a
// process that ended after the listing may have left its pid to one of another user's
// programs, which must not get the signal. The signal goes through a pidfd opened before p
// is checked (its parent still one of the listed, and a Python), so it reaches the process
// that was checked or none.
func abortPython(p int, listed map[int]bool) bool {
	fd, err := unix.PidfdOpen(p, 0)
	if err != nil {
		return false // gone already, or a kernel before 5.3: the kill that follows stops it
	}
	defer unix.Close(fd)
	if parent, ok := sandbox.ParentOf(p); !ok || !listed[parent] || !isPython(p) {
		return false
	}
	if err := unix.Prlimit(p, unix.RLIMIT_CORE, &unix.Rlimit{}, nil); err != nil {
		return false
	}
	return unix.PidfdSendSignal(fd, unix.SIGABRT, nil, 0) == nil
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

// A frame of a fault handler's dump: `  File "PATH", line N in FUNC`. The output is the
// code under test's to write: a path with control characters or a name that is no Python
// name (`<module>`, `<lambda>` and dotted ones are) is not read as a frame.
var dumpFrame = regexp.MustCompile(`^\s+File "([^"\x00-\x1f\x7f]+)", line (\d{1,9}) in ([A-Za-z_<][A-Za-z0-9_.<>]*)$`)

// frame is one line of a dumped stack.
type frame struct {
	file string // as the interpreter named it: absolute, inside the sandbox
	line int
	fn   string
}

// dumpedStacks reads the stacks Python's fault handler wrote into output, each innermost
// frame first, one per thread of each process.
func dumpedStacks(output string) [][]frame {
	var stacks [][]frame
	var cur []frame
	inDump := false
	flush := func() {
		if len(cur) > 0 {
			stacks = append(stacks, cur)
		}
		cur = nil
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
		n, err := strconv.Atoi(m[2])
		if err != nil {
			continue
		}
		cur = append(cur, frame{file: m[1], line: n, fn: m[3]})
	}
	flush()
	return stacks
}

// maxStoppedFrames bounds the frames stoppedAt names per stack.
const maxStoppedFrames = 4

// stoppedAt says where each process of a check stopped at its time-out was (abortPythons),
// innermost first, in the worktree's files (dir): "tests/test_x.py:12 in helper, called
// from tests/test_x.py:20 in test_loop". Stacks with no frame in the worktree (an
// interpreter idle in a tool's own code) are left out; "" when none is left.
func stoppedAt(output, dir string) string {
	var stacks []string
	for _, st := range dumpedStacks(output) {
		var frames []string
		for _, f := range st {
			if rel, ok := worktreeFile(f.file, dir); ok && len(frames) < maxStoppedFrames {
				frames = append(frames, fmt.Sprintf("%s:%d in %s", rel, f.line, f.fn))
			}
		}
		if s := strings.Join(frames, ", called from "); s != "" && !slices.Contains(stacks, s) {
			stacks = append(stacks, s)
		}
	}
	const maxStacks = 3
	if len(stacks) > maxStacks {
		stacks = append(stacks[:maxStacks], fmt.Sprintf("and %d more", len(stacks)-maxStacks))
	}
	return strings.Join(stacks, "; ")
}

// hungTest finds, in the stacks dumped at a time-out, the test function a test runner was
// running: the worktree frame that pytest (pytest_pyfunc_call) or unittest
// (_callTestMethod) called. It returns its file relative to dir, a line inside it and its
// name; ok is false when no stack was inside a test (a fixture, collection, an import).
func hungTest(output, dir string) (rel string, line int, fn string, ok bool) {
	return hungFrame(output, dir, func(caller frame) bool {
		return caller.fn == "pytest_pyfunc_call" && strings.HasSuffix(caller.file, "/_pytest/python.py") ||
			caller.fn == "_callTestMethod" && strings.HasSuffix(caller.file, "/unittest/case.py")
	})
}

// hungFixture finds, in the stacks dumped at a time-out, the pytest fixture function that
// pytest was calling (call_fixture_func) and that never returned: its file relative to dir,
// a line inside it and its name.
func hungFixture(output, dir string) (rel string, line int, fn string, ok bool) {
	return hungFrame(output, dir, func(caller frame) bool {
		return caller.fn == "call_fixture_func" && strings.HasSuffix(caller.file, "/_pytest/fixtures.py")
	})
}

// hungFrame finds the first worktree frame that a frame isCaller accepts called.
func hungFrame(output, dir string, isCaller func(frame) bool) (rel string, line int, fn string, ok bool) {
	for _, st := range dumpedStacks(output) {
		for i := 0; i+1 < len(st); i++ {
			if !isCaller(st[i+1]) {
				continue
			}
			if rel, ok := worktreeFile(st[i].file, dir); ok {
				return rel, st[i].line, st[i].fn, true
			}
		}
	}
	return "", 0, "", false
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

// classLine is a class statement: its name.
// defLine is a function's def line, its leading space trimmed.
var defLine = regexp.MustCompile(`^(?:async\s+)?def\s+([A-Za-z_][A-Za-z0-9_]*)\(`)

// maxTwinsNamed bounds the tests prefixTwins names in a note.
const maxTwinsNamed = 5

// prefixTwins are the other tests of the file src (rel, as in node ids) whose node ids begin
// with id: pytest's --deselect leaves out every test whose id starts with the one given, so
// deselecting test_x leaves out test_x_more too. Read as testNodeID reads.
func prefixTwins(src []byte, rel, id string) []string {
	fn := id[strings.LastIndex(id, "::")+2:]
	var out []string
	for i, l := range strings.Split(string(src), "\n") {
		m := defLine.FindStringSubmatch(strings.TrimLeft(l, " \t"))
		if m == nil || m[1] == fn || !strings.HasPrefix(m[1], fn) {
			continue // only a def whose name begins with the test's may match
		}
		if other, ok := testNodeID(src, rel, i+1, m[1]); ok && other != id && strings.HasPrefix(other, id) && !slices.Contains(out, other) {
			out = append(out, other)
		}
	}
	return out
}

var classLine = regexp.MustCompile(`^class\s+([A-Za-z_][A-Za-z0-9_]*)\s*[(:]`)

// testNodeID is pytest's node id of the test function fn, whose body holds line of file
// rel (relative to pytest's rootdir, source src): rel::Class::fn, its enclosing classes read
// from the indentation above its def. ok is false when the def is not found or sits in a
// block other than a class (a test pytest would not collect as such, or a layout this
// simple reading cannot follow): no id is better than a wrong one.
func testNodeID(src []byte, rel string, line int, fn string) (string, bool) {
	lines := strings.Split(string(src), "\n")
	if line < 1 || line > len(lines) {
		return "", false
	}
	def := -1
	indent := 0
	for i := line - 1; i >= 0; i-- {
		t := strings.TrimLeft(lines[i], " \t")
		if strings.HasPrefix(t, "def "+fn+"(") || strings.HasPrefix(t, "async def "+fn+"(") {
			def, indent = i, len(lines[i])-len(t)
			break
		}
	}
	if def < 0 {
		return "", false
	}
	inString := stringLines(lines)
	var classes []string
	for j := def - 1; j >= 0 && indent > 0; j-- {
		t := strings.TrimLeft(lines[j], " \t")
		if inString[j] || t == "" || strings.HasPrefix(t, "#") || len(lines[j])-len(t) >= indent {
			continue
		}
		m := classLine.FindStringSubmatch(t)
		if m == nil {
			return "", false
		}
		classes = append([]string{m[1]}, classes...)
		indent = len(lines[j]) - len(t)
	}
	if indent > 0 {
		return "", false
	}
	return strings.Join(append(append([]string{rel}, classes...), fn), "::"), true
}

// stringLines marks the lines that start inside a triple-quoted string (a docstring's text
// at column 0 is no block of the code): a reading of the quotes alone, enough for
// testNodeID, which gives up on anything it cannot place.
func stringLines(lines []string) []bool {
	in := make([]bool, len(lines))
	open := "" // the triple quote of the string under way
	for i, l := range lines {
		in[i] = open != ""
		if open == "" && strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		for l != "" {
			if open != "" {
				j := strings.Index(l, open)
				if j < 0 {
					break
				}
				l, open = l[j+3:], ""
				continue
			}
			d, s := strings.Index(l, `"""`), strings.Index(l, "'''")
			switch {
			case d < 0 && s < 0:
				l = ""
			case s < 0 || d >= 0 && d < s:
				l, open = l[d+3:], `"""`
			default:
				l, open = l[s+3:], "'''"
			}
		}
	}
	return in
}

// hangReport says precisely what never ended in a check that timed out at the base commit
// where hungTestCondition cannot leave it out, and what the operator can do; "" when the
// dumped stacks show neither. unittest's command line can select tests (-k) but never leave
// one out; a fixture's hang is not one test's, and which tests use the fixture the stacks
// do not say.
func hangReport(dir string, c Check, r Result) string {
	switch c.Kind {
	case KindUnittest:
		rel, line, fn, ok := hungTest(r.Output, dir)
		if !ok {
			return ""
		}
		name := fn
		if src, found := discover.DirReader(dir)(rel); found {
			if id, ok := testNodeID(src, rel, line, fn); ok {
				_, rest, _ := strings.Cut(id, "::")
				name = strings.ReplaceAll(rest, "::", ".")
			}
		}
		return fmt.Sprintf("the unittest test %s (%s:%d) never ended at the base commit, and unittest's command line cannot leave one test out: skip it in the repository (@unittest.skip) until it is fixed, or name in the check's command only the test modules that end",
			name, rel, line)
	case KindPytest:
		rel, line, fn, ok := hungFixture(r.Output, dir)
		if !ok {
			return ""
		}
		return fmt.Sprintf("the fixture %s (%s:%d) never returned at the base commit, so every test that uses it would hang in turn (the stacks do not say which tests those are): fix the fixture, or leave those tests out in the check's command (--deselect FILE::TEST, --ignore FILE)",
			fn, rel, line)
	}
	return ""
}
