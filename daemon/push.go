package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/pipeline/tools"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/worktree"
)

// pushedNote starts the note a ticket gets once its fix branch is on the push remote; the
// next night's start pushes the done tickets of this node that lack it.
const pushedNote = "pushed "

// pushBranch pushes a fix or kept-attempt branch to the repository's push_remote (when one
// is set), so it does not stay on this machine's disk. A failure is logged and noted on the
// ticket; the branch stays in the clone. It reports whether the branch is on the remote.
func (d *Daemon) pushBranch(ctx context.Context, log *slog.Logger, repo config.Repo, id int64, branch string) bool {
	if repo.PushRemote == "" || branch == "" {
		return false
	}
	if err := refuseProtected(ctx, repo, branch); err != nil {
		log.Error("branch not pushed", "branch", branch, "remote", repo.PushRemote, "err", err)
		if nerr := d.Store.AddNote(ctx, id, d.Store.Node(), fmt.Sprintf("not pushed %s to %s: %v", branch, repo.PushRemote, err)); nerr != nil {
			log.Warn("note the refused push", "err", nerr)
		}
		return false
	}
	err := worktree.PushToRemote(ctx, repo.Path, repo.PushRemote, branch, pushToken(repo))
	if err != nil {
		d.pushes.add(repo.PushRemote, err)
		log.Error("push branch to the repository's push_remote", "branch", branch, "remote", repo.PushRemote, "err", err)
		if nerr := d.Store.AddNote(ctx, id, d.Store.Node(), fmt.Sprintf("could not push %s to %s (it stays in the clone on %s): %v",
			branch, repo.PushRemote, d.Store.Node(), err)); nerr != nil {
			log.Warn("note the failed push", "err", nerr)
		}
		return false
	}
	if err := d.Store.AddNote(ctx, id, d.Store.Node(), pushedNote+branch+" to "+repo.PushRemote); err != nil {
		log.Warn("note the push", "err", err)
	}
	log.Info("branch pushed", "branch", branch, "remote", repo.PushRemote)
	return true
}

// pushFix pushes done ticket id's fix branch (pushBranch) and, once it is on the push
// remote, deletes from there the released-attempt branches of the ticket this node pushed
// (pruneReleased).
func (d *Daemon) pushFix(ctx context.Context, log *slog.Logger, repo config.Repo, id int64, branch string) bool {
	if !d.pushBranch(ctx, log, repo, id, branch) {
		return false
	}
	d.pruneReleased(ctx, log, repo, id)
	return true
}

// pruneReleased deletes from the push remote the released-attempt branches of done ticket id
// (ticketd/<id>-attempt-<n>-released: the partial work of an attempt stopped from outside,
// pushed so it would not stay on this machine's disk). Its fix is pushed now, and they would
// stay on the remote for good, one more for every ticket a night stopped; for GitHub
// repositories the publisher prunes them the same way (github.Publisher.PruneReleased). Only
// branches this node's history says it pushed are deleted, and only while the remote's
// branch points where the clone's does: one someone moved since is left alone. A failure is
// logged; the branch merely stays.
func (d *Daemon) pruneReleased(ctx context.Context, log *slog.Logger, repo config.Repo, id int64) {
	prefix := fmt.Sprintf("ticketd/%d-attempt-", id)
	branches, err := worktree.Branches(ctx, repo.Path, prefix)
	if err != nil {
		log.Warn("list the released branches of a done ticket", "ticket", id, "err", err)
		return
	}
	var released []string
	for _, b := range branches {
		n, ok := strings.CutSuffix(strings.TrimPrefix(b, prefix), "-released")
		if ok && n != "" && strings.Trim(n, "0123456789") == "" {
			released = append(released, b)
		}
	}
	if len(released) == 0 {
		return
	}
	evs, err := d.Store.Events(ctx, id)
	if err != nil {
		log.Warn("read the history of a done ticket to prune its released branches", "ticket", id, "err", err)
		return
	}
	for _, b := range released {
		if !slices.ContainsFunc(evs, func(e store.Event) bool {
			return e.Kind == store.EventNote && e.Reason == pushedNote+b+" to "+repo.PushRemote
		}) {
			continue
		}
		deleted, err := worktree.DeleteFromRemote(ctx, repo.Path, repo.PushRemote, b, pushToken(repo))
		switch {
		case err != nil:
			log.Warn("delete a done ticket's released branch from the push remote (it stays there)", "ticket", id, "branch", b, "remote", repo.PushRemote, "err", err)
		case deleted:
			log.Info("deleted a done ticket's released branch from the push remote", "ticket", id, "branch", b, "remote", repo.PushRemote)
		default:
			log.Info("left a released branch on the push remote: it moved since this node pushed it, or is gone", "ticket", id, "branch", b, "remote", repo.PushRemote)
		}
	}
}

