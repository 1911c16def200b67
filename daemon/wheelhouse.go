package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/pipeline/sandbox"
)

// wheelhouseCheck says why the offline recipe of repository name cannot read a wheelhouse
// its commands name (--find-links), "" when it can: the folder exists, the sandbox shows it
// (a system folder or sandbox_paths), and, as root, the checks' user the recipe runs as
// may read its wheels. Said at start-up, before a night spends a build on it; a recipe with
// the network may fall back to its index and is not refused.
func wheelhouseCheck(name string, r config.Repo, cfg config.Config) string {
	if r.Setup == nil || r.Setup.Network {
		return ""
	}
	var probs []string
	for _, dir := range r.Setup.FindLinks() {
		fi, err := os.Stat(dir)
		if err != nil || !fi.IsDir() {
			probs = append(probs, fmt.Sprintf("the wheelhouse %s (--find-links) is not a folder on this machine (%s): build it there or fix the path", dir, statProblem(fi, err)))
			continue
		}
		if cfg.Sandbox == sandbox.ModeNone {
			continue
		}
		if !under(dir, sandbox.SystemPaths) && !under(dir, cfg.SandboxPaths) {
			probs = append(probs, fmt.Sprintf("the wheelhouse %s (--find-links) is hidden from the sandbox the recipe runs in: add it to sandbox_paths", dir))
			continue
		}
		if os.Geteuid() == 0 {
			if f := unreadable(dir); f != "" {
				probs = append(probs, fmt.Sprintf("the wheelhouse %s holds %s, which the checks' user the recipe runs as cannot read: chmod -R a+rX %s", dir, f, dir))
			}
		}
	}
	if len(probs) == 0 {
		return ""
	}
	return fmt.Sprintf("repos.%s.setup: %s", name, strings.Join(probs, "; "))
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
