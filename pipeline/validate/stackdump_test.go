package validate

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ticketd/ticketd/pipeline/sandbox"
)

// timeOutWhen is a Runner.timer that times the check out once the file at marker exists
// (the check has reached the point the test wants it stopped at), not after a duration:
// the test then holds at any load.
func timeOutWhen(t *testing.T, marker string) func(time.Duration, func()) func() {
	t.Helper()
	return func(_ time.Duration, f func()) func() {
		done := make(chan struct{})
		var once sync.Once
		go func() {
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			giveUp := time.After(5 * time.Minute) // a check that never got there: fail, do not hang
			for {
				select {
				case <-done:
					return
				case <-giveUp:
					f()
					return
				case <-tick.C:
					if _, err := os.Stat(marker); err == nil {
						f()
						return
					}
				}
			}
		}()
		return func() { once.Do(func() { close(done) }) }
	}
}

// TestTimeoutSaysWhere: a check stopped at its time-out says where its Python code was
// (the maker's loop, the test that hung), under bwrap and without it, for pytest and
// unittest, and leaves no core file in the worktree.
func TestTimeoutSaysWhere(t *testing.T) {
	requirePytest(t)
	// spin says it started from inside itself: wherever the abort lands, it is in spin.
	const spin = "def spin(n):\n    open(\"started\", \"w\").close()\n    while True:\n        n += 1\n"
	const test = `import unittest

from spin import spin


class TestSpin(unittest.TestCase):
    def test_fine(self):
        self.assertTrue(True)

    def test_spin(self):
        spin(0)
`
	want := regexp.MustCompile(`; stopped at spin\.py:[234] in spin, called from test_spin\.py:11 in test_spin$`)
	for _, m := range modes {
		for _, kind := range []string{KindPytest, KindUnittest} {
			t.Run(string(m.mode)+"/"+kind, func(t *testing.T) {
				if m.mode == sandbox.ModeBwrap {
					requireBwrap(t)
				}
				dir := t.TempDir()
				pyTest(t, dir, "spin.py", spin)
				pyTest(t, dir, "test_spin.py", test)
				r := Runner{Sandbox: m.mode, timer: timeOutWhen(t, filepath.Join(dir, "started"))}
				res := r.Run(context.Background(), dir, []Check{{Name: "tests", Kind: kind, Timeout: time.Hour}})[0]
				if !res.TimedOut || res.Passed {
					t.Fatalf("the check did not time out: %+v", res)
				}
				if !want.MatchString(res.Summary) {
					t.Errorf("summary %q\nwant it to match %q\noutput:\n%s", res.Summary, want, res.Output)
				}
				entries, _ := os.ReadDir(dir)
				for _, e := range entries {
					if strings.HasPrefix(e.Name(), "core") {
						t.Errorf("the aborted check left %s in the worktree", e.Name())
					}
				}
			})
		}
	}
}

func TestStoppedAt(t *testing.T) {
	const dir = "/work/tree"
	tests := []struct {
		name, output, want string
	}{
		{"no dump", "....\nsome output\n", ""},
		{"one thread", `Fatal Python error: Aborted

Current thread 0x00007f0659f1d040 (most recent call first):
  File "/work/tree/pkg/parse.py", line 40 in _scan
  File "/work/tree/pkg/parse.py", line 12 in parse
  File "/work/tree/tests/test_parse.py", line 7 in test_nested
  File "/usr/lib/python3/dist-packages/_pytest/python.py", line 195 in pytest_pyfunc_call
  File "<frozen runpy>", line 88 in _run_code
`, "pkg/parse.py:40 in _scan, called from pkg/parse.py:12 in parse, called from tests/test_parse.py:7 in test_nested"},
		{"stdlib innermost, venv skipped, capped", `Current thread 0x1 (most recent call first):
  File "/usr/lib/python3.11/socket.py", line 705 in readinto
  File "/work/tree/.venv/lib/python3.11/site-packages/requests/api.py", line 59 in get
  File "/work/tree/a.py", line 1 in a
  File "/work/tree/b.py", line 2 in b
  File "/work/tree/c.py", line 3 in c
  File "/work/tree/d.py", line 4 in d
  File "/work/tree/e.py", line 5 in e
`, "a.py:1 in a, called from b.py:2 in b, called from c.py:3 in c, called from d.py:4 in d"},
		{"threads and processes, idle ones left out, repeats once", `Thread 0x2 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 320 in wait

Current thread 0x1 (most recent call first):
  File "/work/tree/x.py", line 9 in loop
Fatal Python error: Aborted

Current thread 0x3 (most recent call first):
  File "/work/tree/x.py", line 9 in loop
`, "x.py:9 in loop"},
		{"an escape sequence in a path is no frame", "Current thread 0x1 (most recent call first):\n  File \"/work/tree/x\x1b[2J.py\", line 9 in loop\n", ""},
		{"nor in a name", "Current thread 0x1 (most recent call first):\n  File \"/work/tree/y.py\", line 3 in <module>\n  File \"/work/tree/y.py\", line 9 in lo\x1b]0;op\n", "y.py:3 in <module>"},
		{"outside the tree", `Current thread 0x1 (most recent call first):
  File "/work/tree-other/x.py", line 9 in loop
  File "/work/x.py", line 1 in y
`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := stoppedAt(tt.output, dir); got != tt.want {
				t.Errorf("stoppedAt = %q\nwant        %q", got, tt.want)
			}
		})
	}
}

