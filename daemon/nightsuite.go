package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/worktree"
)

// The other half of test selection. A fix the tests its change reaches passed
// (pipeline.TierSelected) is done and on its branch, but held from its push: once the
// night's attempts end, the whole suite runs once per repository and base commit over the
// held fixes together (pipeline.NightSuite). Passing, they are pushed. A failure is found
// fix by fix (each alone); the fixes that fail are not published, go back to their tickets
// with the failure (requeued, the branch kept) and count as selections missed
// (store.SelectionMissed, /metrics' ticketd_selection_missed_total{repo}).
//
// A repository's group need not wait for the whole night: a worker that finds nothing to
// claim runs the group of a repository with no ticket left open (runReady), so those runs
// overlap the night's last tickets instead of following them; once the window has closed,
// a worker whose attempt ended runs the group of each repository with no attempt under way,
// queued tickets or not, during the grace period. Only its passes are carried
// out then; its refusals wait for the night's end, as a refusal found there does, so a
// refused ticket is not claimed again the same night (its requeue gives it a fresh budget,
// and the same selection would pass it and the suite refuse it, round after round).

// NightSuiteNote starts the note each fix gets when the night's whole suite passed over it:
// "<prefix><seconds>s over <n> fix(es) …".
const NightSuiteNote = "night's whole suite passed in "

// HeldNote starts the note a fix gets when it is held for the night's whole suite.
const HeldNote = "held for the night's whole suite: "

// heldFix is a done fix waiting for the night's whole suite.
type heldFix struct {
	id     int64
	branch string
	name   string // the repository's name in the config
	repo   config.Repo
	base   string // the base commit its checks ran against
	facts  repoFacts
}

// nightSuite keeps the night's held fixes, per repository and base commit.
type nightSuite struct {
	d     *Daemon
	trees *worktree.Manager
	run   pipeline.CheckRunner

	mu   sync.Mutex
	held map[string][]heldFix // repo name + " " + base commit
	// busy counts, per repository, this node's attempts under way: one may still hold a fix
	// its ticket's done state already shows.
	busy map[string]int
	// refusals are verdicts found while the night ran, carried out at its end.
	refusals []judged
	// unjudged says, per group the suite could not judge, which fixes stay unpublished and
	// why, for the night's ending.
	unjudged []string
}

// unpublished is what the suite could not judge tonight (nil on a nil suite).
func (n *nightSuite) unpublished() []string {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.unjudged)
}

// judged is a group with its verdict.
type judged struct {
	group []heldFix
	v     suiteVerdict
}

// working counts an attempt on repo under way until the returned func is called.
func (n *nightSuite) working(repo string) (done func()) {
	if n == nil {
		return func() {}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.busy == nil {
		n.busy = map[string]int{}
	}
	n.busy[repo]++
	return func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.busy[repo]--
	}
}

// heldUnjudged reports whether a ticket's events hold its fix for the whole suite with no
// verdict of it after: a night that stopped before its whole suite. Such a fix is never
// pushed as a leftover.
func heldUnjudged(evs []store.Event) bool {
	held := false
	for _, e := range evs {
		switch {
		case e.Kind == store.EventNote && strings.HasPrefix(e.Reason, HeldNote):
			held = true
		case e.Kind == store.EventNote && strings.HasPrefix(e.Reason, NightSuiteNote), e.Kind == store.EventSelectionMissed:
			held = false
		}
	}
	return held
}

// holds reports whether a done fix waits for the whole suite instead of its push now: its
// gate was decided by the selected tests.
func holds(out pipeline.Outcome) bool {
	return out.Gate != nil && out.Gate.Tier == pipeline.TierSelected
}

// hold keeps a's fix for the night's whole suite.
func (n *nightSuite) hold(a *attemptRun) {
	n.holdFix(heldFix{id: a.lease.Ticket.ID, branch: a.fixBranch(), name: a.lease.Ticket.Repo, repo: a.repo,
		base: a.tree.BaseCommit, facts: a.facts})
}