// pushFailures counts the pushes a night's push remotes did not take (refused, unreachable),
// each remote's first error kept for the night's ending: a remote that refuses every fix
// leaves them all on this machine's disk, which the morning must see. Safe for concurrent use.
type pushFailures struct {
	mu     sync.Mutex
	order  []string
	failed map[string]int
	first  map[string]error
}

func (p *pushFailures) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.order, p.failed, p.first = nil, nil, nil
}

func (p *pushFailures) add(remote string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failed == nil {
		p.failed, p.first = map[string]int{}, map[string]error{}
	}
	if p.failed[remote] == 0 {
		p.order = append(p.order, remote)
		p.first[remote] = err
	}
	p.failed[remote]++
}

// list says, per remote, how many pushes failed and the first error.
func (p *pushFailures) list() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, r := range p.order {
		out = append(out, fmt.Sprintf("%d to %s, the first: %s", p.failed[r], r, oneLineUpTo(p.first[r].Error(), 800)))
	}
	return out
}

// pushLeftoversWithin bounds how far back the night's start looks for fixes of this node
// that never reached the push remote (a crash between the commit and the push, a remote
// that was down).
const pushLeftoversWithin = 7 * 24 * time.Hour

// pushLeftovers pushes the fix branches of tickets this node finished done recently whose
// push never happened (no "pushed" note), for the repositories with a push_remote.
func (d *Daemon) pushLeftovers(ctx context.Context, log *slog.Logger, repos map[string]config.Repo) {
	withRemote := false
	for _, r := range repos {
		withRemote = withRemote || r.PushRemote != ""
	}
	if !withRemote {
		return
	}
	done, err := d.Store.List(ctx, store.Filter{States: []store.State{store.StateDone}, Limit: 500})
	if err != nil {
		log.Warn("list done tickets to push", "err", err)
		return
	}
	since := d.now().Add(-pushLeftoversWithin)
	for _, name := range slices.Sorted(maps.Keys(repos)) {
		r := repos[name]
		if r.PushRemote == "" {
			continue
		}
		for _, t := range done {
			if t.Repo != name || t.Branch == "" || t.LeaseNode != d.Store.Node() || t.FinishedAt.Before(since) {
				continue
			}
			evs, err := d.Store.Events(ctx, t.ID)
			if err != nil {
				log.Warn("events of a done ticket", "ticket", t.ID, "err", err)
				continue
			}
			if !leftoverToPush(t.Branch, evs) {
				continue
			}
			d.pushFix(ctx, log.With("ticket", t.ID), r, t.ID, t.Branch)
		}
	}
}

// leftoverToPush reports whether a done ticket's branch, by its events, still needs its
// push: not pushed yet, and not a fix held for a whole suite that never judged it.
func leftoverToPush(branch string, evs []store.Event) bool {
	if slices.ContainsFunc(evs, func(e store.Event) bool {
		return e.Kind == store.EventNote && strings.HasPrefix(e.Reason, pushedNote+branch+" ")
	}) {
		return false
	}
	if heldUnjudged(evs) {
		// Tonight's whole suite judges it first (reholdUnjudged).
		return false
	}
	return true
}

// refuseProtected returns an error when branch holds a change to a path that runs elsewhere
// (see tools.ProtectedPath) that repo does not allow: such a branch is never pushed. The
// changes are read from git's objects, since base_ref, never from a working copy; a branch
// whose changes cannot be listed is not pushed either.
func refuseProtected(ctx context.Context, repo config.Repo, branch string) error {
	paths, err := worktree.BranchChanges(ctx, repo.Path, cmpOrHEAD(repo.BaseRef), branch)
	if err != nil {
		return fmt.Errorf("its changes could not be checked for protected paths: %w", err)
	}
	allow, err := allowAtBase(repo.Path, cmpOrHEAD(repo.BaseRef), repo.AllowPaths)
	if err != nil {
		return fmt.Errorf("its changes could not be checked for protected paths: %w", err)
	}
	if bad := tools.ProtectedIn(paths, allow); len(bad) > 0 {
		return fmt.Errorf("it changes files that run elsewhere (%s); allow them with repos.<name>.allow_paths if they belong in the fix", strings.Join(bad, "; "))
	}
	return nil
}

// allowAtBase is allow (repos.<name>.allow_paths) with the repository's own packages named
// like a check's tool at base (tools.ToolPackages: pluggy's src/pluggy/), where its fixes live.
func allowAtBase(repoPath, base string, allow []string) ([]string, error) {
	files, err := worktree.FilesAt(repoPath, base)
	if err != nil {
		return nil, fmt.Errorf("list the files of %s at %s for its own tool packages: %w", repoPath, base, err)
	}
	return tools.AllowAtBase(allow, files), nil
}

func cmpOrHEAD(ref string) string {
	if ref == "" {
		return "HEAD"
	}
	return ref
}

// pushToken is push_remote's credential: the value of push_token_env, "" without one.
func pushToken(repo config.Repo) string {
	if repo.PushTokenEnv == "" {
		return ""
	}
	return os.Getenv(repo.PushTokenEnv)
}
