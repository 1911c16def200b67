package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A check's cgroup: the only bound the kernel keeps on the memory of all of a check's
// processes together at every allocation, and on the kernel memory behind its descriptors.
// RLIMIT_DATA bounds each process, and the Pss watch (memwatch.go) looks at their sum every
// 250 ms at most: between two looks a burst of processes can take what the machine gives
// them, and pipe buffers and tmpfs pages are in no process's Pss. Where ticketd can make a
// child cgroup it may write, each check's sandbox goes into one of its own, with
// max_check_memory as its memory limit (swap off) and max_check_processes as its pids
// limit, before its command runs; the cgroup is removed after the check. An OOM kill in it
// ends the check as the watch does. Where none can be made, checks run as before: the
// rlimits and the watch (which runs in both cases).
//
//   - cgroup v2: the daemon's own cgroup must offer the memory (and pids) controllers
//     (systemd: Delegate=yes). Controllers can be enabled for children only in a cgroup that
//     holds no process, so ticketd first moves itself into a leaf of its own
//     (ticketd-daemon), as systemd's delegation rules ask of a delegated service.
//   - cgroup v1: the memory (and pids) hierarchies' folders of the daemon's own cgroups must
//     be writable (as root): each check gets a folder under each.
//
// TICKETD_CHECK_CGROUPS=off turns them off (the fallback, for a machine where they
// misbehave).
type cgroupParent struct {
	v2 bool
	// memory and pids are the folders each check's cgroup is made in: the same one under v2,
	// one per hierarchy under v1; pids is "" when no pids controller is offered.
	memory, pids string
	next         atomic.Int64
}

// checkCgroup is one check's cgroup: one folder under v2, one per hierarchy under v1.
type checkCgroup struct {
	v2   bool
	dirs []string // the memory folder first
}

// cgroupSetup is what CheckCgroups found: parent, or why there is none.
type cgroupSetup struct {
	parent *cgroupParent
	why    string
}

var (
	cgroupsOnce sync.Once
	cgroupsSet  cgroupSetup
	// cgroupsTest replaces the machine's setup in tests.
	cgroupsTest atomic.Pointer[cgroupSetup]
)

// checkCgroupNamePrefix starts every cgroup ticketd makes, followed by the daemon's pid: a
// daemon starting after a crash removes its predecessors' empty leftovers, never another
// live daemon's (RemoveLeftovers for scratch folders does the same).
const checkCgroupNamePrefix = "ticketd-"

// cgroups is this process's cgroup setup, found once.
func cgroups() cgroupSetup {
	if s := cgroupsTest.Load(); s != nil {
		return *s
	}
	cgroupsOnce.Do(func() {
		cgroupsSet = findCgroups(cgroupHost{
			mountinfo: "/proc/self/mountinfo",
			self:      "/proc/self/cgroup",
			off:       os.Getenv("TICKETD_CHECK_CGROUPS") == "off",
		})
	})
	return cgroupsSet
}

// CgroupIsolation says in one line which bound is in force on a check's memory and processes
// as a whole: its own cgroup (and where), or the per-process limits and the memory watch
// (and why no cgroup), for the log line that opens a night.
func CgroupIsolation() string {
	s := cgroups()
	if s.parent == nil {
		return "checks run without a cgroup of their own (" + s.why + "): each process is bounded by max_check_memory (RLIMIT_DATA) and max_check_processes (RLIMIT_NPROC), and all of a check's processes together by the memory watch (their Pss, looked at every 250 ms at most); kernel memory behind descriptors (pipe and socket buffers) and memory allocated between two looks are not bounded"
	}
	p := s.parent
	if p.v2 {
		return "each check runs in its own cgroup (v2, under " + p.memory + "): memory.max = max_check_memory, memory.swap.max = 0, memory.oom.group = 1" + pidsNote(p.pids != "", "pids.max = max_check_processes")
	}
	return "each check runs in its own cgroups (v1, under " + p.memory + pidsNote(p.pids != "", " and "+p.pids) + "): memory.limit_in_bytes and memory.memsw.limit_in_bytes = max_check_memory" + pidsNote(p.pids != "", "pids.max = max_check_processes")
}