// holdFix keeps f for the night's whole suite, in the group of its repository and base.
func (n *nightSuite) holdFix(f heldFix) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.held == nil {
		n.held = map[string][]heldFix{}
	}
	key := f.name + " " + f.base
	n.held[key] = append(n.held[key], f)
}

// holdsAll reports whether every fix of earlier is held, its whole suite not run yet, in
// the group of repository name and base: a whole suite will run over them together.
func (n *nightSuite) holdsAll(name, base string, earlier []publishedFix) bool {
	if n == nil {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	group := n.held[name+" "+base]
	for _, e := range earlier {
		if !slices.ContainsFunc(group, func(f heldFix) bool { return f.id == e.Ticket }) {
			return false
		}
	}
	return true
}

// take returns the held fixes, grouped, and forgets them.
func (n *nightSuite) take() [][]heldFix {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out [][]heldFix
	for _, k := range slices.Sorted(maps.Keys(n.held)) {
		out = append(out, n.held[k])
	}
	n.held = nil
	return out
}

// suiteVerdict is what the night's whole suite said of a group of fixes: the ones to push,
// and the refused ones with their failures.
type suiteVerdict struct {
	pass    []heldFix
	refused map[int64]string
	// unusable is set when the suite could not judge (a run aborted, cut short): nothing
	// is pushed nor refused.
	unusable string
	took     time.Duration
}

// runAll carries out the refusals found while the night ran, then runs the whole suite over
// each group of held fixes left and carries out its verdict, up to width groups at once (the
// night's workers, idle by now): each group is its own repository and base in its own
// worktree, and run one after another they were serial time at the end of every night,
// whatever its number of workers.
func (n *nightSuite) runAll(ctx context.Context, log *slog.Logger, width int) {
	n.mu.Lock()
	refusals := n.refusals
	n.refusals = nil
	n.mu.Unlock()
	for _, j := range refusals {
		n.carryOut(ctx, log, n.d, j.group, j.v)
	}
	eachAtOnce(n.take(), width, func(group []heldFix) {
		n.carryOut(ctx, log, n.d, group, n.judge(ctx, log, group))
	})
}

// runReady runs the whole suite over one group whose repository has no ticket left open
// (queued or running, on any node, nor an attempt under way here) and reports whether it
// ran one. Once this node's claims are over (claimsOver), only an attempt under way here
// keeps a group waiting: no ticket this node could still claim would join it. It publishes
// the fixes the suite passed at once and keeps its refusals for runAll.
func (n *nightSuite) runReady(ctx context.Context, log *slog.Logger, claimsOver bool) bool {
	if n == nil {
		return false
	}
	group := n.takeReady(ctx, claimsOver)
	if group == nil {
		return false
	}
	v := n.judge(ctx, log, group)
	n.carryOut(ctx, log, n.d, group, suiteVerdict{pass: v.pass, unusable: v.unusable, took: v.took})
	if len(v.refused) > 0 {
		n.mu.Lock()
		n.refusals = append(n.refusals, judged{group: group, v: suiteVerdict{refused: v.refused}})
		n.mu.Unlock()
	}
	return true
}

// takeReady takes the first held group whose repository has no ticket open (with
// claimsOver, no attempt under way here), nil when none.
func (n *nightSuite) takeReady(ctx context.Context, claimsOver bool) []heldFix {
	n.mu.Lock()
	keys := slices.Sorted(maps.Keys(n.held))
	n.mu.Unlock()
	for _, k := range keys {
		n.mu.Lock()
		group := n.held[k]
		busy := len(group) > 0 && n.busy[group[0].name] > 0
		n.mu.Unlock()
		if len(group) == 0 || busy {
			continue
		}
		if !claimsOver {
			// Read after busy: an attempt that starts meanwhile was claimed, and the store
			// shows its ticket running.
			open, err := n.d.Store.List(ctx, store.Filter{Repo: group[0].name, States: []store.State{store.StateQueued, store.StateRunning}, Limit: 1})
			if err != nil || len(open) > 0 {
				continue
			}
		}
		n.mu.Lock()
		group = n.held[k]
		delete(n.held, k)
		n.mu.Unlock()
		if len(group) > 0 {
			return group
		}
	}
	return nil
}

// judge runs the whole suite over group and times it.
func (n *nightSuite) judge(ctx context.Context, log *slog.Logger, group []heldFix) suiteVerdict {
	start := n.d.now()
	v := judgeGroup(ctx, log, n.trees, n.run, group)
	v.took = n.d.now().Sub(start)
	return v
}

// eachAtOnce calls do for every item, at most width (at least 1) calls at once, and
// returns when all have returned.
func eachAtOnce[T any](items []T, width int, do func(T)) {
	slots := make(chan struct{}, max(width, 1))
	var wg sync.WaitGroup
	for _, it := range items {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			do(it)
		}()
	}
	wg.Wait()
}

