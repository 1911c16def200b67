package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The memory of a check as a whole: RLIMIT_DATA bounds each process, so a check that forks
// twenty processes each under it could hold twenty times Limits.Memory. While the command
// runs, ticketd adds up the memory its processes hold — each one's proportional set size
// (Pss in /proc/<pid>/smaps_rollup: its private pages, and its share of the pages it
// shares, so a forked child's copy-on-write pages and a library mapped by all are counted
// once) — every memoryPoll, and kills the sandbox when the sum passes Limits.Memory. It needs
// no privilege and no cgroup: it is the bound where no cgroup can be made for a check
// (cgroup.go); where one is, the kernel bounds the memory at every allocation and the watch
// only adds up the open files and reads the cgroup's OOM kills. What the check keeps in its tmpfs /tmp and /dev/shm is counted by the size watch
// (pipeline/validate), not here. Between two looks a check can allocate what the machine
// gives it in memoryPoll; past that, the kernel's OOM killer still takes a check's process
// first (OOMScoreAdj). While the sum grows the watch looks sooner (nextMemoryLook): a check
// of several processes allocating 3 GiB/s would otherwise pass its limit by up to 750 MiB
// between two looks.
const memoryPoll = 250 * time.Millisecond

// minMemoryPoll and memoryCostFactor bound how often the watch looks while the check's memory
// grows: never sooner than 10 ms, nor sooner than four times the last look took (a tree of
// thousands of processes), so the watch takes at most a fifth of a core.
const (
	minMemoryPoll    = 10 * time.Millisecond
	memoryCostFactor = 4
)

// nextMemoryLook is the wait before the next look at a check whose processes held used bytes
// at this look and last at the one before, elapsed earlier; the look took cost. While the
// memory grows the next look comes halfway to the moment the limit would be reached at
// that pace, so a fast allocator is stopped near the limit, not a poll's worth past it;
// otherwise in memoryPoll.
func nextMemoryLook(limit, used, last int64, elapsed, cost time.Duration) time.Duration {
	wait := memoryPoll
	if used > last && elapsed > 0 {
		half := float64(limit-used) / float64(used-last) * float64(elapsed) / 2
		if half < float64(memoryPoll) {
			wait = time.Duration(half)
		}
	}
	return min(max(wait, minMemoryPoll, memoryCostFactor*cost), memoryPoll)
}

// ErrMemoryWatch is why a command runs without the watch of its whole memory: a kernel
// without pidfds (before 5.3). Its processes are then bounded one by one only.
var ErrMemoryWatch = errors.New("the check's total memory cannot be watched")

// Stopped says why the sandbox stopped cmd (made by Spec.Command), "" when it did not: its
// processes together held more memory than Limits.Memory, or its limits could not be set.
// Call it after cmd.Wait.
func Stopped(cmd *exec.Cmd) string {
	if s, ok := cmd.Stdin.(*starter); ok {
		s.mu.Lock()
		gone := s.cgroupGone
		s.mu.Unlock()
		if gone != nil {
			<-gone // the command has ended: its cgroup is being emptied and removed
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.stopped
	}
	return ""
}

// stop records why the sandbox was stopped (the first reason only).
func (s *starter) stop(why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped == "" {
		s.stopped = why
	}
}

// openPidfd opens a pidfd of bwrap, the command's process, while it is certainly alive (its
// sandbox waits on the block pipe): the watch then never signals a process that reused the
// pid.
func openPidfd(pid int) (int, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return -1, fmt.Errorf("%w: pidfd_open of bwrap (pid %d): %v", ErrMemoryWatch, pid, err)
	}
	return fd, nil
}

// watchMemory kills the sandbox of bwrap (pidfd, pid) once its processes together hold more
// than limit bytes, or more open files than maxFiles, or once the OOM killer has ended one of
// them in its cgroup cg (nil: none), and returns when bwrap has ended or is killed. It owns
// pidfd.
func (s *starter) watchMemory(pidfd, pid int, limit int64, maxFiles int64, cg *checkCgroup) {
	defer unix.Close(pidfd)
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	wait := memoryPoll
	var last int64
	lastAt := time.Now()
	for {
		n, err := unix.Poll(fds, int(max(wait.Milliseconds(), 1)))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if n > 0 {
			return // bwrap ended (readable)
		}
		if err != nil {
			if cg == nil {
				return // the descriptor is unusable: no watch
			}
			// The cgroup is removed when this returns, killing what is in it: never while the
			// check may still run.
			time.Sleep(memoryPoll)
			continue
		}
		if cg != nil {
			if kills := cg.oomKills(); kills > 0 {
				s.stop(oomStopped(limit, kills))
				_ = unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
				return
			}
		}
		start := time.Now()
		// With a cgroup the kernel bounds the memory (and counts it better: pages charged
		// once, kernel buffers too), so only the files are added up.
		used, files := treeUsage(pid, cg == nil)
		wait = nextMemoryLook(limit, used, last, start.Sub(lastAt), time.Since(start))
		last, lastAt = used, start
		if files > maxFiles {
			s.stop(fmt.Sprintf("the check held %d open files at once (the descriptor tables of its processes), more than its limit of %d (by default an eighth of the host's fs.file-max): the sandbox and every process in it were killed before the host ran out of them",
				files, maxFiles))
			_ = unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
			return
		}
		if used <= limit {
			continue
		}
		s.stop(fmt.Sprintf("the check ran out of memory: its processes together held %s, more than its limit of %s (max_check_memory bounds each process's allocations and all of the check's processes together), and the sandbox and every process in it were killed",
			formatMiB(used), formatMiB(limit)))
		// bwrap leads the sandbox: as root it is the init of the PID namespace, as a user its
		// init dies with it (--die-with-parent); either way the whole check ends.
		_ = unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
		return
	}
}