func FuzzStoppedAt(f *testing.F) {
	f.Add("Current thread 0x1 (most recent call first):\n  File \"/work/tree/x.py\", line 9 in loop\n")
	f.Add("Thread 0x2 (most recent call first):\n  File \"/work/tree/../etc/x.py\", line 1 in y\n")
	f.Fuzz(func(t *testing.T, output string) {
		got := stoppedAt(output, "/work/tree")
		if strings.Contains(got, "..") && !strings.Contains(output, "..") {
			t.Errorf("stoppedAt(%q) = %q names a path outside the tree", output, got)
		}
		if len(got) > len(output)+100 {
			t.Errorf("stoppedAt(%q) = %q is longer than its input", output, got)
		}
	})
}

// TestAdaptHungTest: a test that never ends at the base commit made the whole check time
// out, which paused the repository for the night. The check now runs without that test,
// named by where the time-out stopped it, and says so; every later run carries it.
func TestAdaptHungTest(t *testing.T) {
	requirePytest(t)
	dir := writeTree(t, map[string]string{
		"pyproject.toml": "[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n",
		"spin.py":        "def spin(n):\n    open(\"started\", \"w\").close()\n    while True:\n        n += 1\n",
		"tests/test_spin.py": `from spin import spin


def test_fine():
    assert True


class TestSpin:
    class TestInner:
        def test_spin(self):
            spin(0)

        def test_spin_twice(self):  # pytest's --deselect of test_spin leaves it out too
            assert True

    def test_also_fine(self):
        assert True
`,
	})
	check := Check{Name: "tests", Kind: KindPytest, Timeout: time.Hour}
	stopOnce := timeOutWhen(t, filepath.Join(dir, "started"))
	runs := 0
	r := &Runner{Sandbox: testSandbox(t), timer: func(d time.Duration, f func()) func() {
		runs++
		if runs == 1 { // the base run hangs; the rerun must not
			return stopOnce(d, f)
		}
		tm := time.AfterFunc(d, f)
		return func() { tm.Stop() }
	}}
	run := func(ctx context.Context, cs []Check) []Result { return r.Run(ctx, dir, cs) }
	base := run(context.Background(), []Check{check})
	if !base[0].TimedOut {
		t.Fatalf("the base run did not time out: %+v", base[0])
	}
	if ps := Health(base); len(ps) != 1 {
		t.Fatalf("Health(base) = %v; want the time-out as its problem", ps)
	}
	got := Adapt(context.Background(), run, dir, []Check{check}, base)[0]
	const id = "tests/test_spin.py::TestSpin::TestInner::test_spin"
	if got.Condition == nil || !slices.Equal(got.Condition.Args, []string{"--deselect", id}) {
		t.Fatalf("condition %+v, want --deselect %s; result %s\n%s", got.Condition, id, got.Summary, got.Output)
	}
	if got.TimedOut || !got.Passed || got.Tests != 2 || !strings.Contains(strings.Join(got.Notes, "\n"), id+" never ended at the base commit") ||
		!strings.Contains(strings.Join(got.Notes, "\n"), "and with it "+id+"_twice, whose ids begin with its id") {
		t.Errorf("adapted run: timed out %v, passed %v, %d tests (%s), notes %q; want 2 passed with a note", got.TimedOut, got.Passed, got.Tests, got.Summary, got.Notes)
	}
	if ps := Health([]Result{got}); len(ps) != 0 {
		t.Errorf("Health(adapted) = %v; want healthy", ps)
	}
}