func pidsNote(ok bool, s string) string {
	switch {
	case !ok:
		return " (no pids controller: processes bounded by RLIMIT_NPROC only)"
	case strings.HasPrefix(s, " "):
		return s
	}
	return ", " + s
}

// cgroupHost names where findCgroups reads the machine's cgroups: the files of /proc (tests
// name others).
type cgroupHost struct {
	mountinfo, self string
	off             bool
}

// findCgroups finds where checks' cgroups can be made, v2 first, and proves it by making and
// removing one; it removes the empty cgroups a crashed daemon left.
func findCgroups(h cgroupHost) cgroupSetup {
	if h.off {
		return cgroupSetup{why: "TICKETD_CHECK_CGROUPS=off"}
	}
	mi, err := os.ReadFile(h.mountinfo)
	if err != nil {
		return cgroupSetup{why: fmt.Sprintf("read %s: %v", h.mountinfo, err)}
	}
	self, err := os.ReadFile(h.self)
	if err != nil {
		return cgroupSetup{why: fmt.Sprintf("read %s: %v", h.self, err)}
	}
	mounts := parseCgroupMounts(mi)
	own := parseSelfCgroup(self)
	var whys []string
	if m, ok := mounts["2"]; ok {
		p, err := setupV2(m.dir(own["2"]))
		if err == nil {
			return cgroupSetup{parent: p}
		}
		whys = append(whys, "cgroup v2: "+err.Error())
	}
	mem, okMem := mounts["memory"]
	if okMem {
		pids := ""
		if m, ok := mounts["pids"]; ok {
			pids = m.dir(own["pids"])
		}
		p, err := setupV1(mem.dir(own["memory"]), pids)
		if err == nil {
			return cgroupSetup{parent: p}
		}
		whys = append(whys, "cgroup v1: "+err.Error())
	}
	if len(whys) == 0 {
		return cgroupSetup{why: "no cgroup v2 or v1 memory hierarchy is mounted"}
	}
	return cgroupSetup{why: strings.Join(whys, "; ")}
}

// cgroupMount is where one hierarchy is mounted and which of its cgroups is its root there.
type cgroupMount struct{ point, root string }

// dir is the folder of cgroup path cg (as /proc/self/cgroup names it) under this mount.
func (m cgroupMount) dir(cg string) string {
	rel := cg
	if m.root != "/" {
		rel = strings.TrimPrefix(cg, m.root)
	}
	return filepath.Join(m.point, rel)
}

// parseCgroupMounts reads /proc/self/mountinfo: the cgroup2 mount under key "2", each v1
// mount under each controller it carries (memory, pids). The first mount of each wins.
func parseCgroupMounts(mountinfo []byte) map[string]cgroupMount {
	out := map[string]cgroupMount{}
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	for sc.Scan() {
		// id parent major:minor root point options [optional...] - fstype source superopts
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 {
			continue
		}
		m := cgroupMount{point: unescapeMount(f[4]), root: unescapeMount(f[3])}
		switch g[0] {
		case "cgroup2":
			if _, ok := out["2"]; !ok {
				out["2"] = m
			}
		case "cgroup":
			for _, opt := range strings.Split(g[2], ",") {
				if _, ok := out[opt]; !ok && (opt == "memory" || opt == "pids") {
					out[opt] = m
				}
			}
		}
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// parseSelfCgroup reads /proc/self/cgroup: the v2 path under key "2", each v1 path under
// each controller of its hierarchy.
func parseSelfCgroup(data []byte) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			out["2"] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out
}

// setupV2 makes dir, the daemon's own v2 cgroup, a parent of checks' cgroups: its memory and
// pids controllers enabled for its children, the daemon moved into a leaf of its own when it
// holds the daemon; then a trial cgroup is made and removed.
func setupV2(dir string) (*cgroupParent, error) {
	ctrl, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return nil, fmt.Errorf("read the controllers of the daemon's cgroup: %w", err)
	}
	offered := strings.Fields(string(ctrl))
	if !slices.Contains(offered, "memory") {
		return nil, fmt.Errorf("the daemon's cgroup %s offers no memory controller (cgroup.controllers: %q): it is not delegated (systemd: Delegate=yes in the unit)", dir, strings.TrimSpace(string(ctrl)))
	}
	want := []string{"memory"}
	if slices.Contains(offered, "pids") {
		want = append(want, "pids")
	}
	if err := enableV2(dir, want); err != nil {
		return nil, err
	}
	p := &cgroupParent{v2: true, memory: dir}
	if slices.Contains(want, "pids") {
		p.pids = dir
	}
	removeCgroupLeftovers(dir)
	if err := p.trial(); err != nil {
		return nil, err
	}
	return p, nil
}

