package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ticketd/ticketd/pipeline/sandbox"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/scripts/testenv"
	"github.com/ticketd/ticketd/store/clock/clocktest"
)

// processesUnder returns the live processes whose working directory is under dir: from the
// outside, that is how the processes of a sandboxed check are found (their own pids are
// those of their PID namespace).
func processesUnder(dir string) map[int]string {
	found := map[int]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd")
		if err != nil || (cwd != dir && !strings.HasPrefix(cwd, dir+"/")) {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		found[pid] = strings.ReplaceAll(string(cmdline), "\x00", " ")
	}
	return found
}

// TestSIGKILLLeavesNoProcess builds ticketd, runs a night whose repository's test sleeps,
// SIGKILLs the daemon while pytest runs, and requires that no process of the check survives it
// remains. Under sandbox: none the same kill leaves pytest running (the negative control).
func TestSIGKILLLeavesNoProcess(t *testing.T) {
	t.Parallel() // a process, folder, database and model server of its own
	if testing.Short() {
		t.Skip("builds the ticketd binary")
	}
	_, err := resolvedPytest()
	testenv.Need(t, testenv.Pytest, err)
	_, err = probedSandbox()
	testenv.Need(t, testenv.Bubblewrap, err)
	bin := buildTicketd(t)
	for _, tt := range []struct {
		mode     sandbox.Mode
		isolated bool
	}{{sandbox.ModeBwrap, true}, {sandbox.ModeNone, false}} {
		t.Run(string(tt.mode), func(t *testing.T) {
			t.Parallel()
			dir, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			repo := filepath.Join(dir, "app")
			os.MkdirAll(filepath.Join(repo, "tests"), 0o755)
			os.WriteFile(filepath.Join(repo, "app.py"), []byte("def f():\n    return 1\n"), 0o644)
			os.WriteFile(filepath.Join(repo, "tests", "test_slow.py"), []byte(
				"import subprocess\nimport time\n\n\ndef test_slow():\n    subprocess.Popen(['sleep', '600'], start_new_session=True)\n    time.sleep(600)\n"), 0o644)
			commitAll(t, repo)
			os.MkdirAll(filepath.Join(dir, "issues"), 0o755)
			os.WriteFile(filepath.Join(dir, "issues", "01.md"), []byte("---\ntitle: f returns the wrong value\nrepo: app\nlabels: [bug]\n---\nf() should return 2.\n"), 0o644)
			testenv.SettleIssues(t, filepath.Join(dir, "issues"))
			cfg := fmt.Sprintf(`store: {path: ticketd.db}
night: {workers: 1, lease: 30s, heartbeat: 5s}
intake: [{kind: dir, path: issues}]
repos:
  app:
    path: %s
    base_ref: main
    checks: [{name: tests, kind: pytest, timeout: 10m}]
workspace: work
output: results
sandbox: %s
models:
  endpoints: {local: {base_url: %q}}
  roles:
    triage: {endpoint: local, model: gpt-4.1-mini}
    maker: {endpoint: local, model: gpt-4.1}
    checker: {endpoint: local, model: gpt-4.1-mini}
    judge: {endpoint: local, model: gpt-4.1-mini}
`, repo, tt.mode, scriptedURL(t))
			cfgPath := filepath.Join(dir, "config.yaml")
			os.WriteFile(cfgPath, []byte(cfg), 0o644)

			daemon := exec.Command(bin, "once", "--config", cfgPath, "--log-format", "json")
			daemon.Dir = dir
			logFile, _ := os.Create(filepath.Join(dir, "ticketd.log"))
			defer logFile.Close()
			daemon.Stdout, daemon.Stderr = logFile, logFile
			if err := daemon.Start(); err != nil {
				t.Fatal(err)
			}
			workspace := filepath.Join(dir, "work")
			t.Cleanup(func() {
				for pid := range processesUnder(workspace) {
					syscall.Kill(pid, syscall.SIGKILL)
				}
				sandbox.RemoveLeftovers("") // the killed daemon's scratch folder
			})
			// Wait (polled) until pytest and its setsid sleep run in the worktree.
			var procs map[int]string
			checkRunning := func() bool {
				procs = processesUnder(workspace)
				var pytest, sleep bool
				for _, cmdline := range procs {
					pytest = pytest || strings.Contains(cmdline, "pytest")
					sleep = sleep || strings.HasPrefix(cmdline, "sleep 600")
				}
				return pytest && sleep
			}
			clocktest.WaitFor(t, 60*time.Second, "pytest runs in "+workspace, checkRunning, func() string {
				daemon.Process.Kill()
				daemon.Wait()
				log, _ := os.ReadFile(filepath.Join(dir, "ticketd.log"))
				return fmt.Sprintf("saw %v; daemon log:\n%s", procs, log)
			})
			killed := time.Now()
			if err := daemon.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			daemon.Wait()
			// The check's processes sleep 600 s: isolated, they must be gone well before a
			// minute (in milliseconds, idle); the control shows some after 2 s.
			wait := 2 * time.Second
			if tt.isolated {
				wait = time.Minute
			}
			var left map[int]string
			clocktest.Poll(wait, func() bool { left = processesUnder(workspace); return len(left) == 0 })
			t.Logf("mode %s: %d processes of the check left %s after SIGKILL of ticketd: %v", tt.mode, len(left), time.Since(killed).Round(time.Millisecond), left)
			if (len(left) == 0) != tt.isolated {
				t.Errorf("mode %s: processes left %s after SIGKILL: %v; want none=%v", tt.mode, wait, left, tt.isolated)
			}
			log, _ := os.ReadFile(filepath.Join(dir, "ticketd.log"))
			first, _, _ := strings.Cut(string(log), "\n")
			if warned := strings.Contains(first, "WITHOUT isolation"); warned == tt.isolated {
				t.Errorf("mode %s: the night's first log line warns of no isolation: %v, want %v:\n%s", tt.mode, warned, !tt.isolated, first)
			}
		})
	}
}

