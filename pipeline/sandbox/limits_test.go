package sandbox

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestLimitsInForce(t *testing.T) {
	tests := []struct {
		in        Limits
		mem       int64
		processes int
	}{
		{Limits{}, DefaultMemoryLimit(), DefaultProcessLimit()},
		{Limits{Memory: 64 << 20, Processes: 32}, 64 << 20, 32},
		{Limits{Memory: -1, Processes: -1}, 0, 0},
	}
	for _, tt := range tests {
		if got := tt.in.MemoryBytes(); got != tt.mem {
			t.Errorf("%+v.MemoryBytes() = %d, want %d", tt.in, got, tt.mem)
		}
		if got := tt.in.ProcessCount(); got != tt.processes {
			t.Errorf("%+v.ProcessCount() = %d, want %d", tt.in, got, tt.processes)
		}
		if got, want := len(tt.in.rlimits()), map[bool]int{true: 2, false: 0}[tt.mem > 0]; got != want {
			t.Errorf("%+v sets %d resource limits, want %d", tt.in, got, want)
		}
	}
}

func TestDefaultMemoryLimit(t *testing.T) {
	want := max(int64(4<<30), int64(runtime.NumCPU())*256<<20)
	if got := DefaultMemoryLimit(); got != want || got < 4<<30 {
		t.Errorf("DefaultMemoryLimit() on %d CPUs = %d, want %d (4 GiB, or 256 MiB per CPU)", runtime.NumCPU(), got, want)
	}
}

// TestArgsHandOver: the bwrap line names the descriptors Command hands over, so the limits
// are set before the command runs.
func TestArgsHandOver(t *testing.T) {
	s := Spec{Bwrap: "/usr/bin/bwrap", Dir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}}
	args, err := s.Args([]string{"true"})
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Join(args, " ")
	euid := os.Geteuid()
	want := "--info-fd " + strconv.Itoa(seccompFD(euid)+1) + " --block-fd " + strconv.Itoa(seccompFD(euid)+2)
	if !strings.Contains(line, want) || strings.Index(line, want) > strings.Index(line, " -- ") {
		t.Errorf("bwrap line lacks %q before the command:\n%s", want, line)
	}
}

// TestOnlyChild finds a shell's one child, by its children file and by the parents /proc lists.
func TestOnlyChild(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "sleep 30 & echo $!; wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	want, _ := strconv.Atoi(strings.TrimSpace(line))
	defer syscall.Kill(want, syscall.SIGKILL)
	for name, find := range map[string]func(int) (int, error){"onlyChild": onlyChild, "onlyChildByParent": onlyChildByParent} {
		if got, err := find(cmd.Process.Pid); err != nil || got != want {
			t.Errorf("%s(sh) = %d, %v; want %d", name, got, err, want)
		}
		if got, err := find(want); err == nil {
			t.Errorf("%s(sleep) = %d, want an error: it has no child", name, got)
		}
	}
}

// TestStarterKillsWhenLimitsFail: when the limits cannot be set (here: bwrap names a
// sandbox, but the process has no child to set them on), the process is killed before
// anything runs, and Stopped says why.
func TestStarterKillsWhenLimitsFail(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	infoR, infoW, blockR, blockW, err := limitPipes()
	if err != nil {
		t.Fatal(err)
	}
	defer blockR.Close()
	infoW.WriteString(`{"child-pid": 2}`)
	infoW.Close()
	s := &starter{cmd: cmd, info: infoR, block: blockW}
	if n, err := s.Read(make([]byte, 8)); n != 0 || !errors.Is(err, io.EOF) {
		t.Errorf("Read = %d, %v; want 0, EOF", n, err)
	}
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the process ended with %v, want killed by SIGKILL", err)
	}
	s.mu.Lock()
	why := s.stopped
	s.mu.Unlock()
	if !strings.Contains(why, "stopped before the command ran") || !strings.Contains(why, "children") {
		t.Errorf("stopped = %q, want the reason", why)
	}
}

// TestStarterCopiesWithoutBuffer: os/exec copies a command's stdin with io.Copy; the
// starter's copy (empty, once the limits are set) allocates nothing, where io.Copy's own
// buffer would be 32 KB for every sandboxed command.
func TestStarterCopiesWithoutBuffer(t *testing.T) {
	s := &starter{}
	s.once.Do(func() {})                                      // the hand-over is done: what is left is the copy itself
	var w io.Writer = struct{ io.Writer }{&strings.Builder{}} // no ReadFrom: the copy is the reader's
	allocs := testing.AllocsPerRun(10, func() {
		if n, err := io.Copy(w, s); n != 0 || err != nil {
			t.Errorf("io.Copy = %d, %v; want 0, nil", n, err)
		}
	})
	if allocs > 0 {
		t.Errorf("io.Copy from the starter allocated %.0f times a copy, want none", allocs)
	}
}