// endCgroup empties and removes the check's cgroup once its command has ended (or was
// killed), and records an OOM kill in it that the watch did not see before the end.
func (s *starter) endCgroup(cg *checkCgroup, limit int64) {
	if err := cg.drain(); err != nil {
		slog.Warn("a check's cgroup could not be emptied", "err", err)
	}
	if kills := cg.oomKills(); kills > 0 {
		s.stop(oomStopped(limit, kills))
	}
	if err := cg.rmdir(); err != nil {
		slog.Warn("a check's cgroup could not be removed", "err", err)
	}
}

// oomStopped is Stopped's reason when the kernel's OOM killer ended kills processes in the
// check's memory cgroup.
func oomStopped(limit, kills int64) string {
	return fmt.Sprintf("the check ran out of memory: its processes together reached its limit of %s (max_check_memory, which its memory cgroup enforces on every allocation, with its /tmp files and the kernel's buffers of its pipes and sockets), the kernel's OOM killer ended %d of them, and the sandbox and every process in it were killed",
		formatMiB(limit), kills)
}

// treeUsage is the memory pid and every process below it hold, the sum of their Pss, and the
// open files they may hold, the sum of their descriptor tables' sizes (FDSize: at least
// the open descriptors, each a file of the host's fs.file-max). Processes it cannot read
// (gone meanwhile) count nothing. Without withMem the memory is not read (0).
func treeUsage(pid int, withMem bool) (mem, files int64) {
	for _, p := range Descendants(pid) {
		if withMem {
			mem += pss(p)
		}
		files += fdSize(p)
	}
	return mem, files
}

// fdSize is the FDSize of process pid's status, 0 when it cannot be read.
func fdSize(pid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	_, rest, ok := strings.Cut(string(data), "\nFDSize:")
	if !ok {
		return 0
	}
	line, _, _ := strings.Cut(rest, "\n")
	n, _ := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
	return n
}

// checkFiles is how many open files a check may hold at once: an eighth of the host's
// fs.file-max (every open file of every process counts in it, and past it every open on the
// host fails with ENFILE, the daemon's database's too), at least 65,536. Each process of a
// check may hold as many as the daemon's RLIMIT_NOFILE (often 20,000 or more), so a hundred
// forked processes, whose memory is mostly shared, could otherwise take them all.
func checkFiles() int64 {
	data, err := os.ReadFile("/proc/sys/fs/file-max")
	if err != nil {
		return 1 << 16
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 1 << 16
	}
	return max(n/8, 1<<16)
}

// pss is the Pss of process pid in bytes, 0 when it cannot be read.
func pss(pid int) int64 {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "Pss:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0
		}
		return kb << 10
	}
	return 0
}

// Descendants returns pid and every process below it. The watch looks up to 100 times a
// second while a check's memory grows, so each look reads the tree's own children lists
// (/proc/PID/task/TID/children: a child belongs to the thread that made it), at a cost that
// grows with the check's processes, not the machine's; where the kernel has no children
// lists (built without CONFIG_PROC_CHILDREN) it reads every process's parent instead.
func Descendants(pid int) []int {
	if !haveChildrenLists() {
		return descendantsByScan(pid)
	}
	out := []int{pid}
	seen := map[int]bool{pid: true} // a pid reused while it is read cannot make a loop
	for i := 0; i < len(out); i++ {
		for _, c := range childrenOf(out[i]) {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	return out
}

// haveChildrenLists says whether this kernel keeps /proc/PID/task/TID/children.
var haveChildrenLists = sync.OnceValue(func() bool {
	_, err := os.Stat("/proc/self/task/" + strconv.Itoa(os.Getpid()) + "/children")
	return err == nil
})

// childrenOf lists the children of every thread of pid, none when it is gone.
func childrenOf(pid int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []int
	for _, t := range tasks {
		data, err := os.ReadFile(dir + t.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(data)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// descendantsByScan is Descendants from every process's parent in /proc.
func descendantsByScan(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return []int{pid}
	}
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := ParentOf(p); ok {
			children[ppid] = append(children[ppid], p)
		}
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// formatMiB writes n bytes in MiB, or GiB from 1 GiB, to a tenth: "96.0 MiB", "4.0 GiB".
func formatMiB(n int64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
