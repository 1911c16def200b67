package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/pipeline/sandbox"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/worktree"
)

// ErrNoHealthyRepo means every configured repository failed its start-up check: the night
// has nothing it may claim.
var ErrNoHealthyRepo = errors.New("no repository passed its start-up checks")

// repoCheck is the start-up check of one repository, before anything is claimed or spent:
// the path is a git repository, base_ref resolves to a commit there, and every configured
// check's tool starts. It returns "" when the repository may be worked, else the reason.
//
// The repository part uses go-git, which is pure Go and so runs nothing the repository's
// config names (no fsmonitor, hook or filter): the path is not trusted yet. Checkouts later
// use ticketd's hardened git CLI.
// seen shares the tools' import probes across the night's repositories.
func repoCheck(ctx context.Context, name string, r config.Repo, checks pipeline.CheckRunner, seen *validate.Probed) string {
	if reason := baseCheck(name, r); reason != "" {
		return reason
	}
	if r.Setup != nil {
		// The checks run in the recipe's environment, built later (before the repository's
		// baseline), with its bin/ first: a tool looked for here, without it, would be the
		// host's. The baseline says when the environment lacks one (validate.Health).
		return ""
	}
	if pf, ok := checks.(preflighter); ok {
		var errs []string
		for _, c := range r.Checks {
			if err := pf.Preflight(ctx, r.Path, c, seen); err != nil {
				errs = append(errs, err.Error())
			}
		}
		if len(errs) > 0 {
			return fmt.Sprintf("repos.%s: %s", name, strings.Join(errs, "; "))
		}
	}
	return ""
}

// baseCheck says why the repository's path is not a git repository or its base_ref does not
// resolve to a commit there, "" when both hold. It reads with go-git, which runs nothing.
func baseCheck(name string, r config.Repo) string {
	repo, err := gogit.PlainOpenWithOptions(r.Path, &gogit.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if err != nil {
		return fmt.Sprintf("repos.%s.path %s is not a git repository (%v): fix the path in the config, or run `git init` there", name, r.Path, err)
	}
	ref := r.BaseRef
	if ref == "" {
		ref = "HEAD"
	}
	hash, err := repo.ResolveRevision(plumbing.Revision(ref))
	if err == nil {
		_, err = repo.CommitObject(*hash)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			// An annotated tag: base_ref names the commit it points at.
			if t, terr := repo.TagObject(*hash); terr == nil {
				_, err = t.Commit()
			}
		}
	}
	if err != nil {
		return fmt.Sprintf("repos.%s.base_ref %q does not resolve to a commit in %s (%v): name a branch, tag or commit that exists there (`git -C %s branch -a`)", name, ref, r.Path, err, r.Path)
	}
	return ""
}

// sandboxCheck runs `true` through the check runner in an empty folder of the workspace,
// where every check runs: the same sandbox, binds and hidden paths as a real check. A runner
// that cannot preflight (a test double) is not probed, nor is `sandbox: none`. It returns "" when the sandbox works.
func sandboxCheck(ctx context.Context, checks pipeline.CheckRunner, mode sandbox.Mode, workspace string) string {
	if _, ok := checks.(preflighter); !ok || mode == sandbox.ModeNone {
		return "" // sandbox: none has nothing to probe (the night's first line warns of it)
	}
	dir, err := os.MkdirTemp(workspace, "sandbox-probe-")
	if err != nil {
		return fmt.Sprintf("create a folder for the sandbox probe under workspace %s: %v", workspace, err)
	}
	defer os.RemoveAll(dir)
	res := checks.Run(ctx, dir, []validate.Check{{Name: sandboxProbeName, Kind: validate.KindCommand, Command: []string{"true"}, Timeout: 30 * time.Second}})
	if len(res) != 1 || !res[0].Passed {
		out := ""
		if len(res) == 1 {
			out = strings.TrimSpace(res[0].Summary + " " + res[0].Output)
		}
		return fmt.Sprintf("the sandbox cannot run a command in the workspace %s (`true` in the check sandbox: %s); see docs/security.md", workspace, out)
	}
	return ""
}

// startupProbe is what the start-up checks found: each configured repository's reason not
// to be worked tonight ("" when it may be).
type startupProbe struct {
	reasons map[string]string
	err     error // ctx's cause when the checks were cut short
}

