package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Limits bound what one sandboxed command may take of the machine besides time and disk: a
// test that appends to a list forever, or forks in a loop, must fail by itself instead of
// taking the daemon, its git and the other workers' checks down with it. Measured before
// these limits (issue notes, docs/security.md): a check whose processes together outgrew
// the memory left got the daemon killed by the kernel's OOM killer (it was the largest
// single process), and a fork loop used the pids the daemon needed, which then died with
// "pthread_create failed: Resource temporarily unavailable".
//
// They are set on the sandbox's first process after bwrap has made its namespaces and
// before the command runs (bwrap's --info-fd and --block-fd), so every process of the
// command inherits them and none can raise them (it has no capability):
//   - Memory is RLIMIT_DATA of each process: what it may allocate (heap and private
//     writable mappings; reserved but inaccessible address space and files it maps do not
//     count). Past it an allocation fails: Python raises MemoryError. It also bounds all of
//     the command's processes together: while it runs, the memory they hold is added up,
//     and past Memory the sandbox is killed (memwatch.go; Stopped says so).
//   - Where ticketd can make a cgroup for the check (cgroup.go), Memory is also its memory
//     limit and Processes its pids limit: the kernel holds all of the check's processes
//     together to them at every allocation and fork, kernel buffers of its pipes included.
//   - Processes is RLIMIT_NPROC: the processes and threads the command may have at once.
//     The kernel counts them per user namespace, and every command has one of its own, so
//     they are the command's alone, not its user's: one check's fork loop cannot starve
//     another's, nor the daemon.
//   - Every process of the command has oom_score_adj 1000: when the machine runs out of
//     memory anyway (many processes each under Memory), the kernel kills a check's process
//     first, never the daemon. /proc is read-only in the sandbox (procArgs), so no process
//     of the check can write it back down.
//
// The zero value means the defaults.
type Limits struct {
	// Memory is the bytes each process may allocate, and all of the command's processes
	// together may hold; 0 means DefaultMemoryLimit(), negative no limit.
	Memory int64
	// Processes is how many processes and threads the command may have at once; 0 means
	// DefaultProcessLimit(), negative no limit.
	Processes int
	// Files is how many open files all of the command's processes may hold at once (the
	// sizes of their descriptor tables, watched with the memory); 0 means an eighth of the
	// host's fs.file-max, at least 65,536 (checkFiles), negative no limit.
	Files int64
	// Ptys is how many pseudo-terminals the command may hold at once: the max of the
	// devpts instance mounted at the sandbox's /dev/pts (ptys.go); 0 means DefaultPtyLimit,
	// negative no bound of its own (bwrap's instance, which only the kernel's
	// kernel.pty.max less kernel.pty.reserve bounds, for all namespaces together).
	Ptys int
}

// DefaultPtyLimit is the pty limit of a Limits whose Ptys is 0: far more than a test suite
// holds at once (pexpect and the pty module open one or two per child they drive), a
// fiftieth of what the kernel gives all namespaces together here (3,071).
const DefaultPtyLimit = 64

// PtyCount is the pty limit in force, 0 for none.
func (l Limits) PtyCount() int {
	switch {
	case l.Ptys == 0:
		return DefaultPtyLimit
	case l.Ptys < 0:
		return 0
	}
	return l.Ptys
}

// FileCount is the open-files limit in force, 0 for none.
func (l Limits) FileCount() int64 {
	switch {
	case l.Files == 0:
		return checkFiles()
	case l.Files < 0:
		return 0
	}
	return l.Files
}

// Defaults of Limits: generous for real test suites (numpy and its BLAS threads, pytest-xdist
// workers), far below what a 2-core, 24 GiB machine with three workers can lose at once
// (kernel.pid_max is 32,768 on many distributions).
const (
	// baseProcessLimit is DefaultProcessLimit's floor.
	baseProcessLimit = 4096
	// OOMScoreAdj is the oom_score_adj of every process of a sandboxed command: the
	// kernel's first choice when memory runs out.
	OOMScoreAdj = 1000
	// baseMemoryLimit and memoryPerCPU make DefaultMemoryLimit.
	baseMemoryLimit int64 = 4 << 30
	memoryPerCPU    int64 = 256 << 20
)