// enableV2 enables controllers in dir's cgroup.subtree_control, first moving the daemon into
// the leaf dir/ticketd-daemon when dir holds it (a cgroup with processes cannot have
// controllers enabled for its children: EBUSY). If that does not help it moves back.
func enableV2(dir string, controllers []string) error {
	sub, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return fmt.Errorf("read %s/cgroup.subtree_control: %w", dir, err)
	}
	var missing []string
	for _, c := range controllers {
		if !slices.Contains(strings.Fields(string(sub)), c) {
			missing = append(missing, "+"+c)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	line := strings.Join(missing, " ")
	err = writeCgroup(dir, "cgroup.subtree_control", line)
	if err == nil || !errors.Is(err, unix.EBUSY) {
		if err != nil {
			return fmt.Errorf("enable %s for the checks' cgroups: %w", line, err)
		}
		return nil
	}
	leaf := filepath.Join(dir, checkCgroupNamePrefix+"daemon")
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("make a leaf cgroup for the daemon (its own holds processes, so no controller can be enabled for children): %w", err)
	}
	self := strconv.Itoa(os.Getpid())
	if err := writeCgroup(leaf, "cgroup.procs", self); err != nil {
		os.Remove(leaf)
		return fmt.Errorf("move the daemon into %s: %w", leaf, err)
	}
	if err := writeCgroup(dir, "cgroup.subtree_control", line); err != nil {
		_ = writeCgroup(dir, "cgroup.procs", self)
		os.Remove(leaf)
		return fmt.Errorf("enable %s for the checks' cgroups (the daemon moved into %s; other processes in its cgroup?): %w", line, leaf, err)
	}
	return nil
}

// setupV1 makes checks' cgroups under memDir (and pidsDir when not ""), the daemon's own v1
// cgroups, once a trial cgroup could be made and removed there.
func setupV1(memDir, pidsDir string) (*cgroupParent, error) {
	p := &cgroupParent{memory: memDir, pids: pidsDir}
	removeCgroupLeftovers(memDir)
	if pidsDir != "" {
		removeCgroupLeftovers(pidsDir)
	}
	if err := p.trial(); err != nil {
		return nil, err
	}
	return p, nil
}

// trial makes a check's cgroup with small limits and removes it: the proof that the
// cgroups can be written, before a check relies on it.
func (p *cgroupParent) trial() error {
	cg, err := p.create(Limits{Memory: 64 << 20, Processes: 64})
	if err != nil {
		return err
	}
	return cg.remove()
}

// create makes the cgroup of one check under l: memory limit, swap off (and the OOM killer
// taking the whole check, under v2), pids limit. A partial one is removed.
func (p *cgroupParent) create(l Limits) (*checkCgroup, error) {
	name := checkCgroupNamePrefix + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(p.next.Add(1), 10)
	cg := &checkCgroup{v2: p.v2}
	fail := func(err error) (*checkCgroup, error) {
		_ = cg.remove()
		return nil, err
	}
	mem := filepath.Join(p.memory, name)
	if err := os.Mkdir(mem, 0o755); err != nil {
		return nil, fmt.Errorf("make the check's cgroup: %w", err)
	}
	cg.dirs = append(cg.dirs, mem)
	limit := "max"
	if m := l.MemoryBytes(); m > 0 {
		limit = strconv.FormatInt(m, 10)
	} else if !p.v2 {
		limit = "-1"
	}
	if p.v2 {
		if err := writeCgroup(mem, "memory.max", limit); err != nil {
			return fail(err)
		}
		// No swap controller file where the kernel has no swap accounting: nothing to turn off.
		if err := writeCgroup(mem, "memory.swap.max", "0"); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fail(err)
		}
		if err := writeCgroup(mem, "memory.oom.group", "1"); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fail(err)
		}
	} else {
		if err := writeCgroup(mem, "memory.limit_in_bytes", limit); err != nil {
			return fail(err)
		}
		// memsw is memory and swap together: equal to the memory limit, no swap. Absent
		// without swap accounting (swapaccount=0).
		if err := writeCgroup(mem, "memory.memsw.limit_in_bytes", limit); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fail(err)
		}
		// Socket buffers are charged in v1 only for TCP, and only once this limit is set.
		_ = writeCgroup(mem, "memory.kmem.tcp.limit_in_bytes", limit)
	}
	if p.pids != "" {
		dir := mem
		if !p.v2 {
			dir = filepath.Join(p.pids, name)
			if err := os.Mkdir(dir, 0o755); err != nil {
				return fail(fmt.Errorf("make the check's pids cgroup: %w", err))
			}
			cg.dirs = append(cg.dirs, dir)
		}
		procs := "max"
		if n := l.ProcessCount(); n > 0 {
			procs = strconv.Itoa(n)
		}
		if err := writeCgroup(dir, "pids.max", procs); err != nil {
			return fail(err)
		}
	}
	return cg, nil
}

