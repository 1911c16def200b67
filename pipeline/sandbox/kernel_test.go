package sandbox

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ticketd/ticketd/scripts/testenv"
)

// gitRun runs git in dir for a test, with a fixed identity and no global config.
func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t.invalid", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// requireBwrapRuns is requireBwrap, except that a sandbox the self-test refuses for what
// these probes look for (a writable sysctl, a check that is host root) runs them anyway:
// they must then fail, and say what they found.
func requireBwrapRuns(t *testing.T) {
	t.Helper()
	_, err := Probe(context.Background(), "")
	if err != nil && (strings.Contains(err.Error(), "kernel settings") || strings.Contains(err.Error(), "root on the host")) {
		t.Logf("the self-test refuses this sandbox; probing it anyway: %v", err)
		return
	}
	testenv.Need(t, testenv.Bubblewrap, err)
}

// TestKernelAndCloneProbes runs the probes of issue 31 as a hostile test would, under bwrap
// and, as the negative control, without the sandbox (as TestAttackerProbes does): a check
// must find nothing writable under /proc/sys, nothing of the clone's config (a token in a
// remote URL, an http.extraheader), no other ticket's branch or worktree, and nowhere to
// store bytes in the folders that hide the daemon's. Run the test binary as root and as a
// user (setpriv --reuid=65534 --regid=65534 --clear-groups): both must pass.
func TestKernelAndCloneProbes(t *testing.T) {
	requireBwrapRuns(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	const token = "ghp_" + "ISSUE31TOKENISSUE31TOKENISSUE31TOKEN00"
	root := t.TempDir()
	repo := filepath.Join(root, "repos", "app")
	workspace := filepath.Join(root, "workspace")
	tree := filepath.Join(workspace, "tree")
	other := filepath.Join(workspace, "other-tree")
	hidden := filepath.Join(root, "daemon")
	for _, d := range []string{repo, workspace, hidden} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	gitRun(t, repo, "init", "-q")
	os.WriteFile(filepath.Join(repo, "app.py"), []byte("x = 1\n"), 0o644)
	gitRun(t, repo, "add", "-A")
	gitRun(t, repo, "commit", "-q", "-m", "base")
	gitRun(t, repo, "config", "remote.origin.url", "https://x-access-token:"+token+"@github.com/acme/app.git")
	gitRun(t, repo, "config", "http.https://github.com/.extraheader", "AUTHORIZATION: basic "+token)
	gitRun(t, repo, "worktree", "add", "-q", "-b", "ticketd/2-other-work", other)
	os.WriteFile(filepath.Join(other, "secret_fix.py"), []byte("FIXED = True\n"), 0o644)
	gitRun(t, other, "add", "-A")
	gitRun(t, other, "commit", "-q", "-m", "other ticket's fix")
	gitRun(t, repo, "pack-refs", "--all")
	gitRun(t, repo, "worktree", "add", "-q", "-b", "ticketd/1-mine", tree)
	head := gitRun(t, tree, "rev-parse", "HEAD")
	common := filepath.Join(repo, ".git")

	scratch, err := NewScratch(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { scratch.Remove() })
	view, err := scratch.GitView(tree)
	if err != nil {
		t.Fatalf("git view of a real worktree: %v", err)
	}
	plant := []string{hidden, workspace, common}
	owner := filepath.Join(tree, "owner-31")
	probes := []struct {
		name, script string
		needsRoot    bool        // the negative control can only breach as root
		host         func() bool // optional: whether the breach shows on the host
	}{
		{"a writable sysctl", `find /proc/sys /proc/sysrq-trigger -writable 2>/dev/null | grep -q . && echo BREACH; true`, true, nil},
		{"root on the host", `echo x > owner-31; true`, true, func() bool {
			var st syscall.Stat_t
			return syscall.Lstat(owner, &st) == nil && st.Uid == 0
		}},
		{"the clone's config", `cat .git/config "` + common + `/config" 2>/dev/null | grep -q ` + token + ` && echo BREACH
git config --get remote.origin.url 2>/dev/null | grep -q ` + token + ` && echo BREACH
git config --get-regexp extraheader 2>/dev/null | grep -q . && echo BREACH
grep -rqs ` + token + ` "` + common + `" /run 2>/dev/null && echo BREACH; true`, false, nil},
		{"another ticket's ref", `git for-each-ref 2>/dev/null | grep -q 2-other && echo BREACH
cat "` + common + `/packed-refs" 2>/dev/null | grep -q 2-other && echo BREACH
git cat-file -p ticketd/2-other-work 2>/dev/null | grep -q "other ticket" && echo BREACH; true`, false, nil},
		{"another worktree", `git worktree list 2>/dev/null | grep -q other-tree && echo BREACH
ls "` + common + `/worktrees" 2>/dev/null | grep -q other && echo BREACH
cat "` + other + `/secret_fix.py" 2>/dev/null | grep -q FIXED && echo BREACH; true`, false, nil},
		{"lowering its oom_score_adj", `echo 0 > /proc/self/oom_score_adj 2>/dev/null
test "$(cat /proc/self/oom_score_adj)" -lt 1000 && echo BREACH; true`, false, nil},
		{"a writable file of its own in /proc", `find /proc/self/ /proc/1/ -maxdepth 1 -type f -writable 2>/dev/null | grep -q . && echo BREACH; true`, false, nil},
		{"storing in a hiding folder", `for d in ` + strings.Join(plant, " ") + `; do head -c 65536 /dev/zero > "$d/planted-31" 2>/dev/null && echo "BREACH $d"; done; true`, false, nil},
	}
	for _, p := range probes {
		for _, mode := range []Mode{ModeBwrap, ModeNone} {
			t.Run(p.name+"/"+string(mode), func(t *testing.T) {
				spec := Spec{Mode: mode, Dir: tree, Reports: scratch.Dir, GitView: view, Hide: []string{hidden, workspace},
					Env: []string{"PATH=/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}}
				out := probeRun(t, spec, p.script)
				for _, d := range plant {
					os.Remove(filepath.Join(d, "planted-31"))
				}
				breach := strings.Contains(out, "BREACH") || p.host != nil && p.host()
				os.Remove(owner)
				t.Logf("uid %d, %s: breach=%v output=%q", os.Geteuid(), mode, breach, out)
				if mode == ModeBwrap && breach {
					t.Errorf("the probe %q succeeded inside the sandbox: %s", p.name, out)
				}
				if mode == ModeNone && !breach && (os.Geteuid() == 0 || !p.needsRoot) {
					t.Errorf("negative control: the probe %q should succeed without the sandbox: %s", p.name, out)
				}
			})
		}
	}

	// What a check may need of git still works in the view: its own commit, branch and status.
	spec := Spec{Dir: tree, Reports: scratch.Dir, GitView: view, Hide: []string{hidden, workspace}, Env: []string{"PATH=/usr/bin:/bin"}}
	out := probeRun(t, spec, `git rev-parse HEAD; git rev-parse --abbrev-ref HEAD; git status --porcelain --untracked-files=no; git cat-file -t HEAD:app.py`)
	if want := head + "\nticketd/1-mine\nblob\n"; out != want {
		t.Errorf("git in the check's view said %q, want %q", out, want)
	}
	// Without a view there is no git at all, and nothing of the real one.
	spec.GitView = ""
	if out := probeRun(t, spec, `git rev-parse HEAD 2>&1; cat .git; echo end`); strings.Contains(out, head) || !strings.HasSuffix(out, "end\n") {
		t.Errorf("without a view, the check still reached the repository: %q", out)
	}
}

// TestCheckUnprivileged: the start-up self-test refuses a sandbox whose probe was uid 0, held
// a capability, could write a sysctl, or did not finish.
func TestCheckUnprivileged(t *testing.T) {
	const ok = "Uid:\t65534\t65534\t65534\t65534\nCapEff:\t0000000000000000\n"
	tests := []struct {
		name, out, want string
	}{
		{"unprivileged", ok + "End.\n", ""},
		{"uid 0", "Uid:\t0\t0\t0\t0\nCapEff:\t0000000000000000\nEnd.\n", "uid 0"},
		{"a capability", "Uid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000200000\nEnd.\n", "capabilities"},
		{"a writable sysctl", ok + "Writable: /proc/sys/kernel/core_pattern\nWritable: /proc/sys/vm/drop_caches\nEnd.\n", "2 kernel settings (/proc/sys/kernel/core_pattern, /proc/sys/vm/drop_caches)"},
		{"cut short", ok, "did not finish"},
	}
	for _, tt := range tests {
		err := checkUnprivileged(tt.out)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: err = %v, want one saying %q", tt.name, err, tt.want)
		}
	}
}

// TestProbeRefusesWritableSysctls: the start-up self-test's script, run in a bubblewrap
// sandbox made as ticketd made them before issue 31 (bwrap's own --proc and nothing over
// /proc/sys), finds writable sysctls — host-wide ones as root, its own namespaces' as a user
// — and checkUnprivileged refuses it; ticketd's own sandbox passes the same self-test.
func TestProbeRefusesWritableSysctls(t *testing.T) {
	requireBwrap(t)
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skip("bwrap is not on PATH")
	}
	args := []string{"--unshare-user", "--disable-userns", "--cap-drop", "ALL", "--unshare-pid", "--unshare-ipc", "--unshare-net",
		"--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/run"}
	for _, l := range []string{"/bin", "/sbin", "/lib", "/lib64"} {
		if target, err := os.Readlink(l); err == nil {
			args = append(args, "--symlink", target, l)
		}
	}
	if os.Geteuid() == 0 {
		args = append([]string{"--uid", "65534", "--gid", "65534"}, args...)
	}
	out, err := exec.Command(bwrap, append(args, "--", "/bin/sh", "-c", probeScript)...).CombinedOutput()
	if err != nil {
		t.Fatalf("the old-style sandbox did not run: %v\n%s", err, out)
	}
	if err := checkUnprivileged(string(out)); err == nil || !strings.Contains(err.Error(), "kernel settings") {
		t.Errorf("uid %d: the self-test passed a sandbox with a writable /proc/sys: %v\n%s", os.Geteuid(), err, out)
	} else {
		t.Logf("uid %d: refused as it should be: %v", os.Geteuid(), err)
	}
	if _, err := Probe(context.Background(), bwrap); err != nil {
		t.Errorf("the self-test refused ticketd's own sandbox: %v", err)
	}
}

// TestInotifyBound: a check's inotify instances are also charged, in every user namespace
// up to the host's, to its namespace's owner: host root when ticketd is root, the daemon's
// own user when it is not. A check that takes as many as it can must leave that user some:
// before the bound it took all 128 (fs.inotify.max_user_instances), and every root process's
// (as root) or the daemon's (as a user) inotify_init failed with EMFILE until it ended. Run
// as root and as a user (setpriv --reuid=65534 ...): both must pass.
func TestInotifyBound(t *testing.T) {
	requireBwrap(t)
	spec := Spec{Dir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}}
	cmd, err := spec.Command(context.Background(), []string{"/usr/bin/python3", "-c", `
import ctypes, time
libc = ctypes.CDLL(None, use_errno=True)
n = 0
while n < 4096 and libc.inotify_init() >= 0:
    n += 1
print("instances", n, flush=True)
time.sleep(60)  # holds them until the test kills it
`})
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the check said %q: %v", line, err)
	}
	t.Logf("the check holds: %s", strings.TrimSpace(line))
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		t.Fatalf("uid %d's inotify_init on the host failed while a check held all it could: %v (the check: %s)", os.Geteuid(), err, strings.TrimSpace(line))
	}
	unix.Close(fd)
}