// DefaultMemoryLimit is the memory limit of a Limits whose Memory is 0: 4 GiB, or 256 MiB per
// CPU where that is more. RLIMIT_DATA counts what a process has mapped writable, used or not,
// and a BLAS library maps a buffer per thread, one thread per CPU: measured, numpy with
// OpenBLAS 0.3.21 maps 136 MiB per thread, so a fixed 4 GiB would fail `import numpy` on a
// machine of 30 CPUs while its memory in use stays near 100 MiB.
func DefaultMemoryLimit() int64 {
	return max(baseMemoryLimit, memoryPerCPU*int64(runtime.NumCPU()))
}

// DefaultProcessLimit is the process limit of a Limits whose Processes is 0: 4096, or twice
// the CPUs squared where that is more. pytest-xdist's -n auto starts a worker per CPU, and
// each worker that imports numpy starts a BLAS thread per CPU: on 64 CPUs that alone is
// 4,096 threads.
func DefaultProcessLimit() int {
	n := runtime.NumCPU()
	return max(baseProcessLimit, 2*n*n)
}

// MemoryBytes is the memory limit in force, 0 for none.
func (l Limits) MemoryBytes() int64 {
	switch {
	case l.Memory == 0:
		return DefaultMemoryLimit()
	case l.Memory < 0:
		return 0
	}
	return l.Memory
}

// ProcessCount is the process limit in force, 0 for none.
func (l Limits) ProcessCount() int {
	switch {
	case l.Processes == 0:
		return DefaultProcessLimit()
	case l.Processes < 0:
		return 0
	}
	return l.Processes
}

// rlimits are the resource limits l sets, each as both soft and hard limit: a process
// without CAP_SYS_RESOURCE can lower its limits but never raise a hard one.
func (l Limits) rlimits() []rlimit {
	var out []rlimit
	if m := l.MemoryBytes(); m > 0 {
		out = append(out, rlimit{"memory (RLIMIT_DATA)", unix.RLIMIT_DATA, uint64(m)})
	}
	if n := l.ProcessCount(); n > 0 {
		out = append(out, rlimit{"processes (RLIMIT_NPROC)", unix.RLIMIT_NPROC, uint64(n)})
	}
	return out
}

type rlimit struct {
	name     string
	resource int
	value    uint64
}

// infoFD and blockFD are the descriptors bwrap gets for --info-fd (it writes the sandbox's
// first process's pid there once it exists) and --block-fd (that process waits for a byte
// there before it runs the command): the two cmd.ExtraFiles after the seccomp filter.
func infoFD(euid int) int  { return seccompFD(euid) + 1 }
func blockFD(euid int) int { return seccompFD(euid) + 2 }

// limitArgs are the bwrap flags of the hand-over in which the limits are set.
func limitArgs(euid int) []string {
	return []string{"--info-fd", strconv.Itoa(infoFD(euid)), "--block-fd", strconv.Itoa(blockFD(euid))}
}

// starter is the stdin of a bwrap command: empty, as /dev/null would be. os/exec reads it
// only once the process has started: it then lets go of ticketd's copies of the
// descriptors bwrap was handed (the seccomp filter, the user namespace, the hand-over's
// pipe ends), waits for bwrap to name the sandbox's first process, sets the limits on it
// and lets it run the command. When the limits cannot be set the sandbox is killed before
// the command runs, and what failed is kept for Stopped (and written to a stderr that is a file).
type starter struct {
	cmd    *exec.Cmd
	limits Limits
	// handed are ticketd's copies of what bwrap got (cmd.ExtraFiles), closed once it runs.
	handed []*os.File
	info   *os.File // read end of --info-fd
	block  *os.File // write end of --block-fd
	// ptys is the hand-over in which the sandbox's devpts instance is mounted (ptys.go);
	// nil when the ptys are not bounded.
	ptys *ptyHandover
	once sync.Once

	mu      sync.Mutex
	stopped string // why the sandbox stopped the command (Stopped)
	// cgroupGone is closed once the check's cgroup has been emptied and removed, after the
	// command ended (Stopped waits for it: an OOM kill is read there); nil without one.
	cgroupGone chan struct{}
}