// join puts process pid (the sandbox's first process, before its command runs) into the
// check's cgroups; every process it starts is born there.
func (c *checkCgroup) join(pid int) error {
	for _, d := range c.dirs {
		if err := writeCgroup(d, "cgroup.procs", strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("put the sandbox (pid %d) into its cgroup: %w", pid, err)
		}
	}
	return nil
}

// oomKills is how many processes the OOM killer ended in the check's memory cgroup (v2:
// memory.events, v1: memory.oom_control), 0 when it cannot be read.
func (c *checkCgroup) oomKills() int64 {
	file := "memory.oom_control"
	if c.v2 {
		file = "memory.events"
	}
	data, err := os.ReadFile(filepath.Join(c.dirs[0], file))
	if err != nil {
		return 0
	}
	return oomKillCount(data)
}

// oomKillCount is the oom_kill line of memory.events or memory.oom_control.
func oomKillCount(data []byte) int64 {
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
			return n
		}
	}
	return 0
}

// cgroupDrain bounds how long remove waits for the check's killed processes to leave.
const cgroupDrain = 10 * time.Second

// remove empties the check's cgroups and removes them.
func (c *checkCgroup) remove() error {
	return errors.Join(c.drain(), c.rmdir())
}

// drain kills whatever is left in the check's cgroups (v2: cgroup.kill; v1, or a kernel
// before 5.14: each process listed) and waits until they are empty.
func (c *checkCgroup) drain() error {
	var errs []error
	for _, d := range c.dirs {
		if c.v2 {
			_ = writeCgroup(d, "cgroup.kill", "1")
		}
		deadline := time.Now().Add(cgroupDrain)
		for {
			pids := cgroupProcs(d)
			if len(pids) == 0 {
				break
			}
			if time.Now().After(deadline) {
				errs = append(errs, fmt.Errorf("the check's cgroup %s still holds processes %v after %v", d, pids, cgroupDrain))
				break
			}
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return errors.Join(errs...)
}

// rmdir removes the check's emptied cgroups, the pids one first under v1.
func (c *checkCgroup) rmdir() error {
	var errs []error
	for i := len(c.dirs) - 1; i >= 0; i-- {
		if err := os.Remove(c.dirs[i]); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove the check's cgroup: %w", err))
		}
	}
	return errors.Join(errs...)
}

// cgroupProcs lists the processes in cgroup dir.
func cgroupProcs(dir string) []int {
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(data)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// removeCgroupLeftovers removes the checks' cgroups under dir that a daemon no longer running
// left (killed with SIGKILL between a check's start and its end). One still holding
// processes stays (rmdir refuses it).
func removeCgroupLeftovers(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), checkCgroupNamePrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidStr, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if !ok || err != nil || pid == os.Getpid() || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			continue // not one of ours, or its daemon still runs
		}
		_ = os.Remove(filepath.Join(dir, e.Name()))
	}
}

// writeCgroup writes value into the control file name of cgroup dir. It never creates the
// file: a folder that is not a cgroup has none.
func writeCgroup(dir, name, value string) error {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, werr := f.WriteString(value)
	cerr := f.Close()
	if werr != nil {
		return fmt.Errorf("write %q to %s: %w", value, filepath.Join(dir, name), werr)
	}
	return cerr
}