// TestRefusesWithoutBwrap: with sandbox: bwrap (the default) and no bubblewrap, once and run
// refuse to start and say how to install it; with sandbox: none they get past the check.
func TestRefusesWithoutBwrap(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PATH", t.TempDir()) // no bwrap on it
	base := fmt.Sprintf(`store: {path: ticketd.db}
models:
  endpoints: {local: {base_url: %q}}
  roles:
    triage: {endpoint: local, model: gpt-4.1-mini}
    maker: {endpoint: local, model: gpt-4.1}
    checker: {endpoint: local, model: gpt-4.1-mini}
    judge: {endpoint: local, model: gpt-4.1-mini}
`, scriptedURL(t))
	for _, tt := range []struct {
		cmd, extra string
		code       int
		want       string
	}{
		{"once", "", 1, "refusing to start: the bubblewrap sandbox is unavailable"},
		{"run", "sandbox: bwrap\n", 1, "apt-get install -y bubblewrap"},
		{"once", "sandbox: none\n", 0, ""},
	} {
		path := filepath.Join(dir, tt.cmd+strconv.Itoa(len(tt.extra))+".yaml")
		os.WriteFile(path, []byte(base+tt.extra), 0o644)
		var stdout, stderr strings.Builder
		code := run(context.Background(), []string{tt.cmd, "--config", path}, &stdout, &stderr)
		t.Logf("%s with %q: exit %d, stderr %q", tt.cmd, tt.extra, code, stderr.String())
		if code != tt.code || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("ticketd %s with %q = %d, stderr %q; want %d and %q", tt.cmd, tt.extra, code, stderr.String(), tt.code, tt.want)
		}
		if tt.code == 0 && !strings.Contains(stderr.String(), "WITHOUT isolation") {
			t.Errorf("sandbox: none started without the warning:\n%s", stderr.String())
		}
	}
}

// scriptedURL starts the scripted model (a test double), so the start-up preflight finds a
// live endpoint; these tests stop before any ticket reaches a model.
func scriptedURL(t *testing.T) string {
	t.Helper()
	patch := "--- a/app.py\n+++ b/app.py\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n"
	return startScripted(t, []scriptedmodel.Case{{Match: "f returns the wrong value", Patch: patch}}, scriptedmodel.Options{Seed: 1})
}