// WriteTo is Read for os/exec's copy of stdin into the command's pipe (io.Copy), which
// without it allocates a 32 KB buffer for every sandboxed command only to read the EOF.
func (s *starter) WriteTo(io.Writer) (int64, error) {
	s.Read(nil)
	return 0, nil
}

func (s *starter) Read([]byte) (int, error) {
	s.once.Do(func() {
		for _, f := range s.handed {
			f.Close()
		}
		defer s.info.Close()
		defer s.block.Close()
		if s.ptys != nil {
			defer s.ptys.close()
		}
		if err := s.apply(); err != nil {
			// Before the command runs: the block is never released. bwrap leads its group.
			syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			s.cmd.Process.Kill()
			s.stop(fmt.Sprintf("the sandbox was stopped before the command ran: %v", err))
			// Only to a file: any other writer is being written by os/exec's own copying
			// goroutine (a data race); callers with a buffer read Stopped.
			if f, ok := s.cmd.Stderr.(*os.File); ok {
				fmt.Fprintf(f, "ticketd: the sandbox was stopped before the command ran: %v\n", err)
			}
		}
	})
	return 0, io.EOF
}

// apply sets the limits on the sandbox's first process and releases it. A bwrap that ended
// before making the sandbox (its own error is on stderr) is no error here.
func (s *starter) apply() error {
	var info struct {
		ChildPID int `json:"child-pid"`
	}
	if err := json.NewDecoder(s.info).Decode(&info); err != nil {
		if errors.Is(err, io.EOF) {
			return nil // bwrap ended first
		}
		return fmt.Errorf("read bwrap's --info-fd: %w", err)
	}
	// As root bwrap is the init of a PID namespace ticketd made: the pid it names is its
	// own namespace's. Its only child is that process, seen from here.
	child, err := onlyChild(s.cmd.Process.Pid)
	if err != nil {
		return err
	}
	if err := applyLimits(child, s.limits); err != nil {
		return err
	}
	if m := s.limits.MemoryBytes(); m > 0 && os.Geteuid() == 0 {
		if err := setIPCLimits(child, m); err != nil {
			return err
		}
	}
	// bwrap itself only waits for the sandbox; it goes first too.
	_ = writeOOMScoreAdj(s.cmd.Process.Pid)
	pidfd, err := openPidfd(s.cmd.Process.Pid)
	if err != nil {
		warnNoMemoryWatch.Do(func() {
			slog.Warn("checks run without the bound on their whole memory and open files: each process stays bounded by max_check_memory, all of a check's processes together are not", "err", err)
		})
	}
	// The check's cgroup, where one can be made; it needs the pidfd's watch to be removed
	// once the check has ended, so a kernel without pidfds (before 5.3) has none.
	var cg *checkCgroup
	if parent := cgroups().parent; parent != nil && pidfd >= 0 {
		if cg, err = parent.create(s.limits); err == nil {
			if err = cg.join(child); err != nil {
				_ = cg.remove()
			}
		}
		if err != nil {
			unix.Close(pidfd)
			return err
		}
	}
	if err := s.release(child); err != nil {
		if pidfd >= 0 {
			unix.Close(pidfd)
		}
		if cg != nil {
			_ = cg.remove()
		}
		return err
	}
	if pidfd >= 0 {
		var gone chan struct{}
		if cg != nil {
			gone = make(chan struct{})
			s.mu.Lock()
			s.cgroupGone = gone
			s.mu.Unlock()
		}
		limit := s.limits.MemoryBytes()
		if limit <= 0 {
			limit = math.MaxInt64
		}
		files := s.limits.FileCount()
		if files <= 0 {
			files = math.MaxInt64
		}
		watching.Add(1)
		go func() {
			defer watching.Done()
			s.watchMemory(pidfd, s.cmd.Process.Pid, limit, files, cg)
			if cg != nil {
				s.endCgroup(cg, limit)
				close(gone)
			}
		}()
	}
	return nil
}

