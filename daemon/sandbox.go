package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/pipeline/sandbox"
	"github.com/ticketd/ticketd/pipeline/validate"
)

// CheckSandbox is the start-up check of the `sandbox` key: with bwrap (the default) it
// returns the path of a bubblewrap that can create the namespaces, or an error with the
// install hint, so that ticketd refuses to start instead of failing every check of the night.
// With none it returns "" and no error; the caller warns.
func CheckSandbox(ctx context.Context, cfg config.Config) (string, error) {
	if cfg.Sandbox == sandbox.ModeNone {
		return "", nil
	}
	id, err := sandboxUser(cfg)
	if err != nil {
		return "", err
	}
	return sandbox.ProbeUser(ctx, "", id)
}

// sandboxUser is the host identity of checks when ticketd runs as root: sandbox_user, or
// nobody when it is empty.
func sandboxUser(cfg config.Config) (sandbox.Identity, error) {
	if cfg.SandboxUser == "" {
		return sandbox.Identity{}, nil
	}
	return sandbox.LookupIdentity(cfg.SandboxUser)
}

// worktreeReady is what makes a new worktree's folder its checks' group's before the checkout
// (worktree.Manager.Ready) when ticketd runs as root with the sandbox: the checkout is then
// born writable by the checks, and no check walks the worktree to grant it. nil otherwise.
func worktreeReady(cfg config.Config) func(dir string) error {
	if os.Geteuid() != 0 || cfg.Sandbox == sandbox.ModeNone {
		return nil
	}
	user, _ := sandboxUser(cfg) // CheckSandbox refused to start on an unknown one
	return func(dir string) error { return sandbox.ReadyForChecks(dir, user) }
}

// sandboxHide lists what code under test must not see: the database's folder, the results,
// the workspace (other tickets' worktrees; the check's own shows through), the config's
// folder and the daemon's home (credentials of git, gh, cloud tools, package registries).
func sandboxHide(cfg config.Config) []string {
	var hide []string
	add := func(p string) {
		if p == "" || p == "/" || !filepath.IsAbs(p) || slices.Contains(hide, p) {
			return
		}
		hide = append(hide, p)
	}
	add(filepath.Dir(cfg.Store.Path))
	add(cfg.Output)
	add(cfg.Workspace)
	if cfg.File != "" {
		if abs, err := filepath.Abs(cfg.File); err == nil {
			add(filepath.Dir(abs))
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		add(home)
	}
	return hide
}

// checkRunner is the validators' runner of a night, sandboxed as the config says. Every
// credential ticketd knows is denied, whatever pass_env says.
func checkRunner(cfg config.Config, bwrap string, log *slog.Logger) *validate.Runner {
	var extra []string
	user, _ := sandboxUser(cfg) // CheckSandbox refused to start on an unknown one
	if root := sandbox.PyenvRoot(os.Environ()); root != "" && os.Getenv("PYENV_ROOT") == "" {
		extra = append(extra, "PYENV_ROOT="+root) // its shims must not look under the private $HOME
	}
	return &validate.Runner{
		ExtraEnv:        extra,
		Logger:          log,
		Sandbox:         cfg.Sandbox,
		Bwrap:           bwrap,
		Hide:            sandboxHide(cfg),
		ReadOnly:        cfg.SandboxPaths,
		DenyEnv:         cfg.Credentials(),
		MaxWorktreeSize: int64(cfg.MaxWorktreeSize),
		Limits:          checkLimits(cfg),
		User:            user,
	}
}

// prepareSandbox opens a night: it warns on the night's first log lines when ticketd runs as
// root or checks run unsandboxed (nightWarnings), refuses to run without a working bubblewrap otherwise, and removes the
// scratch folders (JUnit reports, private /tmp) a crashed daemon left.
func prepareSandbox(ctx context.Context, cfg config.Config, log *slog.Logger) (string, error) {
	for _, w := range nightWarnings(cfg, os.Geteuid(), os.Environ()) {
		log.Warn(w)
	}
	bwrap, err := CheckSandbox(ctx, cfg)
	if err != nil {
		return "", fmt.Errorf("sandbox: %w", err)
	}
	if cfg.Sandbox != sandbox.ModeNone {
		log.Info("checks' memory and processes as a whole", "isolation", sandbox.CgroupIsolation())
	}
	removed, err := sandbox.RemoveLeftovers("")
	if err != nil {
		log.Warn("remove leftover check folders", "err", err)
	}
	if len(removed) > 0 {
		log.Info("removed leftover check folders of a crashed run", "count", len(removed))
	}
	return bwrap, nil
}

// nightWarnings are the warnings that open every night's log, in order: running as root or
// checks without a sandbox (the first line, one line for both), and a repository's pass_env naming a variable whose
// value looks like a credential (withheld from the checks; the name is given, never the value).
func nightWarnings(cfg config.Config, euid int, environ []string) []string {
	var out []string
	switch none := cfg.Sandbox == sandbox.ModeNone; {
	case euid == 0 && none:
		out = append(out, sandbox.NoneWarning+"; and "+sandbox.RootWarning) // both on the first line
	case euid == 0:
		out = append(out, sandbox.RootWarning)
	case none:
		out = append(out, sandbox.NoneWarning)
	}
	if euid != 0 && cfg.SandboxUser != "" && cfg.Sandbox != sandbox.ModeNone {
		out = append(out, fmt.Sprintf("sandbox_user: %s is not used: ticketd runs as uid %d, not root, and its checks run as that user", cfg.SandboxUser, euid))
	}
	values := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			values[k] = v
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Repos)) {
		for _, v := range cfg.Repos[name].PassEnv {
			if sandbox.LooksSecretValue(values[v]) {
				out = append(out, fmt.Sprintf("repos.%s.pass_env: %s holds what looks like a credential; it is withheld from the checks (pass a variable that holds no secret, or a test credential in another shape)", name, v))
			}
		}
	}
	return out
}

// checkLimits are the memory and process limits of every sandboxed command of cfg: checks
// and environment set-ups.
func checkLimits(cfg config.Config) sandbox.Limits {
	return sandbox.Limits{Memory: int64(cfg.MaxCheckMemory), Processes: cfg.MaxCheckProcesses}
}
