package validate

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/pipeline/sandbox"
	"github.com/ticketd/ticketd/scripts/testenv"
)

// requireBwrap skips a sandbox test only where bubblewrap is genuinely unusable;
// scripts/test.sh installs it, so CI runs every one of them.
func requireBwrap(t *testing.T) {
	t.Helper()
	_, err := sandbox.Probe(context.Background(), "")
	testenv.Need(t, testenv.Bubblewrap, err)
}

// modes is the isolation table: every sandbox test runs under bwrap (the
// property must hold) and under none (the negative control: the same test
// must see the breach, or the test proves nothing).
var modes = []struct {
	mode     sandbox.Mode
	isolated bool
}{
	{sandbox.ModeBwrap, true},
	{sandbox.ModeNone, false},
}

// pyTest writes one pytest file into dir.
func pyTest(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSandboxEnvironment: a test that reads /proc/$PPID/environ,
// /proc/1/environ and its own environment finds no configured secret and no
// variable outside the allowlist.
//
// The secrets must be in the initial environment of the process that starts
// pytest, as they are in a daemon's (os.Setenv does not change what
// /proc/<pid>/environ shows), so the test re-runs itself as a child process
// started with them; the child does the checking.
func TestSandboxEnvironment(t *testing.T) {
	t.Parallel() // own directories and processes
	requireBwrap(t)
	requirePytest(t)
	secrets := map[string]string{
		"OPENAI_API_KEY": "sk-live-0123456789abcdef", // an endpoint's api_key_env
		"GH_PAT":         "pat-value-not-shaped-like-a-token",
		"DB_PWD":         "hunter2-db",
		"SENTRY_DSN":     "https://public@sentry.example/1",
		"LLM_BEARER":     "opaque-bearer-value",
		"MY_SETTING":     "unlisted-value",
	}
	if os.Getenv("TICKETD_TEST_ENV_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSandboxEnvironment$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "TICKETD_TEST_ENV_CHILD=1", "APP_MODE=ci")
		for name, value := range secrets {
			cmd.Env = append(cmd.Env, name+"="+value)
		}
		out, err := cmd.CombinedOutput()
		t.Logf("child test process:\n%s", out)
		if err != nil || !strings.Contains(string(out), "--- PASS: TestSandboxEnvironment/bwrap") || !strings.Contains(string(out), "--- PASS: TestSandboxEnvironment/none") {
			t.Errorf("the child test process, started with the secrets in its environment, failed: %v", err)
		}
		return
	}
	for name, value := range secrets {
		if os.Getenv(name) != value {
			t.Fatalf("child started without %s", name)
		}
	}
	var needles []string
	for name, value := range secrets {
		needles = append(needles, fmt.Sprintf("b%q", name), fmt.Sprintf("b%q", value))
	}
	test := `import os

NEEDLES = [` + strings.Join(needles, ", ") + `]
ALLOWED = {b"PATH", b"LANG", b"LANGUAGE", b"TZ", b"HOME", b"TMPDIR", b"NO_COLOR", b"PY_COLORS",
           b"PYENV_ROOT", b"PYENV_VERSION", b"VIRTUAL_ENV", b"APP_MODE", b"PWD"}  # bwrap sets PWD


def allowed(name):
    return name in ALLOWED or name.startswith((b"LC_", b"PYTHON", b"PYTEST_"))


def environ(path):
    try:
        with open(path, "rb") as f:
            return [kv for kv in f.read().split(b"\0") if kv]
    except OSError:
        return []


def test_no_secret_reaches_the_test():
    sources = {
        "ppid %d" % os.getppid(): environ("/proc/%d/environ" % os.getppid()),
        "pid 1": environ("/proc/1/environ"),
        "own": [k.encode() + b"=" + v.encode() for k, v in os.environ.items()],
    }
    leaks = []
    for src, entries in sources.items():
        for kv in entries:
            name = kv.partition(b"=")[0]
            if not allowed(name) or any(n in kv for n in NEEDLES):
                leaks.append("%s: %s" % (src, name.decode()))
    assert sources["own"], "own environment empty"
    assert not leaks, "LEAKED " + ", ".join(sorted(set(leaks)))
`
	for _, m := range modes {
		t.Run(string(m.mode), func(t *testing.T) {
			dir := t.TempDir()
			pyTest(t, dir, "test_env.py", test)
			r := Runner{Sandbox: m.mode, PassEnv: []string{"APP_MODE", "OPENAI_API_KEY"}, DenyEnv: []string{"OPENAI_API_KEY"}}
			res := r.Run(context.Background(), dir, []Check{{Name: "tests", Kind: KindPytest, Timeout: time.Minute}})[0]
			t.Logf("mode %s: passed=%v summary=%q", m.mode, res.Passed, res.Summary)
			if res.Passed != m.isolated {
				t.Errorf("mode %s: passed=%v, want %v (isolated=%v)\n%s", m.mode, res.Passed, m.isolated, m.isolated, res.Output)
			}
			if !m.isolated && !strings.Contains(res.Output, "GH_PAT") {
				t.Errorf("negative control: the unsandboxed test should have seen GH_PAT through its parent:\n%s", res.Output)
			}
		})
	}
}

// gitWorktree makes a real repository with a linked worktree, as the
// worktree manager does, and returns both paths.
func gitWorktree(t *testing.T) (repo, tree string) {
	t.Helper()
	base := t.TempDir()
	repo, tree = filepath.Join(base, "repo"), filepath.Join(base, "tree")
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t.invalid"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	os.MkdirAll(repo, 0o755)
	git(repo, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(repo, "README"), []byte("x\n"), 0o644)
	git(repo, "add", "-A")
	git(repo, "commit", "-q", "-m", "base")
	git(repo, "worktree", "add", "-q", "-b", "fix", tree)
	return repo, tree
}

// TestSandboxGitReadOnly: a test that appends core.fsmonitor and a filter to
// the repository's git config, or repoints the worktree's .git file, fails to.
func TestSandboxGitReadOnly(t *testing.T) {
	t.Parallel() // own directories and processes
	requireBwrap(t)
	requirePytest(t)
	// The real git directories are named to the test: inside the sandbox the worktree's .git
	// points at its git view instead (issue 31), which is read-only too.
	test := `import os

GITDIR, COMMON = %q, %q


def git_dirs():
    with open(".git") as f:
        view = f.read().split("gitdir:", 1)[1].strip()
    return view, GITDIR, COMMON


def try_write(path, text):
    try:
        with open(path, "a") as f:
            f.write(text)
        return "WROTE " + path
    except OSError as e:
        return None


def test_git_metadata_is_read_only():
    view, gitdir, common = git_dirs()
    wrote = [w for w in (
        try_write(os.path.join(view, "config"), "[core]\n\tfsmonitor = touch /tmp/pwned\n"),
        try_write(os.path.join(common, "config"), "[core]\n\tfsmonitor = touch /tmp/pwned\n[filter \"x\"]\n\tclean = touch /tmp/pwned\n"),
        try_write(os.path.join(gitdir, "config.worktree"), "[core]\n\tfsmonitor = touch /tmp/pwned\n"),
        try_write(os.path.join(common, "hooks", "post-commit"), "#!/bin/sh\ntouch /tmp/pwned\n"),
        try_write(".git", "\n"),
    ) if w]
    assert not wrote, wrote
`
	for _, m := range modes {
		t.Run(string(m.mode), func(t *testing.T) {
			repo, tree := gitWorktree(t)
			dotgit, _ := os.ReadFile(filepath.Join(tree, ".git"))
			gitdir := strings.TrimSpace(strings.TrimPrefix(string(dotgit), "gitdir:"))
			pyTest(t, tree, "test_git.py", fmt.Sprintf(test, gitdir, filepath.Join(repo, ".git")))
			r := Runner{Sandbox: m.mode}
			res := r.Run(context.Background(), tree, []Check{{Name: "tests", Kind: KindPytest, Timeout: time.Minute}})[0]
			config, _ := os.ReadFile(filepath.Join(repo, ".git", "config"))
			changed := strings.Contains(string(config), "fsmonitor")
			t.Logf("mode %s: passed=%v summary=%q config changed=%v", m.mode, res.Passed, res.Summary, changed)
			if res.Passed != m.isolated || changed == m.isolated {
				t.Errorf("mode %s: passed=%v, config changed=%v; want passed=%v (isolated)\n%s", m.mode, res.Passed, changed, m.isolated, res.Output)
			}
		})
	}
}

// TestSandboxSetsidChildKilled: a test that forks a setsid child that sleeps
// leaves no process once the check's time-out has passed.
func TestSandboxSetsidChildKilled(t *testing.T) {
	t.Parallel() // own directories and processes
	requireBwrap(t)
	requirePytest(t)
	test := `import subprocess
import time


def test_escape():
    subprocess.Popen(["sleep", "300"], start_new_session=True)
    open("started", "w").close()
    time.sleep(300)
`
	for _, m := range modes {
		t.Run(string(m.mode), func(t *testing.T) {
			dir := t.TempDir()
			pyTest(t, dir, "test_escape.py", test)
			var res Result
			// The time-out is what is under test; a slow machine may need
			// longer before pytest has forked the child.
			for _, timeout := range []time.Duration{2 * time.Second, 5 * time.Second, 20 * time.Second, time.Minute} {
				r := Runner{Sandbox: m.mode}
				res = r.Run(context.Background(), dir, []Check{{Name: "tests", Kind: KindPytest, Timeout: timeout}})[0]
				if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
					break
				}
			}
			if !res.TimedOut {
				t.Fatalf("mode %s: the check did not time out: %+v", m.mode, res)
			}
			// Under bwrap they must be gone (the init died with the check): a minute
			// bounds only a kernel slow to reap at load; they sleep for 5 minutes. The
			// control needs only show that something survived, looked at once.
			within := time.Duration(0)
			if m.isolated {
				within = time.Minute
			}
			left := processesLeftIn(dir, within)
			t.Logf("mode %s: after the time-out, processes left: %v", m.mode, left)
			if (len(left) == 0) != m.isolated {
				t.Errorf("mode %s: processes left after the time-out: %v; want none=%v", m.mode, left, m.isolated)
			}
		})
	}
}

