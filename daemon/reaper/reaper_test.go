package reaper

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store/clock/clocktest"
)

// orphan starts `sleep secs` in the background of a shell that exits at once, so the sleep
// is re-parented to this (subreaper) process; it returns the sleep's pid.
func orphan(t *testing.T, secs string) int {
	t.Helper()
	out, err := exec.Command("sh", "-c", "sleep "+secs+" >/dev/null 2>&1 & echo $!").Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscallKill(pid) })
	return pid
}

func syscallKill(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
	}
}

// waitFor polls cond for up to a minute: the bound only keeps a broken reaper from
// hanging the test binary, and a loaded machine may take seconds to schedule the reaper.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	clocktest.WaitFor(t, time.Minute, what, cond)
}

func TestReapsOrphans(t *testing.T) {
	if err := checkPidfds(); err != nil {
		t.Skipf("kernel without pidfds: %v", err)
	}
	if err := SetSubreaper(); err != nil {
		t.Fatal(err)
	}
	// Negative control: without reaping, the orphan stays a zombie of ours.
	pid := orphan(t, "0.05")
	waitFor(t, "the orphan is our zombie", func() bool { st, ppid := procState(pid); return st == 'Z' && ppid == os.Getpid() })
	// The control needs time to pass with nobody reaping: there is no event for "nothing
	// happened", so it gives whoever else might reap the orphan a moment to do it.
	time.Sleep(50 * time.Millisecond)
	if st, _ := procState(pid); st != 'Z' {
		t.Fatalf("the orphan %d was reaped by nobody we know of (state %q): the control proves nothing", pid, st)
	}
	r := &Reaper{Interval: 10 * time.Millisecond}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	waitFor(t, "the orphan is reaped", func() bool { st, _ := procState(pid); return st == 0 })
	if r.Reaped() < 1 {
		t.Errorf("Reaped() = %d, want >= 1", r.Reaped())
	}
}

// TestExecWaitKeepsExitStatus runs os/exec children while the reaper scans as fast as it
// can: every cmd.Wait must still see its own exit status, never ECHILD.
func TestExecWaitKeepsExitStatus(t *testing.T) {
	if err := checkPidfds(); err != nil {
		t.Skipf("kernel without pidfds: %v", err)
	}
	r := &Reaper{Interval: time.Millisecond}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	stop := make(chan struct{})
	var spin sync.WaitGroup
	spin.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				r.ReapOnce()
			}
		}
	})
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := range 100 {
		wg.Go(func() {
			code := i % 7
			cmd := exec.Command("sh", "-c", "sleep 0.0$1; exit $0", strconv.Itoa(code), strconv.Itoa(i%10))
			err := cmd.Run()
			var ee *exec.ExitError
			switch {
			case code == 0 && err != nil:
				errs <- err
			case code != 0 && (!errors.As(err, &ee) || ee.ExitCode() != code):
				errs <- err
			}
		})
		if i%10 == 0 {
			orphan(t, "0.01")
		}
	}
	wg.Wait()
	close(stop)
	spin.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("an exec'd child's Wait lost its exit status to the reaper: %v", err)
	}
	waitFor(t, "the orphans are reaped", func() bool { return len(orphans(true)) == 0 })
	t.Logf("reaped %d orphans while 100 exec'd children kept their exit status", r.Reaped())
}

func TestStopKillsLiveOrphans(t *testing.T) {
	if err := checkPidfds(); err != nil {
		t.Skipf("kernel without pidfds: %v", err)
	}
	r := &Reaper{Interval: 10 * time.Millisecond}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	pid := orphan(t, "300")
	waitFor(t, "the orphan is ours", func() bool { _, ppid := procState(pid); return ppid == os.Getpid() })
	mine := exec.Command("sleep", "300")
	if err := mine.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { mine.Process.Kill(); mine.Wait() }()
	r.Stop()
	if st, _ := procState(pid); st != 0 {
		t.Errorf("orphan %d survived Stop (state %q)", pid, st)
	}
	if st, _ := procState(mine.Process.Pid); st == 0 || st == 'Z' {
		t.Errorf("Stop killed a child os/exec still owns (state %q)", st)
	}
}
