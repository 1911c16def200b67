package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/pipeline/sandbox"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/scripts/testenv"
)

// TestCheckRunnerHidesDaemonFiles: a night's checks cannot see the database, the results,
// other worktrees, the config or the daemon's home, while a tool under the home still runs;
// under sandbox: none they see all of it (the negative control).
func TestCheckRunnerHidesDaemonFiles(t *testing.T) {
	bwrap, err := sandbox.Probe(context.Background(), "")
	testenv.Need(t, testenv.Bubblewrap, err)
	dir := t.TempDir()
	write := func(rel, content string, mode os.FileMode) string {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	secrets := []string{
		write("state/ticketd.db", "queue", 0o600),
		write("results/1/report.md", "report", 0o644),
		write("work/other-ticket/secret.py", "x", 0o644),
		write("etc/config.yaml", "models: {}", 0o644),
		write("home/.git-credentials", "https://u:p@example.com", 0o600),
	}
	write("home/bin/hello", "#!/bin/sh\necho hello from the home bin\n", 0o755)
	tree := filepath.Join(dir, "work", "tree")
	if err := os.MkdirAll(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", filepath.Join(dir, "home"))
	t.Setenv("PATH", filepath.Join(dir, "home", "bin")+":"+os.Getenv("PATH"))

	var script strings.Builder
	for _, p := range secrets {
		script.WriteString("test ! -e " + p + " || echo SAW " + p + "\n")
	}
	script.WriteString("hello || echo NO_TOOL\necho done > written-in-tree\n")
	check := validate.Check{Name: "peek", Kind: validate.KindCommand,
		Command: []string{"sh", "-c", "out=$(" + script.String() + "); echo \"$out\"; case \"$out\" in *SAW*|*NO_TOOL*) exit 1;; esac"}}

	for _, tt := range []struct {
		mode     sandbox.Mode
		isolated bool
	}{{sandbox.ModeBwrap, true}, {sandbox.ModeNone, false}} {
		t.Run(string(tt.mode), func(t *testing.T) {
			cfg := config.Default()
			cfg.Store.Path = filepath.Join(dir, "state", "ticketd.db")
			cfg.Output = filepath.Join(dir, "results")
			cfg.Workspace = filepath.Join(dir, "work")
			cfg.File = filepath.Join(dir, "etc", "config.yaml")
			cfg.Sandbox = tt.mode
			r := checkRunner(cfg, bwrap, nil)
			res := r.Run(context.Background(), tree, []validate.Check{check})[0]
			t.Logf("mode %s: passed=%v output:\n%s", tt.mode, res.Passed, res.Output)
			if res.Passed != tt.isolated || !strings.Contains(res.Output, "hello from the home bin") {
				t.Errorf("mode %s: passed=%v, want %v; output:\n%s", tt.mode, res.Passed, tt.isolated, res.Output)
			}
			if _, err := os.Stat(filepath.Join(tree, "written-in-tree")); err != nil {
				t.Errorf("mode %s: the worktree was not writable: %v", tt.mode, err)
			}
		})
	}
}

// TestCheckRunnerRunsPyenvPython: a pyenv interpreter under the hidden home still runs
// inside the sandbox, found through its shim, even when PYENV_ROOT is not exported.
func TestCheckRunnerRunsPyenvPython(t *testing.T) {
	bwrap, err := sandbox.Probe(context.Background(), "")
	testenv.Need(t, testenv.Bubblewrap, err)
	root := sandbox.PyenvRoot(os.Environ())
	if root == "" {
		t.Skip("no pyenv on this machine")
	}
	if old, ok := os.LookupEnv("PYENV_ROOT"); ok {
		os.Unsetenv("PYENV_ROOT")
		t.Cleanup(func() { os.Setenv("PYENV_ROOT", old) })
	}
	if _, err := os.Stat(filepath.Join(root, "shims", "python3")); err != nil {
		t.Skipf("pyenv at %s has no python3 shim: %v", root, err)
	}
	t.Setenv("PATH", filepath.Join(root, "shims")+":"+os.Getenv("PATH"))
	cfg := config.Default()
	dir := t.TempDir()
	cfg.Store.Path, cfg.Workspace, cfg.Output = filepath.Join(dir, "ticketd.db"), filepath.Join(dir, "work"), filepath.Join(dir, "results")
	tree := filepath.Join(cfg.Workspace, "tree")
	os.MkdirAll(tree, 0o755)
	r := checkRunner(cfg, bwrap, nil)
	res := r.Run(context.Background(), tree, []validate.Check{{Name: "py", Kind: validate.KindCommand, Command: []string{"python3", "-c", "import sys; print(sys.executable)"}}})[0]
	t.Logf("hidden %q, read-only %q: %s", r.Hide, r.ReadOnly, res.Output)
	if !res.Passed || !strings.Contains(res.Output, root) {
		t.Errorf("pyenv's python3 did not run in the sandbox: %+v", res)
	}
}

// TestNightWarnings: as root the night's first warning says so and how to run as a user;
// sandbox: none and a credential-shaped pass_env value are warned about too, naming the
// variable but never its value.
func TestNightWarnings(t *testing.T) {
	cfg := config.Default()
	cfg.Repos = map[string]config.Repo{"app": {PassEnv: []string{"APP_MODE", "STRIPE"}}}
	env := []string{"APP_MODE=ci", "STRIPE=sk_live_51HxYzAbCdEfGhIjKl"}
	tests := []struct {
		name  string
		euid  int
		mode  sandbox.Mode
		first string
		n     int
	}{
		{"root", 0, sandbox.ModeBwrap, sandbox.RootWarning, 2},
		{"root without sandbox", 0, sandbox.ModeNone, sandbox.NoneWarning + "; and " + sandbox.RootWarning, 2},
		{"user", 1000, sandbox.ModeBwrap, "repos.app.pass_env: STRIPE holds what looks like a credential", 1},
		{"user without sandbox", 1000, sandbox.ModeNone, sandbox.NoneWarning, 2},
	}
	for _, tt := range tests {
		cfg.Sandbox = tt.mode
		got := nightWarnings(cfg, tt.euid, env)
		if len(got) != tt.n || !strings.HasPrefix(got[0], tt.first) {
			t.Errorf("%s: warnings %q; want %d, the first starting %q", tt.name, got, tt.n, tt.first)
		}
		for _, w := range got {
			if strings.Contains(w, "sk_live") {
				t.Errorf("%s: a warning shows the secret: %q", tt.name, w)
			}
		}
	}
	if !strings.Contains(sandbox.RootWarning, "User=ticketd") {
		t.Errorf("the root warning does not say how to run as a user: %q", sandbox.RootWarning)
	}
}

// TestCheckLimitsFromConfig: max_check_memory and max_check_processes reach every check and
// every environment set-up.
func TestCheckLimitsFromConfig(t *testing.T) {
	cfg := config.Default()
	cfg.MaxCheckMemory, cfg.MaxCheckProcesses = 512<<20, 64
	want := sandbox.Limits{Memory: 512 << 20, Processes: 64}
	if got := checkRunner(cfg, "", nil).Limits; got != want {
		t.Errorf("checkRunner(max_check_memory 512MiB, max_check_processes 64).Limits = %+v, want %+v", got, want)
	}
	if got := newRepoEnvs(cfg, "", nil).builder.Limits; got != want {
		t.Errorf("the environment builder's Limits = %+v, want %+v", got, want)
	}
}