// judgeGroup runs the whole suite over the group together; when it fails, over each fix
// alone, to find which fixes fail it. Fixes that fail only together are all refused: they
// disagree where the agreement check, which ran the tests they reach, did not look.
func judgeGroup(ctx context.Context, log *slog.Logger, trees *worktree.Manager, run pipeline.CheckRunner, group []heldFix) suiteVerdict {
	g, err := suiteOver(ctx, trees, run, group)
	together := ""
	switch {
	case errors.Is(err, worktree.ErrDoesNotApply) && len(group) > 1:
		together = "their changes do not apply together: " + err.Error()
	case err != nil:
		return suiteVerdict{unusable: err.Error()}
	case unjudged(g) != "":
		return suiteVerdict{unusable: unjudged(g)}
	case g.Passed:
		log.Info("night's whole suite passed", "repo", group[0].name, "fixes", len(group))
		return suiteVerdict{pass: group}
	default:
		together = failureText(g)
	}
	v := suiteVerdict{refused: map[int64]string{}}
	if len(group) == 1 {
		v.refused[group[0].id] = together
		return v
	}
	for _, f := range group {
		alone, err := suiteOver(ctx, trees, run, []heldFix{f})
		switch {
		case err != nil:
			return suiteVerdict{unusable: err.Error()}
		case unjudged(alone) != "":
			return suiteVerdict{unusable: unjudged(alone)}
		case alone.Passed:
			v.pass = append(v.pass, f)
		default:
			v.refused[f.id] = failureText(alone)
		}
	}
	if len(v.refused) == 0 {
		for _, f := range v.pass {
			v.refused[f.id] = "passes alone, fails together with the night's other fixes: " + together
		}
		v.pass = nil
	}
	return v
}

// unjudged says why a whole-suite run judged nothing, "" when it did.
func unjudged(g pipeline.Gate) string {
	if g.Cancelled {
		return "the whole suite was cut short"
	}
	for _, r := range g.Results {
		if r.Abort != "" || r.NotStarted {
			return fmt.Sprintf("the whole suite could not run (%s): %s", r.Name, r.Summary)
		}
	}
	return ""
}

func failureText(g pipeline.Gate) string {
	what := slices.Concat(g.New, g.TimedOut)
	text := strings.Join(clipList(what, 20), "\n- ")
	if len(text) > 3000 {
		text = text[:3000] + " …"
	}
	return text
}

