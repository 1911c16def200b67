package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// requireCgroups skips t, naming why, where this machine offers no writable cgroup for
// checks (a user on cgroup v1, a v2 cgroup without delegated controllers).
func requireCgroups(t *testing.T) *cgroupParent {
	t.Helper()
	s := cgroups()
	if s.parent == nil {
		t.Skipf("no writable cgroup for checks on this machine (as uid %d): %s", os.Geteuid(), s.why)
	}
	return s.parent
}

// useCgroupSetup makes the rest of t run its checks as s says (nil parent: the fallback).
func useCgroupSetup(t *testing.T, s cgroupSetup) {
	t.Helper()
	prev := cgroupsTest.Swap(&s)
	t.Cleanup(func() { cgroupsTest.Store(prev) })
}

// ownCgroups lists the checks' cgroups this process has under dir.
func ownCgroups(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), checkCgroupNamePrefix+strconv.Itoa(os.Getpid())+"-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// pipeFillScript fills pipes, 1 MiB each where the kernel lets it, until it holds 512 MiB or a
// write fails; it prints what it held. Pipe buffers are kernel memory in no process's Pss.
const pipeFillScript = `
import os, fcntl, resource
s, h = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (h, h))
held, ps, cap = 0, [], 512 << 20
try:
    while held < cap:
        r, w = os.pipe()
        try:
            fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ
        except OSError:
            pass
        os.set_blocking(w, False)
        ps.append((r, w))
        while True:
            try:
                held += os.write(w, b"x" * 65536)
            except BlockingIOError:
                break
except OSError as e:
    print("stopped:", e)
print("HELD", held >> 20, "MiB in", len(ps), "pipes", flush=True)
`

// TestCgroupBoundsPipes: a check that keeps its memory in filled pipes, which no process's
// Pss shows, is held to its memory limit by its cgroup: either a write fails or the OOM
// killer ends it. Without the cgroup it kept 140 MiB under a 64 MiB limit.
func TestCgroupBoundsPipes(t *testing.T) {
	requireCgroups(t)
	const limit = 64 << 20
	spec := limitSpec(t, Limits{Memory: limit, Processes: 64})
	out, why, err := runStopped(t, spec, []string{"/usr/bin/timeout", "-s", "KILL", "60", "/usr/bin/python3", "-c", pipeFillScript})
	t.Logf("uid %d: pipes under a 64 MiB limit: %v, stopped %q, output %q", os.Geteuid(), err, why, out.String())
	if strings.Contains(why, "OOM killer") {
		return
	}
	i := strings.Index(out.String(), "HELD ")
	if i < 0 {
		t.Fatalf("the pipes' script neither said what it held nor was stopped by its memory limit: %v, stopped %q", err, why)
	}
	f := strings.Fields(out.String()[i:])
	if held, perr := strconv.Atoi(f[1]); perr != nil || int64(held)<<20 > limit {
		t.Errorf("a check kept %s MiB in pipes under a 64 MiB limit, and was not stopped by its memory limit (%q)", f[1], why)
	}
}

// burstScript forks 8 children that wait, idle, then are released together; each then maps
// 48 MiB, populated at once (MAP_POPULATE) and written, and says so. Once all 8 have said
// so, each must answer again before it ends: "ALL HELD" means the 8 were alive at once
// with their 384 MiB. From the release to the last answer takes tens of milliseconds, less
// than the 250 ms between two looks of the memory watch at an idle check.
const burstScript = `
import mmap, os, time
n, size = 8, 48 << 20
r0, w0 = os.pipe(); r1, w1 = os.pipe(); r2, w2 = os.pipe(); r3, w3 = os.pipe()
kids = []
for i in range(n):
    pid = os.fork()
    if pid == 0:
        os.read(r0, 1)
        m = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | mmap.MAP_POPULATE)
        for j in range(0, size, 4096):
            m[j] = 1
        os.write(w1, b"a")
        os.read(r2, 1)
        os.write(w3, b"b")
        os._exit(0)
    kids.append(pid)
time.sleep(1)  # idle: the watch looks every 250 ms
os.write(w0, b"g" * n)
got = b""
while len(got) < n:
    got += os.read(r1, n - len(got))
os.write(w2, b"g" * n)
got = b""
while len(got) < n:
    got += os.read(r3, n - len(got))
print("ALL HELD", flush=True)
for k in kids:
    os.waitpid(k, 0)
`