// probeStartup runs the start-up checks of every configured repository: the sandbox, the
// path and base_ref, every check's tool, each interpreter's import asked once in seen (the
// night's, which the baselines ask again for pytest's version). It only reads, and acts on nothing (see
// checkStartup), so it runs beside the night's model preflight instead of after it.
func probeStartup(ctx context.Context, cfg config.Config, checks pipeline.CheckRunner, seen *validate.Probed) startupProbe {
	p := startupProbe{reasons: map[string]string{}}
	box := sandboxCheck(ctx, checks, cfg.Sandbox, cfg.Workspace)
	for _, name := range slices.Sorted(maps.Keys(cfg.Repos)) {
		reason := box
		if reason == "" {
			reason = repoCheck(ctx, name, cfg.Repos[name], checks, seen)
			if reason == "" {
				reason = wheelhouseCheck(name, cfg.Repos[name], cfg)
			}
		}
		if ctx.Err() != nil {
			return startupProbe{err: context.Cause(ctx)}
		}
		p.reasons[name] = reason
	}
	return p
}

// startProbe runs probeStartup in the background; the returned func waits for it. stop
// cuts it short (a night that cannot start).
func startProbe(ctx context.Context, cfg config.Config, checks pipeline.CheckRunner, seen *validate.Probed) (wait func() startupProbe, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan startupProbe, 1)
	go func() { done <- probeStartup(ctx, cfg, checks, seen) }()
	var p startupProbe
	var once sync.Once
	wait = func() startupProbe {
		once.Do(func() { p = <-done; cancel() })
		return p
	}
	return wait, func() { cancel(); wait() }
}

// checkStartup acts on the start-up checks' findings (probeStartup). A repository that
// failed is reported once (an error in the log with the reason, and a note on each of its
// open tickets unless the ticket's last note already says so) and paused: its tickets are
// not claimed tonight and no attempt is spent on them. It returns the repositories that
// passed; with none left it returns ErrNoHealthyRepo with every reason.
func (w *workerPool) checkStartup(ctx context.Context, p startupProbe) (map[string]config.Repo, error) {
	if p.err != nil {
		return nil, p.err
	}
	healthy := map[string]config.Repo{}
	var reasons []string
	for _, name := range slices.Sorted(maps.Keys(w.cfg.Repos)) {
		reason, probed := p.reasons[name]
		if !probed {
			reason = fmt.Sprintf("repos.%s: not checked at start-up", name) // a ticketd bug: probeStartup checks every repository
		}
		if reason == "" {
			healthy[name] = w.cfg.Repos[name]
			continue
		}
		reasons = append(reasons, reason)
		w.reportBadRepo(ctx, name, startupFailed, reason)
	}
	w.d.Store.SetPaused(w.unhealthy.list())
	if len(healthy) == 0 && len(w.cfg.Repos) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrNoHealthyRepo, strings.Join(reasons, "; "))
	}
	return healthy, nil
}

// When a repository failed, as reportBadRepo says it.
const (
	startupFailed = "failed its start-up check"
	nightFailed   = "failed during the night"
)

// reportBadRepo says once why a repository is not worked tonight (when it failed: startupFailed
// or nightFailed): in the log, and on each of its open tickets (ticketctl show, logs).
func (w *workerPool) reportBadRepo(ctx context.Context, name, when, reason string) {
	text := fmt.Sprintf("repository %s %s: its tickets are not claimed until it is fixed (no attempt spent): %s", name, when, reason)
	w.unhealthy.add(name, text)
	w.log.Error("repository "+when+": its tickets are not claimed tonight", "repo", name, "reason", reason)
	bg := context.WithoutCancel(ctx)
	open, err := w.d.Store.List(bg, store.Filter{States: []store.State{store.StateQueued, store.StateRunning, store.StateParked}, Repo: name})
	if err != nil {
		w.log.Warn("list tickets of a repository that "+when, "repo", name, "err", err)
		return
	}
	for _, t := range open {
		if lastNote(bg, w.d.Store, t.ID) == text {
			continue // said on an earlier night; the ticket's history need not repeat it
		}
		if err := w.d.Store.AddNote(bg, t.ID, "ticketd", text); err != nil {
			w.log.Warn("note a failed repository on ticket", "ticket", t.ID, "err", err)
		}
	}
}