// suiteOver runs the whole suite on a tree at the fixes' base commit with their branches'
// changes applied in turn, as git applies a patch: two fixes to one file both count, where
// writing each fix's files over the other's would keep only the last.
func suiteOver(ctx context.Context, trees *worktree.Manager, run pipeline.CheckRunner, fixes []heldFix) (pipeline.Gate, error) {
	f0 := fixes[0]
	tree, err := trees.Prepare(ctx, f0.repo.Path, f0.base, fmt.Sprintf("ticketd/night-suite-%d", f0.id))
	if err != nil {
		return pipeline.Gate{}, fmt.Errorf("prepare the night's whole-suite tree of %s: %w", f0.name, err)
	}
	defer trees.Remove(context.WithoutCancel(ctx), tree, false)
	for _, f := range fixes {
		if err := tree.ApplyBranch(ctx, f.branch); err != nil {
			return pipeline.Gate{}, fmt.Errorf("night's whole suite: put ticket %d's fix (%s) in place: %w", f.id, f.branch, err)
		}
	}
	return pipeline.NightSuite(ctx, run, tree.Dir, f0.facts.checks, f0.facts.results), nil
}

// carryOut pushes the passing fixes and sends the refused ones back to their tickets.
func (n *nightSuite) carryOut(ctx context.Context, log *slog.Logger, d *Daemon, group []heldFix, v suiteVerdict) {
	if v.unusable != "" {
		ids := make([]string, len(group))
		for i, f := range group {
			ids[i] = "#" + strconv.FormatInt(f.id, 10)
		}
		if ctx.Err() != nil {
			// A shutdown or the grace period's end, not a fault: the next night's start holds
			// them again (heldagain.go). The night's ending names them all the same (a
			// window-closed night is partial): they are done, and not on the push remote.
			log.Info("night's whole suite cut short by the night's stop: its fixes wait for the next night's", "repo", group[0].name, "fixes", len(group))
			n.mu.Lock()
			n.unjudged = append(n.unjudged, fmt.Sprintf("%s of %s (cut short: %s)", strings.Join(ids, ", "), group[0].name, oneLineUpTo(context.Cause(ctx).Error(), 300)))
			n.mu.Unlock()
			return
		}
		log.Error("night's whole suite judged nothing: its fixes stay unpublished until the next night's judges them", "repo", group[0].name, "err", v.unusable)
		n.mu.Lock()
		n.unjudged = append(n.unjudged, fmt.Sprintf("%s of %s (%s)", strings.Join(ids, ", "), group[0].name, oneLineUpTo(v.unusable, 800)))
		n.mu.Unlock()
		for _, f := range group {
			if err := d.Store.AddNote(ctx, f.id, d.Store.Node(), "not published: the night's whole suite could not judge this fix ("+v.unusable+"); the next night's judges it again, or requeue it or push "+f.branch+" by hand"); err != nil {
				log.Warn("note the unjudged fix", "ticket", f.id, "err", err)
			}
		}
		return
	}
	for _, f := range v.pass {
		note := fmt.Sprintf("%s%.2fs over %d fix(es) of %s at %.12s", NightSuiteNote, v.took.Seconds(), len(group), f.name, f.base)
		if err := d.Store.AddNote(ctx, f.id, d.Store.Node(), note); err != nil {
			log.Warn("note the night's whole suite", "ticket", f.id, "err", err)
		}
		d.pushFix(ctx, log, f.repo, f.id, f.branch)
	}
	for _, f := range group {
		failure, refused := v.refused[f.id]
		if !refused {
			continue
		}
		log.Warn("night's whole suite refused a fix the selected tests passed: back to its ticket", "ticket", f.id, "branch", f.branch)
		note := "The night's whole suite refused the fix on " + f.branch + ", which the tests its change reaches had passed:\n- " + failure
		if err := d.Store.NoteSelectionMissed(ctx, f.id, d.Store.Node(), note); err != nil {
			log.Error("record the missed selection", "ticket", f.id, "err", err)
		}
		if err := d.Store.RequeueTicket(ctx, f.id, d.Store.Node(), store.RequeueOptions{Done: true, Note: note}); err != nil {
			log.Error("send the refused fix back to its ticket", "ticket", f.id, "err", err)
		}
	}
}