// TestCgroupBoundsBurst: eight idle processes that then allocate 48 MiB each at once, under a
// 128 MiB limit, each within its own RLIMIT_DATA, never hold their 384 MiB together: the
// cgroup refuses the memory at the limit, at allocation, its OOM killer ends one of them, and
// the check is stopped by its memory limit. The memory watch alone sees the burst only at its
// next look, up to 250 ms later: measured without the cgroup, ten runs of this test were
// stopped by the watch holding 136 to 384 MiB, up to three times the limit.
func TestCgroupBoundsBurst(t *testing.T) {
	requireCgroups(t)
	spec := limitSpec(t, Limits{Memory: 128 << 20, Processes: 64})
	out, why, err := runStopped(t, spec, []string{"/usr/bin/timeout", "-s", "KILL", "60", "/usr/bin/python3", "-c", burstScript})
	t.Logf("uid %d: 8 bursts of 48 MiB under a 128 MiB limit: %v, stopped %q, output %q", os.Geteuid(), err, why, out.String())
	if strings.Contains(out.String(), "ALL HELD") {
		t.Errorf("8 processes held 48 MiB each at once under a 128 MiB limit (stopped %q)", why)
	}
	// The kernel's refusal at the limit, not the watch's kill once the check was past it.
	if !strings.Contains(why, "OOM killer") || !strings.Contains(why, "limit of 128.0 MiB") {
		t.Errorf("Stopped = %q, want the check stopped at its 128 MiB limit by its cgroup's OOM killer, not once past it", why)
	}
}

// TestCgroupLimitsWritten: a check's cgroup carries its limits, swap off, and is gone after.
func TestCgroupLimitsWritten(t *testing.T) {
	p := requireCgroups(t)
	cg, err := p.create(Limits{Memory: 96 << 20, Processes: 32})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	if p.v2 {
		want["memory.max"] = "100663296"
		want["memory.oom.group"] = "1"
	} else {
		want["memory.limit_in_bytes"] = "100663296"
	}
	for file, v := range want {
		got, err := os.ReadFile(filepath.Join(cg.dirs[0], file))
		if err != nil || strings.TrimSpace(string(got)) != v {
			t.Errorf("%s = %q (%v), want %s", file, got, err, v)
		}
	}
	if p.pids != "" {
		got, err := os.ReadFile(filepath.Join(cg.dirs[len(cg.dirs)-1], "pids.max"))
		if err != nil || strings.TrimSpace(string(got)) != "32" {
			t.Errorf("pids.max = %q (%v), want 32", got, err)
		}
	}
	if err := cg.remove(); err != nil {
		t.Fatal(err)
	}
	for _, d := range cg.dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("the check's cgroup %s is still there after remove (%v)", d, err)
		}
	}
}

// TestCheckLeavesNoCgroup: a check's cgroups are removed once it has ended, also when it left
// a process behind in the background; a leftover of a daemon no longer running is removed
// at the next setup.
func TestCheckLeavesNoCgroup(t *testing.T) {
	p := requireCgroups(t)
	spec := limitSpec(t, Limits{Memory: 256 << 20, Processes: 64})
	cmd, err := spec.Command(context.Background(), []string{"/bin/sh", "-c", "sleep 600 & echo started"})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "started") {
		t.Fatalf("the command did not run: %q", out)
	}
	Stopped(cmd) // returns once the check's cgroup is gone
	for _, d := range []string{p.memory, p.pids} {
		if d == "" {
			continue
		}
		if left := ownCgroups(t, d); len(left) > 0 {
			t.Errorf("checks' cgroups left under %s after the check: %v", d, left)
		}
	}
	dead := exec.Command("/bin/true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	leftover := filepath.Join(p.memory, checkCgroupNamePrefix+strconv.Itoa(dead.Process.Pid)+"-1")
	if err := os.Mkdir(leftover, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(leftover) })
	removeCgroupLeftovers(p.memory)
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Errorf("a dead daemon's cgroup %s was not removed (%v)", leftover, err)
	}
}

