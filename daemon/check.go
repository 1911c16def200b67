package daemon

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/pipeline/sandbox"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/store"
)

// CheckItem is one thing `ticketd check` looked at: what, and "" or why it would fail a
// night.
type CheckItem struct {
	What    string `json:"what"`
	Problem string `json:"problem,omitempty"`
	Detail  string `json:"detail,omitempty"`
}

// Check looks at everything a night needs without running one and without writing
// anything: the database (reachable, ticketd's, its schema version), the sandbox, every
// repository's start-up check (a git repository, base_ref, the checks' tools), the intake
// folders, and every model endpoint with the night's own preflight requests. Each item
// says what is wrong and what to do; Check runs them all rather than stop at the first.
func Check(ctx context.Context, cfg config.Config, log *slog.Logger) []CheckItem {
	var out []CheckItem
	add := func(what, problem, detail string) {
		out = append(out, CheckItem{What: what, Problem: problem, Detail: detail})
	}

	loc, err := cfg.Store.Location()
	switch {
	case err != nil:
		add("store", err.Error(), "")
	default:
		what := "store " + storeKey(cfg)
		v, err := store.Probe(ctx, loc)
		switch {
		case err != nil:
			add(what, err.Error(), "")
		case v == 0:
			add(what, "", "no ticketd schema yet: the first night creates it")
		case v > store.SchemaVersion:
			add(what, fmt.Sprintf("schema v%d is newer than this ticketd (v%d): upgrade ticketd", v, store.SchemaVersion), "")
		default:
			add(what, "", fmt.Sprintf("schema v%d (this ticketd migrates to v%d)", v, store.SchemaVersion))
		}
	}

	bwrap, err := CheckSandbox(ctx, cfg)
	mode := cfg.Sandbox
	if err != nil {
		add("sandbox "+string(mode), err.Error(), "")
	} else {
		if err := os.MkdirAll(cfg.Workspace, 0o755); err != nil {
			add("workspace "+cfg.Workspace, err.Error(), "")
		}
		checks := checkRunner(cfg, bwrap, log)
		if reason := sandboxCheck(ctx, checks, mode, cfg.Workspace); reason != "" {
			add("sandbox "+string(mode), reason, "")
		} else {
			add("sandbox "+string(mode), "", map[bool]string{true: "no isolation: the code under test runs as ticketd", false: "runs a command in the workspace"}[mode == sandbox.ModeNone])
		}
		seen := &validate.Probed{}
		for _, name := range slices.Sorted(maps.Keys(cfg.Repos)) {
			r := cfg.Repos[name]
			detail := fmt.Sprintf("base_ref %s, %d check(s)", r.BaseRef, len(r.Checks))
			if r.Setup != nil {
				detail += "; their tools are looked for in the environment of repos." + name + ".setup, built at night (ticketctl envs)"
			}
			reason := repoCheck(ctx, name, r, checks, seen)
			if reason == "" {
				reason = wheelhouseCheck(name, r, cfg)
			}
			add("repos."+name+" ("+r.Path+")", reason, detail)
		}
	}
	for i, src := range cfg.Intake {
		what := fmt.Sprintf("intake[%d] %s", i, src.Path)
		if fi, err := os.Stat(src.Path); err != nil || !fi.IsDir() {
			add(what, fmt.Sprintf("not a folder (%v): create it (mkdir -p %s) or fix intake[%d].path", statProblem(fi, err), src.Path, i), "")
		} else {
			add(what, "", "")
		}
	}
	// A check answers in seconds: an endpoint still down after 20 s is reported, not awaited.
	cfg.Models.PreflightWait = min(cmp.Or(cfg.Models.PreflightWait, checkPreflightWait), checkPreflightWait)
	d := &Daemon{Config: cfg, Logger: log}
	if err := d.Preflight(ctx); err != nil {
		add("models (preflight)", err.Error(), "")
	} else {
		add("models (preflight)", "", fmt.Sprintf("%d role(s) answered the night's own requests", len(cfg.Models.Roles)))
	}
	return out
}

// checkPreflightWait bounds how long `ticketd check` retries an endpoint that is down.
const checkPreflightWait = 20 * time.Second

func statProblem(fi os.FileInfo, err error) string {
	if err != nil {
		return err.Error()
	}
	return fi.Mode().Type().String()
}
