package sandbox

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// TestIPCLimitsKeepTheThread: setting a check's IPC limits must not end the OS thread it ran
// on. Every process ticketd starts holds a parent-death signal, sent when the thread that
// started it exits; a thread ended with a locked goroutine killed bwraps and git processes
// that other goroutines had started from it (checks stopped before they ran, under load).
func TestIPCLimitsKeepTheThread(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("joining another IPC namespace needs root")
	}
	target := exec.Command("unshare", "--ipc", "sleep", "60")
	if err := target.Start(); err != nil {
		t.Skipf("unshare --ipc: %v", err)
	}
	t.Cleanup(func() { target.Process.Kill(); target.Wait() })
	// Children started from many threads, each to die with the thread that started it.
	var kids []*exec.Cmd
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := exec.Command("sleep", "60")
			c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			if err := c.Start(); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			kids = append(kids, c)
			mu.Unlock()
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, c := range kids {
			c.Process.Kill()
			c.Wait()
		}
	})
	for range 64 {
		if err := setIPCLimits(target.Process.Pid, 64<<20); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range kids {
		// A killed child of ours stays as a zombie until waited for: its state says so.
		data, err := os.ReadFile("/proc/" + strconv.Itoa(c.Process.Pid) + "/stat")
		if _, rest, _ := strings.Cut(string(data), ") "); err != nil || strings.HasPrefix(rest, "Z") {
			t.Fatalf("child %d, started with a parent-death signal, died while IPC limits were set (its starting thread ended)", c.Process.Pid)
		}
	}
}
