package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/scripts/testenv"
)

func requireBwrap(t *testing.T) {
	t.Helper()
	_, err := Probe(context.Background(), "")
	testenv.Need(t, testenv.Bubblewrap, err)
}

func TestLooksSecretName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"OPENAI_API_KEY", true}, {"GH_PAT", true}, {"DB_PWD", true}, {"SENTRY_DSN", true},
		{"LLM_BEARER", true}, {"GITHUB_TOKEN", true}, {"db_password", true}, {"AWS_SECRET_ACCESS_KEY", true},
		{"SESSION_COOKIE", true}, {"PGPASS", false}, {"PG_PASS", true}, {"X_AUTH", true},
		{"PATH", false}, {"PYTHONPATH", false}, {"PWD", false}, {"OLDPWD", false}, {"LANG", false},
		{"MONKEY_MODE", false}, {"KEYBOARD", false}, {"PATTERN", false},
	}
	for _, tt := range tests {
		if got := LooksSecretName(tt.name); got != tt.want {
			t.Errorf("LooksSecretName(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestLooksSecretValue(t *testing.T) {
	tests := []struct {
		value string
		want  bool
	}{
		{"sk-proj-abcdefghijklmnop", true}, {"ghp_" + strings.Repeat("a", 36), true},
		{"github_pat_" + strings.Repeat("B", 30), true}, {"xoxb-1234567890-abc", true},
		{"AKIAABCDEFGHIJKLMNOP", true}, {"Bearer abcdefghijkl", true},
		{"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig", true},
		{"postgres://app:hunter2@db/prod", true}, {"-----BEGIN OPENSSH PRIVATE KEY-----", true},
		{"/usr/bin:/bin", false}, {"en_US.UTF-8", false}, {"https://example.com/a:b@c", false},
		{"sk_live_51HxYzAbCdEfGhIjKl", true}, {"rk_test_abcdefghijkl", true}, {"AIza" + strings.Repeat("x", 35), true},
		{"hf_" + strings.Repeat("a", 34), true}, {"npm_" + strings.Repeat("a", 36), true},
		{"sk-", false}, {"1", false}, {"", false}, {"sk_live", false}, {"hf_home", false},
		// DSN passwords (issue 31): in a URL's query and in libpq's keyword form.
		{"postgres://app@db/prod?password=hunter2", true}, {"host=db user=app password=hunter2", true},
		{"postgres://app@db/prod?sslmode=require", false}, {"host=db user=app", false},
	}
	for _, tt := range tests {
		if got := LooksSecretValue(tt.value); got != tt.want {
			t.Errorf("LooksSecretValue(%q) = %v, want %v", tt.value, got, tt.want)
		}
	}
}

func TestEnv(t *testing.T) {
	base := []string{
		"PATH=/usr/bin", "LANG=C.UTF-8", "LC_ALL=C", "HOME=/root", "PYTHONPATH=/src", "PYTHONDONTWRITEBYTECODE=",
		"OPENAI_API_KEY=sk-abcdefghijklmnop", "GH_PAT=plain", "SENTRY_DSN=https://k@s/1", "PLAIN=1",
		"APP_MODE=ci", "LLM_KEY=plain2", "DATABASE_URL=postgres://u:p@h/db", "PYTHON_TOKEN=x", "BROKEN", "=x",
	}
	env, dropped := Env(EnvRequest{Base: base, Pass: []string{"APP_MODE", "LLM_KEY", "DATABASE_URL", "OPENAI_API_KEY"}, Deny: []string{"OPENAI_API_KEY"}, Set: []string{"TICKETD=1"}})
	want := []string{"PATH=/usr/bin", "LANG=C.UTF-8", "LC_ALL=C", "PYTHONPATH=/src", "APP_MODE=ci", "LLM_KEY=plain2",
		"PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1", "PYTHONFAULTHANDLER=1", "NO_COLOR=1", "PY_COLORS=0", "TICKETD=1"}
	if !slices.Equal(env, want) {
		t.Errorf("Env:\n got  %q\n want %q", env, want)
	}
	if wantDropped := []string{"OPENAI_API_KEY", "DATABASE_URL"}; !slices.Equal(dropped, wantDropped) {
		t.Errorf("dropped = %q, want %q", dropped, wantDropped)
	}
}

func TestToolPaths(t *testing.T) {
	env := []string{"PATH=/root/.pyenv/shims:/root/go/bin:/usr/bin:relative:/root/go/bin:/bin:/:/opt/x/", "HOME=/root", "VIRTUAL_ENV=/srv/venv"}
	got := ToolPaths(env)
	want := []string{"/root/.pyenv/shims", "/root/go/bin", "/opt/x", "/root/.pyenv", "/srv/venv"}
	if !slices.Equal(got, want) {
		t.Errorf("ToolPaths = %q, want %q", got, want)
	}
	for _, tt := range []struct {
		env  []string
		want string
	}{
		{env, "/root/.pyenv"}, {[]string{"PYENV_ROOT=/opt/pyenv/", "PATH=/root/.pyenv/shims"}, "/opt/pyenv"},
		{[]string{"PATH=/usr/bin"}, ""}, {[]string{"PYENV_ROOT=rel", "PATH=/usr/bin"}, ""},
	} {
		if got := PyenvRoot(tt.env); got != tt.want {
			t.Errorf("PyenvRoot(%q) = %q, want %q", tt.env, got, tt.want)
		}
	}
}

func TestProgramRoots(t *testing.T) {
	root := t.TempDir()
	venv := filepath.Join(root, "venv")
	prefix := filepath.Join(root, "pyenv", "versions", "3.12")
	tools := filepath.Join(root, "tools")
	for _, d := range []string{filepath.Join(venv, "bin"), filepath.Join(prefix, "bin"), filepath.Join(prefix, "lib"), tools} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(venv, "pyvenv.cfg"), nil, 0o644)
	os.WriteFile(filepath.Join(prefix, "bin", "python3.12"), nil, 0o755)
	os.Symlink(filepath.Join(prefix, "bin", "python3.12"), filepath.Join(venv, "bin", "python"))
	os.WriteFile(filepath.Join(tools, "ruff"), nil, 0o755)
	for _, tt := range []struct {
		prog string
		want []string
	}{
		{filepath.Join(venv, "bin", "python"), []string{venv, prefix}},
		{filepath.Join(tools, "ruff"), []string{tools}},
		{"/usr/bin/python3", nil},
		{"python3", nil},
	} {
		if got := ProgramRoots(tt.prog); !slices.Equal(got, tt.want) {
			t.Errorf("ProgramRoots(%q) = %q, want %q", tt.prog, got, tt.want)
		}
	}
}

func TestGitPaths(t *testing.T) {
	dir := t.TempDir()
	tree := filepath.Join(dir, "tree")
	gitdir := filepath.Join(dir, "repo", ".git", "worktrees", "tree")
	os.MkdirAll(tree, 0o755)
	os.MkdirAll(gitdir, 0o755)
	os.WriteFile(filepath.Join(tree, ".git"), []byte("gitdir: "+gitdir+"\n"), 0o644)
	os.WriteFile(filepath.Join(gitdir, "commondir"), []byte("../..\n"), 0o644)
	got := GitPaths(tree)
	want := []string{filepath.Join(tree, ".git"), gitdir, filepath.Join(dir, "repo", ".git")}
	if !slices.Equal(got, want) {
		t.Errorf("GitPaths = %q, want %q", got, want)
	}
	if got := GitPaths(t.TempDir()); got != nil {
		t.Errorf("GitPaths of a plain directory = %q, want nil", got)
	}
}

func TestArgsOrderParentsFirst(t *testing.T) {
	root := t.TempDir()
	work := filepath.Join(root, "work")
	tree := filepath.Join(work, "tree")
	home := filepath.Join(root, "home")
	tool := filepath.Join(home, "bin")
	for _, d := range []string{tree, tool} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(tree, ".git"), []byte("gitdir: /nowhere\n"), 0o644)
	s := Spec{Bwrap: "/usr/bin/bwrap", Dir: tree, Hide: []string{work, home, filepath.Join(root, "absent")}, ReadOnly: []string{tool}, Env: []string{"PATH=/usr/bin:/bin"}}
	args, err := s.Args([]string{"true"})
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Join(args, " ")
	order := []string{"--cap-drop ALL", "--ro-bind /usr /usr", "--tmpfs /tmp", "--tmpfs " + work, "--tmpfs " + home, "--ro-bind " + tool + " " + tool,
		"--bind " + tree + " " + tree, "--ro-bind /dev/null " + tree + "/.git", "--remount-ro " + work, "--remount-ro " + home, "--chdir " + tree + " -- " + strings.Join(append(sandboxShellArgs(os.Geteuid(), true), "true"), " ")}
	at := 0
	for _, o := range order {
		i := strings.Index(line[at:], o)
		if i < 0 {
			t.Fatalf("bwrap line lacks %q after position %d:\n%s", o, at, line)
		}
		at += i + len(o)
	}
	if strings.Contains(line, "--ro-bind / /") || !strings.Contains(line, "--remount-ro / ") {
		t.Errorf("the host's root is bound, or the sandbox's root stays writable: %s", line)
	}
	if !regexp.MustCompile(`--proc /proc (--ro-bind /proc/\w+ /proc/\w+ )*--ro-bind /proc/sys /proc/sys `).MatchString(line) {
		t.Errorf("/proc/sys is not bound read-only right after /proc is mounted: %s", line)
	}
	if strings.Contains(line, "absent") {
		t.Errorf("an absent hidden path was mounted: %s", line)
	}
	if _, err := (Spec{Dir: tree, Env: []string{"PATH=/usr/bin"}}).Args([]string{"no-such-tool-xyz"}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("unknown executable: err = %v", err)
	}
	if _, err := (Spec{Dir: "relative", Env: []string{"PATH=/usr/bin"}}).Args([]string{"true"}); err == nil {
		t.Error("relative Dir accepted")
	}
	if _, err := (Spec{Mode: "docker", Dir: tree}).Args([]string{"true"}); err == nil {
		t.Error("unknown mode accepted")
	}
}

