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
	return sandbox.Probe(ctx, "")
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

// checkRunner is the validators' runner of a night, sandboxed as the config says.
func checkRunner(cfg config.Config, bwrap string, log *slog.Logger) *validate.Runner {
	hide := sandboxHide(cfg)
	var deny []string
	for _, ep := range cfg.Models.Endpoints {
		if ep.APIKeyEnv != "" {
			deny = append(deny, ep.APIKeyEnv)
		}
	}
	slices.Sort(deny)
	var extra []string
	if root := sandbox.PyenvRoot(os.Environ()); root != "" && os.Getenv("PYENV_ROOT") == "" {
		extra = append(extra, "PYENV_ROOT="+root) // its shims must not look under the private $HOME
	}
	return &validate.Runner{
		ExtraEnv:        extra,
		Logger:          log,
		Sandbox:         cfg.Sandbox,
		Bwrap:           bwrap,
		Hide:            hide,
		ReadOnly:        append(sandbox.ToolPaths(os.Environ(), hide), venvPaths(cfg, hide)...),
		DenyEnv:         deny,
		MaxWorktreeSize: int64(cfg.MaxWorktreeSize),
	}
}

// prepareSandbox opens a night: it warns on the night's first log line when checks run
// unsandboxed, refuses to run without a working bubblewrap otherwise, and removes the
// scratch folders (JUnit reports, private /tmp) a crashed daemon left.
func prepareSandbox(ctx context.Context, cfg config.Config, log *slog.Logger) (string, error) {
	if cfg.Sandbox == sandbox.ModeNone {
		log.Warn(sandbox.NoneWarning)
	}
	bwrap, err := CheckSandbox(ctx, cfg)
	if err != nil {
		return "", fmt.Errorf("sandbox: %w", err)
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

// venvPaths are the repositories' virtualenvs that lie under a hidden folder (a checkout in
// the daemon's home, say): bound read-only so the checks' interpreter still runs.
func venvPaths(cfg config.Config, hide []string) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(cfg.Repos)) {
		for _, c := range cfg.Repos[name].Checks {
			if !filepath.IsAbs(c.Python) {
				continue
			}
			// .venv/bin/python -> .venv: the interpreter needs its lib/ and pyvenv.cfg too.
			root := filepath.Dir(filepath.Dir(c.Python))
			for _, h := range hide {
				if strings.HasPrefix(root, strings.TrimSuffix(h, "/")+"/") && !slices.Contains(out, root) {
					out = append(out, root)
				}
			}
		}
	}
	return out
}