// TestSandboxNoHostLoopback: a test that connects to a port listening on the
// host's loopback fails to.
func TestSandboxNoHostLoopback(t *testing.T) {
	t.Parallel() // own directories and processes
	requireBwrap(t)
	requirePytest(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	test := fmt.Sprintf(`import socket


def test_own_loopback_works():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    socket.create_connection(server.getsockname(), timeout=5).close()


def test_host_loopback_unreachable():
    try:
        socket.create_connection(("127.0.0.1", %d), timeout=5).close()
    except OSError:
        return
    raise AssertionError("CONNECTED to the host's loopback port %d")
`, port, port)
	for _, m := range modes {
		t.Run(string(m.mode), func(t *testing.T) {
			dir := t.TempDir()
			pyTest(t, dir, "test_net.py", test)
			r := Runner{Sandbox: m.mode}
			res := r.Run(context.Background(), dir, []Check{{Name: "tests", Kind: KindPytest, Timeout: time.Minute}})[0]
			t.Logf("mode %s: passed=%v summary=%q", m.mode, res.Passed, res.Summary)
			if res.Passed != m.isolated {
				t.Errorf("mode %s: passed=%v, want %v\n%s", m.mode, res.Passed, m.isolated, res.Output)
			}
		})
	}
}

// TestWorktreeSizeLimit: a check that grows the worktree past the limit is
// stopped with a reason that aborts the attempt; under the limit it passes.
func TestWorktreeSizeLimit(t *testing.T) {
	t.Parallel() // own directories and processes
	requireBwrap(t)
	// Not stopped, the check would sleep 2 minutes: a bound of one minute tells the two
	// apart at any load (stopped, it takes well under a second).
	script := "head -c 3000000 /dev/zero > big.bin; head -c 1000000 /dev/zero > $TMPDIR/tmp.bin; sleep 120"
	tests := []struct {
		name      string
		limit     int64
		script    string
		wantAbort bool
	}{
		{"over the limit", 2 << 20, script, true},
		{"tmp counts too", 3500000, script, true},
		{"under the limit", 8 << 20, "head -c 3000000 /dev/zero > big.bin", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Runner{MaxWorktreeSize: tt.limit, SizePoll: 20 * time.Millisecond}
			res := r.Run(context.Background(), t.TempDir(), []Check{{Name: "grow", Kind: KindCommand, Command: []string{"sh", "-c", tt.script}, Timeout: 3 * time.Minute}})[0]
			t.Logf("limit %d: passed=%v abort=%q duration=%s", tt.limit, res.Passed, res.Abort, res.Duration)
			if (res.Abort != "") != tt.wantAbort || res.Passed == tt.wantAbort || Aborted([]Result{res}) != res.Abort {
				t.Errorf("limit %d: got passed=%v abort=%q summary=%q, want abort=%v", tt.limit, res.Passed, res.Abort, res.Summary, tt.wantAbort)
			}
			if tt.wantAbort && (res.Duration > time.Minute || !strings.Contains(res.Abort, "max_worktree_size")) {
				t.Errorf("the oversize check was not stopped promptly with a clear reason: %s, %q", res.Duration, res.Abort)
			}
		})
	}
}

// TestScratchRemoved: pytest's JUnit report and whatever a check leaves in its
// private /tmp and $HOME are gone after the check, in both modes.
func TestScratchRemoved(t *testing.T) {
	t.Parallel() // own directories and processes
	requireBwrap(t)
	requirePytest(t)
	for _, m := range modes {
		t.Run(string(m.mode), func(t *testing.T) {
			root := t.TempDir()
			dir := project(t, false)
			r := Runner{Sandbox: m.mode, ScratchRoot: root}
			res := r.Run(context.Background(), dir, []Check{
				{Name: "tests", Kind: KindPytest},
				{Name: "litter", Kind: KindCommand, Command: []string{"sh", "-c", "echo x > $TMPDIR/left; echo y > $HOME/.left; mkdir $TMPDIR/ro; chmod 0500 $TMPDIR/ro"}},
			})
			if !res[0].Passed || !res[1].Passed || res[0].Summary != "2 passed" {
				t.Fatalf("got %+v", res)
			}
			if left, _ := os.ReadDir(root); len(left) != 0 {
				t.Errorf("scratch root keeps %v after the checks", left)
			}
		})
	}
}