// TestHideAndExpose runs real bwrap: a hidden directory's files are invisible,
// the worktree inside it is writable, a tool path under it is readable but
// not writable, and the host's /tmp is not the sandbox's.
func TestHideAndExpose(t *testing.T) {
	requireBwrap(t)
	root := t.TempDir()
	secretDir := filepath.Join(root, "daemon")
	tree := filepath.Join(secretDir, "work", "tree")
	tool := filepath.Join(secretDir, "tools")
	os.MkdirAll(tree, 0o755)
	os.MkdirAll(tool, 0o755)
	os.WriteFile(filepath.Join(secretDir, "ticketd.db"), []byte("queue"), 0o600)
	os.WriteFile(filepath.Join(tool, "tool.txt"), []byte("tool"), 0o644)
	hostTmp, err := os.CreateTemp("", "ticketd-host-tmp-")
	if err != nil {
		t.Fatal(err)
	}
	hostTmp.Close()
	t.Cleanup(func() { os.Remove(hostTmp.Name()) })
	scratch, err := NewScratch(root)
	if err != nil {
		t.Fatal(err)
	}
	defer scratch.Remove()
	script := `set -u
test ! -e ` + secretDir + `/ticketd.db || echo SAW_DB
test ! -e ` + hostTmp.Name() + ` || echo SAW_HOST_TMP
cat ` + tool + `/tool.txt >/dev/null || echo NO_TOOL
touch ` + tool + `/x 2>/dev/null && echo WROTE_TOOL
echo ok > in-tree || echo NO_TREE_WRITE
echo ok > "$HOME/h" || echo NO_HOME
echo ok > "$TMPDIR/t" || echo NO_TMP
echo ok > ` + InnerReports + `/report || echo NO_REPORT
echo "home=$HOME tmp=$TMPDIR"
`
	s := Spec{Dir: tree, Reports: scratch.Dir, Hide: []string{secretDir}, ReadOnly: []string{tool}, Env: []string{"PATH=/usr/bin:/bin"}}
	cmd, err := s.Command(context.Background(), []string{"sh", "-c", script})
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	t.Logf("sandbox said: %s", out)
	if err != nil || !strings.Contains(string(out), "home=/tmp/home tmp=/tmp\n") {
		t.Fatalf("err %v, output:\n%s", err, out)
	}
	for _, bad := range []string{"SAW_DB", "SAW_HOST_TMP", "NO_TOOL", "WROTE_TOOL", "NO_TREE_WRITE", "NO_HOME", "NO_TMP", "NO_REPORT"} {
		if strings.Contains(string(out), bad) {
			t.Errorf("sandbox: %s\n%s", bad, out)
		}
	}
	if _, err := os.Stat(filepath.Join(tree, "in-tree")); err != nil {
		t.Errorf("the write to the worktree did not reach the host: %v", err)
	}
	if _, err := os.Stat(filepath.Join(scratch.Dir, "report")); err != nil {
		t.Errorf("the report did not reach the host's reports directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(scratch.Dir, "home", "h")); err == nil {
		t.Errorf("the private home is on the host's disk; it must be the sandbox's size-limited /tmp")
	}
	// Negative control: without the sandbox the same script sees the database.
	s.Mode = ModeNone
	cmd, err = s.Command(context.Background(), []string{"sh", "-c", script})
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := cmd.CombinedOutput(); !strings.Contains(string(out), "SAW_DB") || !strings.Contains(string(out), "WROTE_TOOL") {
		t.Errorf("negative control: sandbox none should see the database and write the tool path:\n%s", out)
	}
}

func TestRemoveLeftovers(t *testing.T) {
	root := t.TempDir()
	// A pid that cannot be alive: above the kernel's maximum.
	dead := filepath.Join(root, scratchPrefix+"99999999-1")
	mine := filepath.Join(root, scratchPrefix+strconv.Itoa(os.Getpid())+"-2")
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleeper.Process.Kill(); sleeper.Wait() })
	live := filepath.Join(root, scratchPrefix+strconv.Itoa(sleeper.Process.Pid)+"-3")
	other := filepath.Join(root, "unrelated")
	oldJunit := filepath.Join(root, "ticketd-junit-123")
	newJunit := filepath.Join(root, "ticketd-junit-456")
	for _, d := range []string{dead, mine, live, other, oldJunit, newJunit} {
		os.MkdirAll(filepath.Join(d, "ro"), 0o755)
	}
	old := time.Now().Add(-48 * time.Hour)
	os.Chtimes(oldJunit, old, old)
	os.Chmod(filepath.Join(dead, "ro"), 0o500)
	os.WriteFile(filepath.Join(dead, "ro", "f"), nil, 0o644)
	removed, err := RemoveLeftovers(root)
	slices.Sort(removed)
	if want := []string{oldJunit, dead}; err != nil || !slices.Equal(removed, want) {
		t.Errorf("RemoveLeftovers = %q, %v; want %q", removed, err, want)
	}
	for _, d := range []string{mine, live, other, newJunit} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: it belongs to a live process or is not ours", d)
		}
	}
}