// release lets bwrap build the sandbox and, where the ptys are bounded, mounts their devpts
// instance in it (ptyHandover) before its shell runs the command; child is the sandbox's
// first process.
func (s *starter) release(child int) error {
	if _, err := s.block.Write([]byte{1}); err != nil {
		return fmt.Errorf("release the sandbox (bwrap's --block-fd): %w", err)
	}
	if s.ptys == nil {
		return nil
	}
	return s.ptys.run(child)
}

// watching counts the memory watches running. A watch ends, closing its pidfd, once it sees
// bwrap end, which may be just after the command's Wait has returned: the tests that count
// ticketd's descriptors wait for it.
var watching sync.WaitGroup

// warnNoMemoryWatch logs once that the kernel offers no pidfds for the memory watch.
var warnNoMemoryWatch sync.Once

// applyLimits sets l on process pid, and its oom_score_adj. A limit above what pid has
// already (the daemon's own, inherited: LimitNPROC= in its unit, say) leaves that one: ticketd
// never raises a limit, and as a user could not.
func applyLimits(pid int, l Limits) error {
	for _, r := range l.rlimits() {
		var old unix.Rlimit
		if err := unix.Prlimit(pid, r.resource, nil, &old); err != nil {
			return fmt.Errorf("read the %s of the sandbox (pid %d): %w", r.name, pid, err)
		}
		v := min(r.value, old.Max)
		lim := unix.Rlimit{Cur: v, Max: v}
		if err := unix.Prlimit(pid, r.resource, &lim, nil); err != nil {
			return fmt.Errorf("limit the %s of the sandbox (pid %d) to %d: %w", r.name, pid, r.value, err)
		}
	}
	if err := writeOOMScoreAdj(pid); err != nil {
		return fmt.Errorf("make the sandbox (pid %d) the OOM killer's first choice: %w", pid, err)
	}
	return nil
}

// writeOOMScoreAdj sets OOMScoreAdj on pid. Raising it needs no privilege.
func writeOOMScoreAdj(pid int) error {
	return os.WriteFile("/proc/"+strconv.Itoa(pid)+"/oom_score_adj", []byte(strconv.Itoa(OOMScoreAdj)), 0)
}

// onlyChild is the single child process of the single-threaded process pid: what its
// thread's children file lists, or, on a kernel without one, what names pid as its parent
// in /proc.
func onlyChild(pid int) (int, error) {
	p := strconv.Itoa(pid)
	if data, err := os.ReadFile("/proc/" + p + "/task/" + p + "/children"); err == nil {
		f := strings.Fields(string(data))
		if len(f) != 1 {
			return 0, fmt.Errorf("find the sandbox's first process: bwrap (pid %d) has %d children, want 1", pid, len(f))
		}
		return strconv.Atoi(f[0])
	}
	return onlyChildByParent(pid)
}

// onlyChildByParent is onlyChild found by the parent each process in /proc names.
func onlyChildByParent(pid int) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("find the sandbox's first process: %w", err)
	}
	var kids []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := ParentOf(p); ok && ppid == pid {
			kids = append(kids, p)
		}
	}
	if len(kids) != 1 {
		return 0, fmt.Errorf("find the sandbox's first process: bwrap (pid %d) has %d children, want 1", pid, len(kids))
	}
	return kids[0], nil
}

// ParentOf is pid's parent, read from /proc/<pid>/stat; false when it cannot be read.
func ParentOf(pid int) (int, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	rest := string(data)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	f := strings.Fields(rest)
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

// limitPipes makes the hand-over's two pipes: bwrap gets the info pipe's write end and the
// block pipe's read end.
func limitPipes() (infoR, infoW, blockR, blockW *os.File, err error) {
	if infoR, infoW, err = os.Pipe(); err != nil {
		return nil, nil, nil, nil, fmt.Errorf("sandbox: pipe for bwrap's --info-fd: %w", err)
	}
	if blockR, blockW, err = os.Pipe(); err != nil {
		infoR.Close()
		infoW.Close()
		return nil, nil, nil, nil, fmt.Errorf("sandbox: pipe for bwrap's --block-fd: %w", err)
	}
	return infoR, infoW, blockR, blockW, nil
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}
