package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/daemon/github"
	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/pipeline/timing"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/worktree"
)

// workerPool is the state the night's workers share.
type workerPool struct {
	d         *Daemon
	cfg       config.Config
	log       *slog.Logger
	trees     *worktree.Manager
	baselines *baselines
	runner    *pipeline.Runner
	// guard undoes what each run of checks wrote in an attempt's worktree; nil: never.
	guard     *fixGuard
	windowEnd time.Time
	// gate says which model endpoints are down; claims pause while any is (a ticket
	// needs every role's endpoint). nil: never paused.
	gate      endpointGate
	unhealthy unhealthyRepos
	// envs are the repositories' environments (repos.<name>.setup); nil: none built.
	envs *repoEnvs
	// pending are the repositories whose baseline is still being computed.
	pending pendingBaselines
	// health says whether the ticket database takes writes, and retries those it did not.
	health *storeHealth
	// stopClaims ends the night's claims with a cause (a systemic failure); nil: never.
	stopClaims context.CancelCauseFunc
	systemic   systemic

	// faults are what the machine failed tonight (storage, the ticket database); a storage
	// fault stops this node's claims.
	faults *machineFaults
	// end carries out how each attempt ends.
	end *ender
	// results writes the attempts' results folders.
	results *resultsFolder
	// fetch is the node's claims: idle workers share one fetch (one transaction).
	fetch *store.Fetcher

	mu      sync.Mutex
	touched []int64
}

func (w *workerPool) touchedIDs() []int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	seen := map[int64]bool{}
	var out []int64
	for _, id := range w.touched {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// endpointGate is the model client's breaker view; *model.Client implements it.
type endpointGate interface {
	Unavailable(ctx context.Context) []model.EndpointStatus
}

var _ endpointGate = (*model.Client)(nil)

// loop claims and works tickets until there is nothing left to do in the window, then runs
// the whole suites it can before the night's last attempt ends.
func (w *workerPool) loop(claimCtx, workCtx context.Context, worker string) {
	log := w.log.With("worker", worker)
	w.claimLoop(claimCtx, workCtx, worker, log)
	// Once this node claims nothing more (the window closed, or the night stopped claiming),
	// a repository with no attempt under way here has all of its fixes of the night, queued
	// tickets or not: its whole suite runs now, in this idle worker, during the grace
	// period. Left for the night's end, it would wait for the slowest attempt, which may run
	// out the grace period and leave the suite no time, so fixes done before the window
	// closed were published a night late.
	if w.end == nil {
		return
	}
	claimsOver := claimCtx.Err() != nil
	for workCtx.Err() == nil && w.end.suite.runReady(workCtx, log, claimsOver) {
	}
}

// claimLoop claims and works tickets until claims stop or the queue has nothing more for
// this worker before the window closes.
func (w *workerPool) claimLoop(claimCtx, workCtx context.Context, worker string, log *slog.Logger) {
	for claimCtx.Err() == nil {
		if w.gate != nil {
			if down := w.gate.Unavailable(claimCtx); len(down) > 0 {
				wait, more := w.nextWork(claimCtx)
				if !more {
					return
				}
				for _, s := range down {
					wait = min(wait, max(time.Until(s.NextProbe), 10*time.Millisecond))
				}
				if !sleep(claimCtx, wait) {
					return
				}
				continue
			}
		}
		if w.health.isDown() {
			// No claims while the database does not take writes. With nothing held, a claim
			// every second is the probe that finds it writable again; while workers hold
			// tickets, their own writes are the probe: a claim that landed first could take
			// over a lease that expired meanwhile, and throw away a finished fix.
			w.health.wait()
			if !sleep(claimCtx, time.Second) {
				return
			}
			if len(w.health.heldLeases()) > 0 {
				continue
			}
		}
		lease, err := w.fetch.Claim(claimCtx, worker)
		if errors.Is(err, store.ErrNoTicket) {
			// Idle: the whole suite of a repository whose tickets are all over runs now,
			// beside the night's last tickets (nightsuite.go).
			if w.end != nil && w.end.suite.runReady(workCtx, log, false) {
				continue
			}
			wait, more := w.nextWork(claimCtx)
			if !more {
				return
			}
			// A notice that a ticket became claimable (an enqueue, a release, on any node),
			// or a repository's baseline becoming ready, ends the wait early; the wait itself
			// is the poll that backs notices up.
			if !w.waitForWork(claimCtx, wait) {
				return
			}
			continue
		}
		if err != nil {
			if claimCtx.Err() == nil {
				if isStoreFault(err) {
					w.health.writeFailed(log, "claim", 0, err)
				} else {
					log.Error("claim ticket", "err", err)
				}
				sleep(claimCtx, w.cfg.Night.Poll)
			}
			continue
		}
		w.health.writeOK(claimCtx, log)
		w.mu.Lock()
		w.touched = append(w.touched, lease.Ticket.ID)
		w.mu.Unlock()
		w.health.hold(lease)
		done := w.end.suiteWorking(lease.Ticket.Repo)
		w.work(workCtx, log.With("ticket", lease.Ticket.ID, "attempt", lease.Attempt), lease)
		done()
		w.health.unhold(lease.Ticket.ID)
	}
}

// nextWork says whether the queue may still give this worker something before the window
// closes, and how long to wait before asking again.
func (w *workerPool) nextWork(ctx context.Context) (time.Duration, bool) {
	// Read before the queue: a baseline unpauses its repository before it stops counting
	// as pending, so with none pending the queue read next shows its tickets claimable.
	pending := len(w.pending.list()) > 0
	due, err := w.d.Store.NextDue(ctx)
	if err != nil {
		return w.cfg.Night.Poll, ctx.Err() == nil
	}
	now := w.d.now()
	// The poll is the back-stop for what no notice announces (a retry's backoff set by
	// another process): where notices reach every node, it can be rare.
	poll := w.cfg.Night.Poll
	if w.d.Store.NoticesReachOtherNodes() {
		poll = max(poll, idleBackstop)
	}
	wait, more := poll, false // a paused (unhealthy) repository's tickets wait for the next night
	if due.Paused > 0 && pending {
		more = true // their baseline is on its way: a baseline that ends wakes the wait
	}
	if due.Running > 0 {
		more = true // it may come back as a retry, or its lease may expire
		if !due.NextLeaseExpiry.IsZero() {
			wait = min(wait, max(due.NextLeaseExpiry.Sub(now), 10*time.Millisecond))
		}
	}
	if due.Queued > 0 && due.NextRunAfter.Before(w.windowEnd) {
		more = true
		wait = min(wait, max(due.NextRunAfter.Sub(now), 10*time.Millisecond))
	}
	return wait, more
}

// waitForWork waits up to wait for a notice of work, or for a pending baseline to end; false
// when ctx ended.
func (w *workerPool) waitForWork(ctx context.Context, wait time.Duration) bool {
	ready := w.pending.waitable()
	if ready == nil {
		return w.d.Store.WaitForWork(ctx, wait)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-ready:
			cancel()
		case <-wctx.Done():
		}
	}()
	w.d.Store.WaitForWork(wctx, wait)
	return ctx.Err() == nil
}