// TestApplyLimitsNeverRaises: a limit the process has already below the configured one (the
// daemon's LimitNPROC=, inherited) stays; ticketd only lowers, and as a user could not raise.
func TestApplyLimitsNeverRaises(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := cmd.Process.Pid
	low := unix.Rlimit{Cur: 100, Max: 100}
	if err := unix.Prlimit(pid, unix.RLIMIT_NPROC, &low, nil); err != nil {
		t.Fatal(err)
	}
	if err := applyLimits(pid, Limits{Memory: 1 << 30, Processes: 4096}); err != nil {
		t.Fatalf("applyLimits(processes 4096) on a process whose limit is 100: %v", err)
	}
	for _, tt := range []struct {
		resource int
		want     uint64
	}{{unix.RLIMIT_NPROC, 100}, {unix.RLIMIT_DATA, 1 << 30}} {
		var got unix.Rlimit
		if err := unix.Prlimit(pid, tt.resource, nil, &got); err != nil {
			t.Fatal(err)
		}
		if got.Cur != tt.want || got.Max != tt.want {
			t.Errorf("resource %d: limit %d/%d after applyLimits, want %d", tt.resource, got.Cur, got.Max, tt.want)
		}
	}
}

// runStopped runs argv in spec's sandbox to its end and returns what it printed (stdout and
// stderr together), why the sandbox stopped it (Stopped; "" when it did not) and Run's error.
func runStopped(t *testing.T, spec Spec, argv []string) (out *strings.Builder, why string, err error) {
	t.Helper()
	cmd, err := spec.Command(context.Background(), argv)
	if err != nil {
		t.Fatal(err)
	}
	out = &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	err = cmd.Run()
	return out, Stopped(cmd), err
}

// limitSpec is a sandbox with small limits whose hold is checked by a harmless probe first:
// the hostile commands of the tests below run only under limits seen in force.
func limitSpec(t *testing.T, l Limits) Spec {
	t.Helper()
	requireBwrap(t)
	dir := t.TempDir()
	os.Chmod(dir, 0o755) // the checks' user walks into it when the test runs as root
	tree := filepath.Join(dir, "tree")
	if err := os.Mkdir(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	spec := Spec{Dir: tree, Env: []string{"PATH=/usr/bin:/bin"}, Limits: l}
	out := probeRunArgv(t, spec, "/bin/sh", "-c", "cat /proc/self/limits /proc/self/oom_score_adj")
	for _, want := range []string{
		"Max data size             " + strconv.FormatInt(l.Memory, 10) + " ",
		"Max processes             " + strconv.Itoa(l.Processes) + " ",
		"\n" + strconv.Itoa(OOMScoreAdj) + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("the sandbox's limits are not in force (no %q): refusing to run the hostile command\n%s", want, out)
		}
	}
	return spec
}

// TestMemoryLimitStopsAllocation: a check that appends to a list forever gets MemoryError
// at its memory limit instead of taking the machine's memory. The script also stops by itself
// at 512 MiB, in case the limit did not hold after all.
func TestMemoryLimitStopsAllocation(t *testing.T) {
	spec := limitSpec(t, Limits{Memory: 64 << 20, Processes: 64})
	out := probeRunArgv(t, spec, "/usr/bin/python3", "-c", `
a = []
try:
    for i in range(512):
        a.append(bytearray(1 << 20))
    print("ALLOCATED 512 MiB")
except MemoryError:
    print("STOPPED at", len(a), "MiB")
`)
	if !strings.Contains(out, "STOPPED at") {
		t.Fatalf("a 64 MiB limit did not stop the allocation:\n%s", out)
	}
	f := strings.Fields(out[strings.Index(out, "STOPPED at"):])
	if n, err := strconv.Atoi(f[2]); err != nil || n >= 64 {
		t.Errorf("the allocation stopped at %s MiB, want under the 64 MiB limit:\n%s", f[2], out)
	}
}

// forkScript forks children that wait on a pipe until forking fails, prints how many it
// made, then lets them go. It stops by itself at 200 children, in case the limit did not hold.
const forkScript = `
import os, sys, time
r, w = os.pipe()
kids = []
err = None
for i in range(200):
    try:
        pid = os.fork()
    except OSError as e:
        err = e
        break
    if pid == 0:
        os.close(w)
        os.read(r, 1)
        os._exit(0)
    kids.append(pid)
print("FORKED", len(kids), "then", err, flush=True)
if len(sys.argv) > 1:
    time.sleep(float(sys.argv[1]))
os.close(w)
for k in kids:
    os.waitpid(k, 0)
`

