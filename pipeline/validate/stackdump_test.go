package validate

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
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