// TestCgroupFallback: where no cgroup can be made (turned off, or a hierarchy that is no
// cgroup or not writable), checks run as before, their memory as a whole bounded by the
// watch, and CgroupIsolation says so and why.
func TestCgroupFallback(t *testing.T) {
	notCgroup := t.TempDir() // a plain folder: no control files, so no limit can be written
	self := filepath.Join(t.TempDir(), "cgroup")
	os.WriteFile(self, []byte("4:memory:/\n8:pids:/\n0::/\n"), 0o644)
	mi := filepath.Join(t.TempDir(), "mountinfo")
	os.WriteFile(mi, []byte("31 30 0:28 / "+notCgroup+" rw,relatime - cgroup cgroup rw,memory\n"), 0o644)
	for _, tt := range []struct {
		name string
		host cgroupHost
		want string
	}{
		{"turned off", cgroupHost{mountinfo: "/proc/self/mountinfo", self: "/proc/self/cgroup", off: true}, "TICKETD_CHECK_CGROUPS=off"},
		{"not a cgroup", cgroupHost{mountinfo: mi, self: self}, "cgroup v1: "},
		{"no hierarchy", cgroupHost{mountinfo: self, self: self}, "no cgroup v2 or v1 memory hierarchy"},
	} {
		s := findCgroups(tt.host)
		if s.parent != nil || !strings.Contains(s.why, tt.want) {
			t.Errorf("%s: findCgroups = %+v, want none, because %q", tt.name, s, tt.want)
		}
	}
	if entries, _ := os.ReadDir(notCgroup); len(entries) != 0 {
		t.Errorf("the trial left %d entries in a folder that is no cgroup", len(entries))
	}

	useCgroupSetup(t, findCgroups(cgroupHost{mountinfo: mi, self: self}))
	if got := CgroupIsolation(); !strings.Contains(got, "without a cgroup") || !strings.Contains(got, "cgroup v1: ") {
		t.Errorf("CgroupIsolation() = %q, want the fallback and its reason", got)
	}
	// The watch still bounds the check as a whole: six processes of 48 MiB under 96 MiB.
	spec := limitSpec(t, Limits{Memory: 96 << 20, Processes: 64})
	out, why, err := runStopped(t, spec, []string{"/usr/bin/timeout", "-s", "KILL", "60", "/usr/bin/python3", "-c", `
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
print("ALL DONE", flush=True)
`})
	if !strings.Contains(why, "more than its limit of 96.0 MiB") || strings.Contains(out.String(), "ALL DONE") {
		t.Errorf("without a cgroup, six processes of 48 MiB under 96 MiB: %v, stopped %q, output %q; want the watch to stop them", err, why, out.String())
	}
}

// TestSetupV2NotDelegated: a v2 cgroup that offers no memory controller (not delegated) is
// refused with the reason and what to do.
func TestSetupV2NotDelegated(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "cgroup.controllers"), []byte("cpu io\n"), 0o644)
	if _, err := setupV2(dir); err == nil || !strings.Contains(err.Error(), "no memory controller") || !strings.Contains(err.Error(), "Delegate=yes") {
		t.Errorf("setupV2 of a cgroup without memory = %v, want it refused, naming Delegate=yes", err)
	}
}

func TestParseCgroupMounts(t *testing.T) {
	tests := []struct {
		name, mountinfo, self string
		want                  map[string]string // key: folder of the process's cgroup
	}{
		{"v1 beside an empty v2 (this project's machines)",
			"30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n" +
				"34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n" +
				"38 30 0:35 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n" +
				"40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n",
			"8:pids:/\n4:memory:/process_api/48113a\n0::/\n",
			map[string]string{"memory": "/sys/fs/cgroup/memory/process_api/48113a", "pids": "/sys/fs/cgroup/pids", "2": "/sys/fs/cgroup/unified"}},
		{"systemd v2",
			"25 21 0:22 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n",
			"0::/system.slice/ticketd.service\n",
			map[string]string{"2": "/sys/fs/cgroup/system.slice/ticketd.service"}},
		{"v1 in a container, a mount root below the hierarchy's",
			"34 30 0:31 /docker/abc /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup rw,memory\n" +
				"35 30 0:32 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro - cgroup cgroup rw,cpu,cpuacct\n",
			"4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n",
			map[string]string{"memory": "/sys/fs/cgroup/memory"}},
		{"a mount point with a space",
			"40 30 0:37 / /mnt/cg\\0402 rw - cgroup2 cgroup2 rw\n", "0::/a\n",
			map[string]string{"2": "/mnt/cg 2/a"}},
	}
	for _, tt := range tests {
		mounts := parseCgroupMounts([]byte(tt.mountinfo))
		own := parseSelfCgroup([]byte(tt.self))
		got := map[string]string{}
		for k, m := range mounts {
			got[k] = m.dir(own[k])
		}
		if len(got) != len(tt.want) {
			t.Errorf("%s: found %v, want %v", tt.name, got, tt.want)
		}
		for k, v := range tt.want {
			if got[k] != v {
				t.Errorf("%s: %s at %q, want %q", tt.name, k, got[k], v)
			}
		}
	}
}

func TestOOMKillCount(t *testing.T) {
	for _, tt := range []struct {
		data string
		want int64
	}{
		{"low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\noom_group_kill 1\n", 2}, // v2 memory.events
		{"oom_kill_disable 0\nunder_oom 0\noom_kill 5\n", 5},                // v1 memory.oom_control
		{"oom_kill_disable 0\nunder_oom 0\n", 0},                            // before 4.13
		{"", 0},
	} {
		if got := oomKillCount([]byte(tt.data)); got != tt.want {
			t.Errorf("oomKillCount(%q) = %d, want %d", tt.data, got, tt.want)
		}
	}
}