// TestProbeDirHelper is the child of TestKilledProbeLeavesNothing, not a test of its own: it
// makes a probe's folder and ends without removing it, as a daemon killed mid-probe does.
func TestProbeDirHelper(t *testing.T) {
	root := os.Getenv("TICKETD_PROBE_DIR_ROOT")
	if root == "" {
		t.Skip("helper process for TestKilledProbeLeavesNothing")
	}
	if _, err := newProbeDir(root); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(0)
}

// A daemon killed while its sandbox probe ran left the probe's folder in /tmp, and no later
// start removed it: one more folder per such kill, found by killing real nights at random
// moments. The next start's RemoveLeftovers removes it now.
func TestKilledProbeLeavesNothing(t *testing.T) {
	root := t.TempDir()
	child := exec.Command(os.Args[0], "-test.run=^TestProbeDirHelper$")
	child.Env = append(os.Environ(), "TICKETD_PROBE_DIR_ROOT="+root)
	if out, err := child.CombinedOutput(); err != nil {
		t.Fatalf("probe folder helper: %v\n%s", err, out)
	}
	left, _ := os.ReadDir(root)
	if len(left) != 1 {
		t.Fatalf("the helper left %d folders in %s, want its probe's", len(left), root)
	}
	if _, err := RemoveLeftovers(root); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadDir(root); len(after) != 0 {
		t.Errorf("after RemoveLeftovers, %s still holds %s: the probe folder of a process that is gone", root, after[0].Name())
	}
}

// TestProbeCutShortIsNoVerdict: a probe whose context ends (a shutdown at start-up) says it
// was cut short, not that the sandbox is unavailable with bwrap's command line.
func TestProbeCutShortIsNoVerdict(t *testing.T) {
	_, err := exec.LookPath("bwrap")
	testenv.Need(t, testenv.Bubblewrap, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Probe(ctx, "")
	if err == nil || errors.Is(err, ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Errorf("probe with its context ended: %v; want it cut short (context.Canceled), not ErrUnavailable", err)
	}
}
