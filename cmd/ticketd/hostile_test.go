package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store/clock/clocktest"
)

// hostileConftest swaps pytest's JUnit report for a FIFO at exit, as issue 19's probe did;
// with slow, it first waits in the middle of the run, so a signal finds the check running.
func hostileConftest(slow bool) string {
	s := "import os\nimport time\n\n\ndef pytest_unconfigure(config):\n    p = config.option.xmlpath\n    if p:\n        os.remove(p)\n        os.mkfifo(p)\n"
	if slow {
		s += "\n\ndef pytest_sessionstart(session):\n    time.sleep(30)\n"
	}
	return s
}

// TestHostileReportNight: with a conftest.py that puts a FIFO where pytest's JUnit report
// goes, `ticketd once` ends by itself (the report is refused, never opened for a wait), and a
// SIGTERM while such a check runs ends the process within seconds, as it must whatever a
// check does. Before, the daemon blocked in open(2) past window and grace, and only SIGKILL
// ended it.
func TestHostileReportNight(t *testing.T) {
	t.Parallel() // a process, folder, database and model server of its own
	if testing.Short() {
		t.Skip("builds the ticketd binary")
	}
	bin := buildTicketd(t)
	for _, tt := range []struct {
		name string
		slow bool
	}{{"ends by itself", false}, {"SIGTERM mid-check", true}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newNightFixture(t, 1, 0, `{workers: 1, lease: 30s, heartbeat: 1s, poll: 50ms}`)
			if err := os.WriteFile(filepath.Join(f.repo, "conftest.py"), []byte(hostileConftest(tt.slow)), 0o644); err != nil {
				t.Fatal(err)
			}
			c := exec.Command("git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-qam", "a hostile conftest")
			c.Dir = f.repo
			if out, err := c.CombinedOutput(); err != nil {
				t.Fatalf("git commit: %v\n%s", err, out)
			}
			cmd := f.start(t, bin, "daemon.log", "once", "--config", f.config, "--log-format", "json")
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			t.Cleanup(func() { cmd.Process.Kill() })
			limit := 2 * time.Minute
			if tt.slow {
				clocktest.WaitFor(t, 60*time.Second, "pytest runs", func() bool { return pytestRunning(f.workspace) }, func() string {
					log, _ := os.ReadFile(filepath.Join(f.dir, "daemon.log"))
					return string(log)
				})
				if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
				limit = 10 * time.Second
			}
			start := time.Now()
			select {
			case err := <-done:
				t.Logf("ticketd once exited %v in %s", err, time.Since(start).Round(time.Millisecond))
			case <-time.After(limit): // the hang is the failure under test
				log, _ := os.ReadFile(filepath.Join(f.dir, "daemon.log"))
				t.Fatalf("ticketd once did not end within %s\n%s", limit, log)
			}
			if log, _ := os.ReadFile(filepath.Join(f.dir, "daemon.log")); !tt.slow && !strings.Contains(string(log), "the check's report was not a file") {
				t.Errorf("the log does not say the report was refused:\n%s", log)
			}
		})
	}
}

// pytestRunning reports whether a pytest process runs in a worktree under workspace.
func pytestRunning(workspace string) bool {
	for _, cmdline := range processesUnder(workspace) {
		if strings.Contains(cmdline, "pytest") {
			return true
		}
	}
	return false
}
