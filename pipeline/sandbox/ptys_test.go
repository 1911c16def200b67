package sandbox

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// requirePython skips a test whose check is a Python script when the system's interpreter
// (the one the sandbox sees under /usr) is missing.
func requirePython(t *testing.T) string {
	t.Helper()
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skipf("the check of this test is a Python script and %s is not installed: %v", python, err)
	}
	return python
}

// ptyHogScript opens /dev/ptmx until the kernel refuses or it holds cap, prints how many it
// got and why it stopped, then shows it still runs normally: it gives one back, opens one
// again and uses it.
const ptyHogScript = `
import os, sys
cap = int(sys.argv[1])
fds, why = [], "none"
try:
    while len(fds) < cap:
        fds.append(os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY))
except OSError as e:
    why = "errno %d" % e.errno
print("opened", len(fds), "stopped", why)
os.close(fds.pop())
m, s = os.openpty()
os.write(m, b"ping\n")
print("reopened", os.read(s, 16).decode().strip())
`

// TestPtysBounded: a check that opens pseudo-terminals in a loop gets ENOSPC at its
// sandbox's bound and goes on running, instead of taking every pty the kernel gives
// namespaces (3,071 here) from the other checks and the host's containers. The control,
// with the bound off (bwrap's own devpts instance), opens past the bound: what every check
// could do before.
func TestPtysBounded(t *testing.T) {
	python := requirePython(t)
	const bound = 16
	tests := []struct {
		name    string
		ptys    int
		cap     int
		want    string
		wantMax string // the max option of the sandbox's /dev/pts
	}{
		{"bounded", bound, 5000, "opened 16 stopped errno 28", "max=16"},
		// 4 * bound, not all the host's: the control only shows the bound is what stops the
		// bounded run, without taking every other process's ptys for its length.
		{"control without the bound", -1, 4 * bound, "opened 64 stopped none", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := limitSpec(t, Limits{Memory: 256 << 20, Processes: 64, Ptys: tt.ptys})
			out, why, err := runStopped(t, spec, []string{python, "-c", ptyHogScript, strconv.Itoa(tt.cap)})
			if err != nil || why != "" {
				t.Fatalf("the check did not run to its end: %v (stopped %q)\n%s", err, why, out)
			}
			if !strings.Contains(out.String(), tt.want) || !strings.Contains(out.String(), "reopened ping") {
				t.Errorf("want %q and a pty that still works after it, got:\n%s", tt.want, out)
			}
			mounts := probeRunArgv(t, spec, "/bin/sh", "-c", "grep ' /dev/pts ' /proc/self/mountinfo")
			if got := regexp.MustCompile(`max=\d+`).FindString(mounts); got != tt.wantMax {
				t.Errorf("the sandbox's /dev/pts has %q, want %q:\n%s", got, tt.wantMax, mounts)
			}
		})
	}
}

// TestPtyHonestCheck: a test suite that drives a program through a pty (pexpect, the pty
// module) still can under the default bound: openpty from the os and pty modules, both
// ways, and the slave's name under /dev/pts.
func TestPtyHonestCheck(t *testing.T) {
	python := requirePython(t)
	spec := limitSpec(t, Limits{Memory: 256 << 20, Processes: 64})
	out, why, err := runStopped(t, spec, []string{python, "-c", `
import os, pty, tty
for name, opener in (("os", os.openpty), ("pty", pty.openpty)):
    m, s = opener()
    tty.setraw(s)  # no echo back to the master
    os.write(m, b"to slave\n")
    a = os.read(s, 64).decode().strip()
    os.write(s, b"to master\n")
    b = os.read(m, 64).decode().strip()
    print(name, a, "|", b, "|", os.ttyname(s).rsplit("/", 1)[0])
    os.close(m); os.close(s)
`})
	if err != nil || why != "" {
		t.Fatalf("the check failed: %v (stopped %q)\n%s", err, why, out)
	}
	for _, want := range []string{"os to slave | to master | /dev/pts", "pty to slave | to master | /dev/pts"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	mounts := probeRunArgv(t, spec, "/bin/sh", "-c", "grep ' /dev/pts ' /proc/self/mountinfo")
	if !strings.Contains(mounts, "max="+strconv.Itoa(DefaultPtyLimit)) {
		t.Errorf("the sandbox's /dev/pts is not bounded to %d:\n%s", DefaultPtyLimit, mounts)
	}
}

// TestPtyBoundFailsClosed: when the bounded devpts instance cannot be mounted (here a max
// the kernel refuses), the sandbox is stopped before the command runs, and says why,
// instead of running the check with the host's whole pool.
func TestPtyBoundFailsClosed(t *testing.T) {
	spec := limitSpec(t, Limits{Memory: 256 << 20, Processes: 64})
	spec.Limits.Ptys = 1 << 21 // above the kernel's NR_UNIX98_PTY_MAX: EINVAL
	out, why, err := runStopped(t, spec, []string{"/bin/sh", "-c", "echo ran > ran"})
	if err == nil {
		t.Errorf("the command ended well: %s", out)
	}
	if !strings.Contains(why, "the sandbox was stopped before the command ran") || !strings.Contains(why, "pseudo-terminals") {
		t.Errorf("Stopped = %q, want the pty bound named as what stopped it", why)
	}
	if _, err := os.Stat(filepath.Join(spec.Dir, "ran")); err == nil {
		t.Errorf("the command ran although its ptys could not be bounded")
	}
}
