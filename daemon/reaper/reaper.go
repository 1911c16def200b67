// Package reaper makes the daemon the subreaper of every process it starts and reaps the
// orphans that end up with it. A git hook, credential helper or pager that forks into the
// background outlives its git command; without a subreaper it would be re-parented to PID 1,
// which in a container is often not an init that reaps. With PR_SET_CHILD_SUBREAPER it becomes
// the daemon's child: the Reaper collects its exit status, and on Stop kills what is left.
//
// Reaping must not steal the exit status of a process os/exec started: cmd.Wait would then
// fail. Go starts every child with a pidfd it holds until Wait has reaped it, so a zombie
// child of ours that no pidfd of ours refers to is an orphan, and only those are reaped. On a
// kernel without pidfds Start refuses and the daemon runs without a subreaper.
package reaper

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultInterval is how often the Reaper looks for orphans besides on SIGCHLD (signals
// coalesce, and an orphan's death is signalled to us only once it is ours).
const DefaultInterval = 5 * time.Second

// ErrUnsupported is returned by Start where the kernel lacks what sound reaping needs.
var ErrUnsupported = errors.New("reaping orphans needs Linux 5.4 or later (pidfd_open and waitid P_PIDFD)")

// Reaper reaps orphaned descendants of the daemon.
type Reaper struct {
	// Interval is the polling period; 0 means DefaultInterval.
	Interval time.Duration
	// Logger receives a debug record per reaped orphan; nil discards.
	Logger *slog.Logger

	stop chan struct{}
	done chan struct{}
	once sync.Once

	mu     sync.Mutex
	reaped int
}

// SetSubreaper marks this process as the subreaper of its descendants.
func SetSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", err)
	}
	return nil
}

// Start checks that os/exec's children are recognisable, makes this process a subreaper and
// reaps orphans until Stop.
func (r *Reaper) Start() error {
	if err := checkPidfds(); err != nil {
		return err
	}
	if err := SetSubreaper(); err != nil {
		return err
	}
	r.stop, r.done = make(chan struct{}), make(chan struct{})
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGCHLD)
	interval := r.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	go func() {
		defer close(r.done)
		defer signal.Stop(sig)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-sig:
			case <-t.C:
			}
			r.ReapOnce()
		}
	}()
	return nil
}

// Stop ends the reaping loop, kills the orphans still running under us (they belong to
// commands that already ended) and reaps them.
func (r *Reaper) Stop() {
	r.once.Do(func() {
		if r.stop == nil {
			return
		}
		close(r.stop)
		<-r.done
		for _, pid := range orphans(false) {
			unix.Kill(pid, unix.SIGKILL)
		}
		deadline := time.Now().Add(2 * time.Second)
		for len(orphans(false)) > 0 && time.Now().Before(deadline) {
			r.ReapOnce()
			time.Sleep(10 * time.Millisecond)
		}
		r.ReapOnce()
	})
}

// Reaped is how many orphans were reaped so far.
func (r *Reaper) Reaped() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reaped
}

// ReapOnce reaps every orphaned zombie child now and returns how many it reaped.
func (r *Reaper) ReapOnce() int {
	n := 0
	for _, pid := range orphans(true) {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue // already reaped by someone else
		}
		// The pidfd pins the process: check again that it is a zombie child of ours that no
		// other pidfd of ours (os/exec's) refers to.
		if st, ppid := procState(pid); st == 'Z' && ppid == os.Getpid() && !pidfdHeld(pid, fd) {
			var info unix.Siginfo
			if err := unix.Waitid(unix.P_PIDFD, fd, &info, unix.WEXITED|unix.WNOHANG, nil); err == nil {
				n++
				if r.Logger != nil {
					r.Logger.Debug("reaped orphan", "pid", pid)
				}
			}
		}
		unix.Close(fd)
	}
	r.mu.Lock()
	r.reaped += n
	r.mu.Unlock()
	return n
}

// orphans returns our children that no pidfd of ours refers to: zombies only, or live ones.
func orphans(zombies bool) []int {
	self := os.Getpid()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var kids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, ppid := procState(pid)
		if ppid != self || (st == 'Z') != zombies {
			continue
		}
		kids = append(kids, pid)
	}
	if len(kids) == 0 {
		return nil
	}
	held := heldPids(-1)
	out := kids[:0]
	for _, pid := range kids {
		if !held[pid] {
			out = append(out, pid)
		}
	}
	return out
}

// procState returns the state letter and parent pid of pid from /proc/<pid>/stat.
func procState(pid int) (byte, int) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 2 {
		return 0, 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return f[0][0], ppid
}

// pidfdHeld reports whether a pidfd of ours other than except refers to pid.
func pidfdHeld(pid, except int) bool { return heldPids(except)[pid] }

// heldPids reads /proc/self/fdinfo: a pidfd's entry has a "Pid:" line.
func heldPids(except int) map[int]bool {
	held := map[int]bool{}
	entries, err := os.ReadDir("/proc/self/fdinfo")
	if err != nil {
		return held
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd == except {
			continue
		}
		f, err := os.Open("/proc/self/fdinfo/" + e.Name())
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "Pid:"); ok {
				if pid, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && pid > 0 {
					held[pid] = true
				}
				break
			}
		}
		f.Close()
	}
	return held
}

// checkPidfds starts one child and checks that os/exec holds a pidfd for it until Wait, the
// property ReapOnce relies on to leave os/exec's children alone.
func checkPidfds() error {
	cmd := exec.Command("/bin/sh", "-c", "exit 0")
	cmd.Env = []string{}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("reaper self-check: %w", err)
	}
	held := heldPids(-1)[cmd.Process.Pid]
	cmd.Wait()
	if !held {
		return ErrUnsupported
	}
	return nil
}
