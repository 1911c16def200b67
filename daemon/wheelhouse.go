package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/pipeline/envsetup"
	"github.com/ticketd/ticketd/pipeline/sandbox"
)

// wheelhouseCheck says why the offline recipe of repository name cannot read a wheelhouse
// its pip installs from (envsetup.Recipe.Wheelhouses: --find-links, PIP_FIND_LINKS, pip's
// configuration), "" when it can: the folder exists, the sandbox shows it (a system folder
// or sandbox_paths), and, as root, the checks' user the recipe runs as may read its wheels.
// Said at start-up, before a night spends a build on it; a recipe with the network may fall
// back to its index and is not refused.
func wheelhouseCheck(name string, r config.Repo, cfg config.Config) string {
	if r.Setup == nil || r.Setup.Network {
		return ""
	}
	houses := r.Setup.Wheelhouses(os.Getenv, envsetup.ReadPipConfig)
	var probs []string
	for _, w := range houses {
		if p := wheelhouseProblem(w, cfg); p != "" {
			probs = append(probs, p)
		}
	}
	// pip passes over a folder its environment or configuration names that it cannot read:
	// only when none of them can be read does an offline build go without its wheels.
	named := len(houses) > 0 && houses[0].From == "--find-links"
	if len(probs) == 0 || !named && len(probs) < len(houses) {
		return ""
	}
	return fmt.Sprintf("repos.%s.setup: %s", name, strings.Join(probs, "; "))
}

// wheelhouseProblem says why the recipe cannot read wheelhouse w, "" when it can.
func wheelhouseProblem(w envsetup.Wheelhouse, cfg config.Config) string {
	dir := w.Dir
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return fmt.Sprintf("the wheelhouse %s (%s) is not a folder on this machine (%s): build it there or fix the path", dir, w.From, statProblem(fi, err))
	}
	if cfg.Sandbox == sandbox.ModeNone {
		return ""
	}
	if !under(dir, sandbox.SystemPaths) && !under(dir, cfg.SandboxPaths) {
		return fmt.Sprintf("the wheelhouse %s (%s) is hidden from the sandbox the recipe runs in: add it to sandbox_paths", dir, w.From)
	}
	if os.Geteuid() == 0 {
		if f := unreadable(dir); f != "" {
			return fmt.Sprintf("the wheelhouse %s holds %s, which the checks' user the recipe runs as cannot read: chmod -R a+rX %s", dir, f, dir)
		}
	}
	return ""
}

// under reports whether p is one of roots or inside one.
func under(p string, roots []string) bool {
	for _, r := range roots {
		r = filepath.Clean(r)
		if p == r || strings.HasPrefix(p, r+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// unreadable is the first file directly in dir that others may not read, "" when none is.
func unreadable(dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	for _, e := range entries {
		fi, err := e.Info()
		if err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o004 == 0 {
			return e.Name()
		}
	}
	return ""
}