func TestTestNodeID(t *testing.T) {
	const src = `import pytest


def test_top():
    x = 1
    assert x


class TestA:
    """A class.

Docstring text at column 0.
"""

    @pytest.mark.slow
    def test_m(self):
        assert True

    class TestB(Base):
        async def test_deep(self):
            # comment
            await thing()


def helper():
    s = '''
class TestFake:
'''

    def test_nested():
        pass
    return test_nested
`
	tests := []struct {
		name string
		line int
		fn   string
		want string
		ok   bool
	}{
		{"module function", 5, "test_top", "t.py::test_top", true},
		{"method after a docstring at column 0", 17, "test_m", "t.py::TestA::test_m", true},
		{"nested class, async", 22, "test_deep", "t.py::TestA::TestB::test_deep", true},
		{"function inside a function, a class in a string above", 31, "test_nested", "", false},
		{"no such def above", 5, "test_m", "", false},
		{"line out of range", 99, "test_top", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := testNodeID([]byte(src), "t.py", tt.line, tt.fn)
			if got != tt.want || ok != tt.ok {
				t.Errorf("testNodeID(line %d, %s) = %q, %v; want %q, %v", tt.line, tt.fn, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestHungTest(t *testing.T) {
	const dir = "/w"
	tests := []struct {
		name, output, rel, fn string
		line                  int
		ok                    bool
	}{
		{"pytest function", `Current thread 0x1 (most recent call first):
  File "/w/pkg/m.py", line 3 in spin
  File "/w/tests/test_m.py", line 9 in test_spin
  File "/usr/lib/python3/dist-packages/_pytest/python.py", line 195 in pytest_pyfunc_call
`, "tests/test_m.py", "test_spin", 9, true},
		{"unittest case under either runner", `Current thread 0x1 (most recent call first):
  File "/w/tests/test_m.py", line 12 in test_wait
  File "/usr/lib/python3.11/unittest/case.py", line 579 in _callTestMethod
`, "tests/test_m.py", "test_wait", 12, true},
		{"hung in a fixture", `Current thread 0x1 (most recent call first):
  File "/w/tests/conftest.py", line 5 in server
  File "/usr/lib/python3/dist-packages/_pytest/fixtures.py", line 908 in call_fixture_func
`, "", "", 0, false},
		{"a test of an installed package", `Current thread 0x1 (most recent call first):
  File "/usr/lib/python3/dist-packages/other/test_x.py", line 1 in test_x
  File "/usr/lib/python3/dist-packages/_pytest/python.py", line 195 in pytest_pyfunc_call
`, "", "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rel, line, fn, ok := hungTest(tt.output, dir)
			if rel != tt.rel || line != tt.line || fn != tt.fn || ok != tt.ok {
				t.Errorf("hungTest = %q, %d, %q, %v; want %q, %d, %q, %v", rel, line, fn, ok, tt.rel, tt.line, tt.fn, tt.ok)
			}
		})
	}
}

// TestAbortPythonOnlyListed: a process is aborted only while it is still the one listed:
// its parent one of the listed processes, and a Python. A pid whose process ended after the
// listing and was reused by another program's (here: a parent not listed) is left alone.
func TestAbortPythonOnlyListed(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed (apt-get install python3)")
	}
	tests := []struct {
		name      string
		listed    func(self int) map[int]bool
		wantAbort bool
	}{
		{name: "its parent is listed", listed: func(self int) map[int]bool { return map[int]bool{self: true} }, wantAbort: true},
		{name: "its parent is not: the pid was reused", listed: func(int) map[int]bool { return map[int]bool{1: true} }},
		{name: "nothing listed", listed: func(int) map[int]bool { return map[int]bool{} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(py, "-c", "import sys, time; sys.stdout.write('up\\n'); sys.stdout.flush(); time.sleep(600)")
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			if _, err := bufio.NewReader(out).ReadString('\n'); err != nil { // it runs Python now
				t.Fatal(err)
			}
			got := abortPython(cmd.Process.Pid, tt.listed(os.Getpid()))
			if got != tt.wantAbort {
				t.Fatalf("abortPython = %v, want %v", got, tt.wantAbort)
			}
			if !tt.wantAbort {
				return
			}
			err = cmd.Wait()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGABRT {
				t.Errorf("the process ended with %v, want SIGABRT", err)
			}
		})
	}
}

// TestPrefixTwins: the tests a --deselect of one node id leaves out besides it, since pytest
// matches the beginning of the id.
func TestPrefixTwins(t *testing.T) {
	t.Parallel()
	const src = `def test_x():
    pass


def test_x_more():
    def test_x_inner():
        pass


async def test_xy():
    pass


def test_other():
    pass


class TestC:
    def test_x_in_class(self):
        pass

    def test_y(self):
        pass

    def test_y2(self):
        pass
`
	tests := []struct {
		id   string
		want []string
	}{
		{"t.py::test_x", []string{"t.py::test_x_more", "t.py::test_xy"}},
		{"t.py::test_other", nil},
		{"t.py::TestC::test_y", []string{"t.py::TestC::test_y2"}},
		{"t.py::TestC::test_y2", nil},
	}
	for _, tt := range tests {
		if got := prefixTwins([]byte(src), "t.py", tt.id); !slices.Equal(got, tt.want) {
			t.Errorf("prefixTwins(%s) = %q; want %q", tt.id, got, tt.want)
		}
	}
}

// A hang that --deselect cannot leave out is reported precisely instead: a unittest test
// (unittest's command line cannot leave one test out) and a pytest fixture that never
// returns (every test using it would hang in turn). The repository stays unhealthy, and
// the hint names what hung, where, and what the operator can do.
func TestAdaptHangReported(t *testing.T) {
	requirePytest(t)
	for _, tt := range []struct {
		name  string
		check Check
		files map[string]string
		hint  []string
	}{
		{"unittest test", Check{Name: "tests", Kind: KindUnittest, Timeout: time.Hour}, map[string]string{
			"spin.py":      spinPy,
			"test_spin.py": "import unittest\n\nfrom spin import spin\n\n\nclass SpinTest(unittest.TestCase):\n    def test_fine(self):\n        pass\n\n    def test_spin(self):\n        spin(0)\n",
		}, []string{"the unittest test SpinTest.test_spin (test_spin.py:11) never ended at the base commit", "@unittest.skip"}},
		{"pytest fixture", Check{Name: "tests", Kind: KindPytest, Timeout: time.Hour}, map[string]string{
			"spin.py":              spinPy,
			"conftest.py":          "import pytest\n\nfrom spin import spin\n\n\n@pytest.fixture\ndef server():\n    spin(0)\n    return 1\n",
			"tests/test_server.py": "def test_fine():\n    pass\n\n\ndef test_server(server):\n    assert server\n",
		}, []string{"the fixture server (conftest.py:8) never returned at the base commit", "every test that uses it"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeTree(t, tt.files)
			r := &Runner{Sandbox: testSandbox(t), timer: timeOutWhen(t, filepath.Join(dir, "started"))}
			run := func(ctx context.Context, cs []Check) []Result { return r.Run(ctx, dir, cs) }
			base := run(context.Background(), []Check{tt.check})
			if !base[0].TimedOut {
				t.Fatalf("the base run did not time out: %+v", base[0])
			}
			got := Adapt(context.Background(), run, dir, []Check{tt.check}, base)
			ps := Health(got)
			if len(ps) != 1 {
				t.Fatalf("Health = %v; want the hang as the one problem", ps)
			}
			for _, want := range tt.hint {
				if !strings.Contains(ps[0].Hint, want) {
					t.Errorf("hint lacks %q: %s\n%s", want, ps[0], got[0].Output)
				}
			}
		})
	}
}

const spinPy = "def spin(n):\n    open(\"started\", \"w\").close()\n    while True:\n        n += 1\n"