// lastNote returns the text of the ticket's latest note event, "" when none.
func lastNote(ctx context.Context, st *store.Store, id int64) string {
	events, err := st.Events(ctx, id)
	if err != nil {
		return ""
	}
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Kind == store.EventNote {
			return events[i].Reason
		}
	}
	return ""
}

// keptBranch matches the branches that hold an attempt's work for a human:
// ticketd/<id>-attempt-<n>, ticketd/<id>-attempt-<n>-<k> when that name was taken, and
// ticketd/<id>-attempt-<n>-released for an attempt stopped from outside.
var keptBranch = regexp.MustCompile(`^ticketd/[0-9]+-attempt-[0-9]+(-[0-9]+|-released)?$`)

// ticketBranch matches an attempt's working branch, ticketd/<id>-<slug>.
var ticketBranch = regexp.MustCompile(`^ticketd/([0-9]+)-`)

// collectLeftovers removes, at the start of a night, what lost attempts left in each
// repository (a crash, a SIGKILL, a reboot): the lock files their killed git left in
// ticketd's branches (removeStaleLocks), their worktrees, and their working branches.
// Kept are the branches of kept attempts (ticketd/<id>-attempt-<n>), a ticket's recorded
// branch (its fix, or its latest kept work), the fix branch a requeue of a done ticket kept,
// and the branch of a ticket whose lease is still live (another ticketd on the same
// database). Branches of tickets this database does not know, or named for another title
// than its ticket's (another database's ticket of that id), are left alone.
func (d *Daemon) collectLeftovers(ctx context.Context, log *slog.Logger, trees *worktree.Manager, repos map[string]config.Repo) {
	kept, keptErr := d.Store.KeptBranches(ctx)
	if keptErr != nil {
		log.Warn("read the fix branches requeues kept; no branch is deleted tonight", "err", keptErr)
	}
	for _, name := range slices.Sorted(maps.Keys(repos)) {
		r := repos[name]
		d.removeStaleLocks(ctx, log, trees, name, r.Path)
		if removed, err := trees.CollectLeftovers(ctx, r.Path); err != nil {
			log.Warn("collect leftover worktrees", "repo", name, "err", err)
		} else if len(removed) > 0 {
			log.Info("removed leftover worktrees", "repo", name, "count", len(removed))
		}
		if keptErr != nil {
			continue
		}
		branches, err := worktree.Branches(ctx, r.Path, "ticketd/")
		if err != nil {
			log.Warn("list ticketd branches", "repo", name, "err", err)
			continue
		}
		var removed []string
		for _, b := range branches {
			if _, ok := kept[b]; ok || !d.lostBranch(ctx, b) {
				continue
			}
			if err := worktree.DeleteBranch(ctx, r.Path, b); err != nil {
				log.Warn("delete the branch of a lost attempt", "repo", name, "branch", b, "err", err)
				continue
			}
			removed = append(removed, b)
		}
		if len(removed) > 0 {
			log.Info("removed branches of lost attempts", "repo", name, "count", len(removed), "branches", strings.Join(removed, " "))
		}
	}
}

// scratchBranch matches the branches of the trees checks make for themselves and remove when
// done (baseline.go, agree.go, nightsuite.go, prci.go): one left behind is a crash's.
var scratchBranch = regexp.MustCompile(`^ticketd/(baseline-|agree-[0-9]+$|night-suite-[0-9]+$|[0-9]+-ci-(base|fix)$)`)

// lostBranch says whether branch was left by an attempt that did not end: see
// collectLeftovers.
func (d *Daemon) lostBranch(ctx context.Context, branch string) bool {
	if keptBranch.MatchString(branch) {
		return false
	}
	if scratchBranch.MatchString(branch) {
		return true // a check's own checkout (baseline, agreement, night suite, CI blame); never kept
	}
	m := ticketBranch.FindStringSubmatch(branch)
	if m == nil {
		return false
	}
	id, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return false
	}
	t, err := d.Store.Get(ctx, id)
	if err != nil {
		return false // not a ticket of this database, or it cannot be read: leave it
	}
	if t.Branch == branch || !ownsBranch(t, branch) {
		return false
	}
	if t.State == store.StateRunning && t.LeaseExpiresAt.After(d.now()) {
		return false
	}
	return true
}

// sandboxProbeName names the start-up check that runs `true` in the sandbox.
const sandboxProbeName = "sandbox-probe"