// TestProcessLimitStopsForks: a check that forks in a loop is refused new processes at its
// limit; and the limit is the check's own: while one sandboxed command holds all it may
// have, another (same user, same limit) still starts processes.
func TestProcessLimitStopsForks(t *testing.T) {
	spec := limitSpec(t, Limits{Memory: 256 << 20, Processes: 24})
	full, err := spec.Command(context.Background(), []string{"/usr/bin/python3", "-c", forkScript, "60"})
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := full.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	full.Stderr = os.Stderr
	if err := full.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-full.Process.Pid, syscall.SIGKILL); full.Wait() })
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	f := strings.Fields(line)
	if len(f) < 2 || f[0] != "FORKED" {
		t.Fatalf("the fork loop said %q", line)
	}
	if n, _ := strconv.Atoi(f[1]); n >= 24 || !strings.Contains(line, "Resource temporarily unavailable") {
		t.Fatalf("a limit of 24 processes let the loop make %s children: %q", f[1], line)
	}
	// The first command holds its limit full until it is killed; a second one forks freely.
	out := probeRunArgv(t, spec, "/usr/bin/python3", "-c", `
import os
for i in range(5):
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
print("SECOND forked 5")
`)
	if !strings.Contains(out, "SECOND forked 5") {
		t.Errorf("while another sandboxed command held its process limit full, a second could not fork:\n%s", out)
	}
}

// TestMemoryLimitIsTheChecks: a check whose processes each stay under the memory limit but
// together hold several times it is killed, and Stopped says why; one that stays under it
// as a whole runs to its end. Each child fills 48 MiB under a 96 MiB limit and waits (up to
// 60 s, in case nothing stops them).
func TestMemoryLimitIsTheChecks(t *testing.T) {
	const script = `
import os, sys, time
n = int(sys.argv[1])
kids = []
for i in range(n):
    pid = os.fork()
    if pid == 0:
        b = b"x" * (48 << 20)
        time.sleep(60 if n > 1 else 0.5)
        os._exit(0)
    kids.append(pid)
for k in kids:
    os.waitpid(k, 0)
print("ALL DONE", flush=True)
`
	spec := limitSpec(t, Limits{Memory: 96 << 20, Processes: 64})
	for _, tt := range []struct {
		children string
		wantStop bool
	}{{"1", false}, {"6", true}} {
		cmd, err := spec.Command(context.Background(), []string{"/usr/bin/python3", "-c", script, tt.children})
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		err = cmd.Run()
		why := Stopped(cmd)
		t.Logf("uid %d, %s children of 48 MiB: %v, stopped %q, output %q", os.Geteuid(), tt.children, err, why, out.String())
		switch {
		case tt.wantStop && (why == "" || strings.Contains(out.String(), "ALL DONE")):
			t.Errorf("%s children of 48 MiB each under a 96 MiB limit ran to their end (%v): the limit is per process only", tt.children, err)
		case tt.wantStop && !strings.Contains(why, "its limit of 96.0 MiB"): // the watch's, or the cgroup's OOM kill
			t.Errorf("Stopped = %q, want it to name the 96 MiB limit", why)
		case !tt.wantStop && (why != "" || !strings.Contains(out.String(), "ALL DONE")):
			t.Errorf("one child of 48 MiB under a 96 MiB limit was stopped (%q) or did not finish: %s", why, out.String())
		}
	}
}

// TestOpenFilesAreTheChecks: a check whose forked processes each open files within their own
// descriptor limit, but together more than the check may hold, is killed before the host's
// file table (fs.file-max) runs out, and Stopped says why. Here the bound is 4,096 files and
// eight processes open 1,000 each (and stop by themselves after 60 s).
func TestOpenFilesAreTheChecks(t *testing.T) {
	spec := limitSpec(t, Limits{Memory: 512 << 20, Processes: 64})
	spec.Limits.Files = 4096
	out, why, err := runStopped(t, spec, []string{"/usr/bin/python3", "-c", `
import os, time
kids = []
for i in range(8):
    pid = os.fork()
    if pid == 0:
        fds = [os.open("/dev/null", os.O_RDONLY) for _ in range(1000)]
        time.sleep(60)
        os._exit(0)
    kids.append(pid)
for k in kids:
    os.waitpid(k, 0)
print("ALL DONE", flush=True)
`})
	t.Logf("uid %d: %v, stopped %q, output %q", os.Geteuid(), err, why, out.String())
	if why == "" || strings.Contains(out.String(), "ALL DONE") || !strings.Contains(why, "more than its limit of 4096") {
		t.Errorf("eight processes of 1,000 open files each under a 4,096-file bound ran to their end (%v), or Stopped = %q", err, why)
	}
}