// idleBackstop is the longest an idle worker waits between looks at the queue when notices
// reach every node (PostgreSQL): due times it knows of (a backoff, a lease expiry) wake it
// earlier, and so does any notice.
const idleBackstop = 30 * time.Second

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// work runs one attempt at a leased ticket and records its end: prepare, run, decide,
// perform. Whatever happens, the ticket leaves this function in a state the store allows, or
// with a lease that expires.
func (w *workerPool) work(workCtx context.Context, log *slog.Logger, lease store.Lease) {
	ctx, cancel := context.WithCancelCause(workCtx)
	defer cancel(nil)
	stopBeat := w.heartbeat(ctx, cancel, log, lease)
	defer stopBeat()
	// Where the attempt's time goes (its record's time split); the heartbeat's writes, on
	// their own goroutine beside the work, are left out.
	ctx = timing.With(ctx, &timing.Spent{})
	// Writes after the attempt must land even when work is being cancelled.
	bg := context.WithoutCancel(ctx)
	log.Info("attempt started", "title", lease.Ticket.Title, "repo", lease.Ticket.Repo)
	a := &attemptRun{lease: lease}
	defer a.close(bg, log, w.trees)
	if c, ok := w.prepare(ctx, cancel, a); !ok {
		w.end.perform(bg, log, a, decide(c, pipeline.Outcome{}, lease, w.end.limits), pipeline.Outcome{})
		return
	}
	out := w.run(ctx, cancel, log, a)
	c := w.runCause(ctx, log, a, out)
	w.end.perform(bg, log, a, decide(c, out, lease, w.end.limits), out)
}

// commitMessage is the fix commit's message. A GitHub ticket's names its issue ("Fixes #N",
// N the number there, never the ticket id), so merging closes it; a ticket from a
// folder names none. The title, the maker's summary and the trailer are defused: pushed, they
// would otherwise notify whoever they @mention and close any issue they say they fix.
func commitMessage(t store.Ticket, out pipeline.Outcome) string {
	title := github.Defuse(strings.Join(strings.Fields(t.Title), " "))
	if _, n, err := github.ParseExternalID(t.ExternalID); t.Source == github.Source && err == nil {
		title = fmt.Sprintf("Fixes #%d: %s", n, title)
	}
	trailer := github.Defuse(fmt.Sprintf("ticketd ticket %d (%s %s).", t.ID, t.Source, t.ExternalID))
	return fmt.Sprintf("%s\n\n%s\n\n%s", title, github.Defuse(out.Summary), trailer)
}

// heartbeat extends the lease until stopped. A lost lease or a cancel request cancels the
// attempt with that cause; the check runs every heartbeat (on the daemon's clock), well
// inside the 15 s promise. The first beat is armed before heartbeat returns.
func (w *workerPool) heartbeat(ctx context.Context, cancel context.CancelCauseFunc, log *slog.Logger, lease store.Lease) func() {
	done := make(chan struct{})
	stopped := make(chan struct{})
	tick := make(chan struct{}, 1)
	arm := func() func() bool {
		return w.d.clock().AfterFunc(w.cfg.Night.Heartbeat, func() {
			select {
			case tick <- struct{}{}:
			default:
			}
		})
	}
	disarm := arm()
	go func() {
		defer close(stopped)
		defer func() { disarm() }()
		failures := 0
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick:
				disarm = arm()
			}
			cancelReq, err := w.d.Store.Heartbeat(context.WithoutCancel(ctx), lease.Ticket.ID, lease.Token, w.cfg.Night.Lease)
			switch {
			case errors.Is(err, store.ErrLeaseLost):
				cancel(errLeaseLost)
				return
			case isStoreFault(err):
				// The database does not take writes: the attempt rides the outage out (the
				// promise of docs/operating.md); once it takes writes again the lease is extended
				// before anyone may claim, and a lost lease says so at the next beat.
				w.health.writeFailed(log, "heartbeat", lease.Ticket.ID, err)
			case err != nil:
				failures++
				log.Warn("heartbeat", "err", err, "failures", failures)
				if failures >= 3 {
					cancel(fmt.Errorf("%w: %v", errHeartbeatFailing, err))
					return
				}
			case cancelReq:
				log.Info("cancel requested: stopping the attempt")
				cancel(errCancelRequested)
				return
			default:
				failures = 0
				w.health.writeOK(ctx, log)
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}
