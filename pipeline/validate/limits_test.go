package validate

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/pipeline/sandbox"
)

func TestLimitNote(t *testing.T) {
	small := sandbox.Limits{Memory: 64 << 20, Processes: 24}
	tests := []struct {
		name   string
		limits sandbox.Limits
		res    Result
		output string
		want   []string // substrings; none when empty
	}{
		{"MemoryError", small, Result{ExitCode: 1}, "E   MemoryError\n", []string{"ran out of memory", "64.0 MiB", "max_check_memory"}},
		{"ENOMEM", small, Result{ExitCode: 2}, "OSError: [Errno 12] Cannot allocate memory", []string{"ran out of memory"}},
		{"OOM killer", small, Result{ExitCode: 137}, "", []string{"SIGKILL", "OOM killer"}},
		{"fork refused", small, Result{ExitCode: 1}, "    pid = os.fork()\nBlockingIOError: [Errno 11] Resource temporarily unavailable", []string{"process limit", "24 processes", "max_check_processes"}},
		{"subprocess refused", small, Result{ExitCode: 1}, "  File \"/usr/lib/python3.11/subprocess.py\", line 1901, in _execute_child\n    self.pid = _fork_exec(\nBlockingIOError: [Errno 11] Resource temporarily unavailable", []string{"process limit"}},
		{"a non-blocking read is no fork", small, Result{ExitCode: 1}, "    data = sock.recv(4096)\nBlockingIOError: [Errno 11] Resource temporarily unavailable", nil},
		{"thread refused, timed out", small, Result{ExitCode: -1, TimedOut: true}, "RuntimeError: can't start new thread", []string{"process limit"}},
		{"default limits named", sandbox.Limits{}, Result{ExitCode: 1}, "MemoryError", []string{formatBytes(sandbox.DefaultMemoryLimit())}},
		{"passed says nothing", small, Result{Passed: true}, "MemoryError", nil},
		{"cancelled says nothing", small, Result{Cancelled: true, ExitCode: 137}, "MemoryError", nil},
		{"no limit, no note", sandbox.Limits{Memory: -1, Processes: -1}, Result{ExitCode: 1}, "MemoryError Resource temporarily unavailable", nil},
		{"plain failure", small, Result{ExitCode: 1}, "AssertionError: 1 != 2", nil},
	}
	for _, tt := range tests {
		got := limitNote(tt.limits, tt.res, tt.output)
		if len(tt.want) == 0 && got != "" {
			t.Errorf("%s: limitNote(%+v, %q) = %q, want none", tt.name, tt.res, tt.output, got)
		}
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: limitNote(%+v, %q) = %q, want it to contain %q", tt.name, tt.res, tt.output, got, w)
			}
		}
	}
}

// TestCheckOverItsLimits runs real checks under small limits: a pytest test that appends to a
// list forever, and a command that forks in a loop, each fail and say which limit stopped
// them. A harmless check first shows the limits in force; the hostile ones also stop by
// themselves (512 MiB, 200 processes) should they not be.
func TestCheckOverItsLimits(t *testing.T) {
	t.Parallel() // own directories and processes
	requireBwrap(t)
	requirePytest(t)
	r := Runner{Limits: sandbox.Limits{Memory: 128 << 20, Processes: 24}}
	run := func(c Check) Result {
		t.Helper()
		c.Timeout = 2 * time.Minute
		return r.Run(context.Background(), t.TempDir(), []Check{c})[0]
	}
	probe := run(Check{Name: "limits", Kind: KindCommand, Command: []string{"cat", "/proc/self/limits"}})
	if !strings.Contains(probe.Output, "Max data size             134217728 ") || !strings.Contains(probe.Output, "Max processes             24 ") {
		t.Fatalf("the check's limits are not in force: refusing to run the hostile checks\n%s", probe.Output)
	}

	dir := t.TempDir()
	pyTest(t, dir, "test_grow.py", "def test_grows():\n    a = []\n    for _ in range(512):\n        a.append(bytearray(1 << 20))\n")
	res := r.Run(context.Background(), dir, []Check{{Name: "tests", Kind: KindPytest, Timeout: 2 * time.Minute}})[0]
	if res.Passed || !strings.Contains(res.Summary, "the check ran out of memory") || !strings.Contains(res.Summary, "128.0 MiB") || res.Abort != "" || res.NotStarted {
		t.Errorf("a test allocating past 128 MiB: passed=%v abort=%q not_started=%v summary=%q, want a failure of the check that names the memory limit\n%s",
			res.Passed, res.Abort, res.NotStarted, res.Summary, res.Output)
	}

	fork := run(Check{Name: "fork", Kind: KindCommand, Command: []string{"/usr/bin/python3", "-c", `
import os, sys
kids = []
try:
    for i in range(200):
        pid = os.fork()
        if pid == 0:
            __import__("time").sleep(30)
            os._exit(0)
        kids.append(pid)
except OSError as e:
    print("forked", len(kids), "then", e)
    sys.exit(1)
`}})
	t.Logf("memory: %s\nfork: %s", res.Summary, fork.Summary)
	if fork.Passed || !strings.Contains(fork.Summary, "process limit") || !strings.Contains(fork.Output, "Resource temporarily unavailable") || fork.Abort != "" {
		t.Errorf("a command forking past 24 processes: passed=%v abort=%q summary=%q, want a failure that names the process limit\n%s", fork.Passed, fork.Abort, fork.Summary, fork.Output)
	}
}

// TestCheckOverItsMemoryAsAWhole: a check whose processes each stay under the memory limit
// but together hold several times it fails, and its summary says so.
func TestCheckOverItsMemoryAsAWhole(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	r := Runner{Limits: sandbox.Limits{Memory: 96 << 20, Processes: 64}}
	res := r.Run(context.Background(), t.TempDir(), []Check{{Name: "many", Kind: KindCommand, Timeout: 2 * time.Minute, Command: []string{"/usr/bin/python3", "-c", `
import os, time
kids = []
for i in range(6):
    pid = os.fork()
    if pid == 0:
        b = b"x" * (48 << 20)
        time.sleep(60)
        os._exit(0)
    kids.append(pid)
for k in kids:
    os.waitpid(k, 0)
print("ALL DONE")
`}}})[0]
	t.Logf("passed=%v summary=%q", res.Passed, res.Summary)
	if res.Passed || !strings.Contains(res.Summary, "processes together") /* held, by the watch; reached, by the cgroup */ || !strings.Contains(res.Summary, "96.0 MiB") || res.Abort != "" || res.NotStarted {
		t.Errorf("six processes of 48 MiB under a 96 MiB limit: passed=%v abort=%q not_started=%v summary=%q, want a failure naming the memory of the check as a whole\n%s",
			res.Passed, res.Abort, res.NotStarted, res.Summary, res.Output)
	}
}
