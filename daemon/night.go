// Package daemon is the ticketd process: it takes tickets in from the configured sources,
// runs a night of fix workers over the queue, and turns each attempt's outcome into a ticket
// transition, a branch, a patch and a report.
package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/daemon/github"
	"github.com/ticketd/ticketd/daemon/intake"
	"github.com/ticketd/ticketd/daemon/notify"
	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/pipeline/sandbox"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/worktree"
)

// Daemon holds what every night shares: the configuration and the open store.
type Daemon struct {
	Config config.Config
	Store  *store.Store
	Logger *slog.Logger
	// Checks runs validators; nil means a validate.Runner with defaults.
	Checks pipeline.CheckRunner
	// ModelOptions are passed to model.New after the daemon's own (its Clock); tests inject
	// an HTTP client.
	ModelOptions []model.Option
	// Clock is the night's time (see Clock); nil means the real clock.
	Clock Clock
	// PromptLayout is the pipeline's prompt layout; the zero value is the cache-friendly one.
	PromptLayout pipeline.Layout
	// GitHub is the GitHub intake and output (github.New); nil when not configured.
	GitHub *github.Syncer
	// ProgressEvery is how often a night logs its progress; 0 means DefaultProgressEvery.
	ProgressEvery time.Duration
	// StoreCheckEvery is how often a night checks its database is the one it opened (and
	// beats its lease on the night); 0 means DefaultStoreCheckEvery.
	StoreCheckEvery time.Duration

	// forecast is the latest night's cost forecast in words (Forecast).
	forecast atomic.Pointer[string]
	// onStoreWait, when set (tests), is called each time a worker waits on a database that
	// takes no writes — it declined to claim, or a ticket's write will be tried again: the
	// event a test waits for instead of giving the workers time to do the wrong thing.
	onStoreWait func()
	// pushes are the night's pushes the push remote did not take, for its ending.
	pushes pushFailures
	// staleLocks counts the git lock files removeStaleLocks removed.
	staleLocks atomic.Int64
}

// Causes recorded when a night stops work in flight.
var (
	ErrShutdown     = errors.New("ticketd is shutting down")
	ErrWindowClosed = errors.New("the night's run window closed")
	ErrNightBudget  = errors.New("the night's dollar budget is spent")
	// ErrQuota stops a night whose model account is out of quota or credit.
	ErrQuota = errors.New("a model account is out of quota or credit")
	// ErrPreflight means an endpoint failed the start-of-night check; nothing was claimed.
	ErrPreflight        = errors.New("model endpoint preflight failed")
	errCancelRequested  = errors.New("cancel requested by an operator")
	errLeaseLost        = errors.New("lease lost to another worker")
	errHeartbeatFailing = errors.New("heartbeat kept failing")
)

// ErrSystemic stops a night whose attempts of different tickets failed in a row for the
// same reason on the endpoint's side (the same refusal, a context too small),
// or one attempt on an answer no ticket's request causes (401, 404): every further attempt
// would fail the same way and charge its ticket for it.
var ErrSystemic = errors.New("the model endpoint fails every ticket's attempt the same way, on its side")

// NightReport summarises one night.
type NightReport struct {
	RunID    int64
	Trigger  string
	Started  time.Time
	Finished time.Time
	Intake   []intake.ScanReport
	Touched  []int64 // tickets claimed during the night, in claim order
	Dollars  float64
	// EstimatedDollars is the part of Dollars computed from estimated usage (servers
	// that sent no usage).
	EstimatedDollars float64
	// CostUnknown is true when some call of the night has no known cost (an unpriced model,
	// or a request abandoned before its answer): Dollars is then a lower bound.
	CostUnknown bool
	Stopped     error // why the night ended early, nil when the queue drained
	// Outcome is how the night ended (recorded on its run); Error says why it is not ok.
	Outcome store.Outcome
	Error   string
}

func (d *Daemon) now() time.Time { return d.clock().Now() }

func (d *Daemon) logger() *slog.Logger {
	if d.Logger != nil {
		return d.Logger
	}
	return slog.Default()
}

// Intake scans every configured source and enqueues what is new.
func (d *Daemon) Intake(ctx context.Context) ([]intake.ScanReport, error) {
	var reps []intake.ScanReport
	worked := d.workedElsewhere(ctx)
	for _, src := range d.Config.Intake {
		dir := intake.Dir{
			Path:        src.Path,
			DefaultRepo: src.Repo,
			Priorities:  d.Config.Priorities,
			MaxAttempts: d.Config.Night.MaxAttempts,
			KnownRepo: func(name string) bool {
				_, ok := d.Config.Repos[name]
				return ok
			},
			Worked: worked,
			Clock:  d.clock(),
			Shared: d.Config.Store.Shared(),
		}
		rep, err := dir.Scan(ctx, d.Store)
		if err != nil {
			return reps, err
		}
		for _, bad := range rep.Invalid {
			d.logger().Warn("issue file skipped", "err", bad)
		}
		d.recordSkips(ctx, dir.Source(), rep.Skipped)
		if !d.Config.Store.Shared() { // another node's folder may have this path: its files are not here
			d.noteGone(ctx, dir.Path, rep.Gone)
		}
		if len(rep.Added) > 0 || len(rep.Retexted) > 0 {
			d.logger().Info("intake", "source", dir.Source(), "files", rep.Files, "added", len(rep.Added), "retexted", rep.Retexted)
		}
		reps = append(reps, rep)
	}
	d.githubScan(ctx)
	d.afterIntake(ctx)
	return reps, nil
}

// RunNight runs one night: intake, preflights, then workers until the queue has nothing left
// to do in the window, the dollars run out, or ctx is cancelled. Tickets in flight when it
// stops early are released without burning their attempt. Whatever happens, the night is
// recorded with its outcome (store.Outcome) and error once it has started; an error return
// means it could not start (outcome failed, or stopped by a shutdown during preparation).
func (d *Daemon) RunNight(ctx context.Context, trigger string) (NightReport, error) {
	log := d.logger().With("trigger", trigger)
	rep := NightReport{Trigger: trigger, Started: d.now()}
	// Intake and the night's preparation run on one node at a time: a second node waits
	// here, then joins the night the first opened and reuses what it prepared (baselines).
	unlock, err := d.Store.Lock(ctx, store.LockIntake)
	if err != nil {
		rep.Outcome, rep.Error = store.OutcomeFailed, err.Error()
		return rep, err
	}
	var unlockOnce sync.Once
	prepared := func() { unlockOnce.Do(unlock) }
	defer prepared()
	crashing := d.beforeJoin(ctx, log)
	runID, joined, err := d.Store.JoinRun(ctx, trigger, d.Config.Night.Window+d.Config.Night.Grace)
	if err != nil {
		rep.Outcome, rep.Error = store.OutcomeFailed, err.Error()
		return rep, err
	}
	rep.RunID = runID
	log = log.With("node", d.Store.Node())
	if joined {
		log.Info("joined the night another node started", "run", runID)
	}
	var ending nightEnding
	if crashing != nil {
		err = crashing
	} else {
		err = d.night(ctx, log, &rep, &ending, prepared)
	}
	rep.Finished = d.now()
	rep.Outcome, rep.Error = ending.outcome(ctx, err, rep.Stopped)
	if err := d.Store.EndRun(context.WithoutCancel(ctx), runID, rep.Outcome, rep.Error); err != nil {
		// The record an operator reads the night from is not there (the next start closes
		// it as a night that died): the exit code and the log must say so instead.
		log.Error("record the night's end", "run", runID, "outcome", rep.Outcome, "err", err)
		if rep.Outcome == store.OutcomeOK {
			rep.Outcome = store.OutcomePartial
		}
		rep.Error = strings.TrimPrefix(rep.Error+"; ", "; ") + fmt.Sprintf("the night's end could not be recorded in the ticket database: %v", err)
		d.keepUnrecorded(log, rep)
	}
	d.logNightEnded(context.WithoutCancel(ctx), log, rep, ctx.Err() != nil)
	notify.AfterNight(context.WithoutCancel(ctx), d.Store, d.Config.Notify.Webhook, runID, log) // the morning digest; never fails the night
	return rep, err
}

// nightEnding is what the end of a night knows beyond its report: what was left undone and
// why, to tell an ok night from a partial one.
type nightEnding struct {
	ready      int      // queued tickets ready to run when the night ended, outside paused repositories
	parked     int      // tickets parked when the night ended
	paused     []string // why repositories were not worked
	pausedLeft int      // their queued tickets
	down       []string // endpoints still down at the end
	notPushed  []string // push remotes that did not take the night's branches
	github     []string // GitHub operations failing at the end ("publish: …"): see github.Syncer.Failing
	unjudged   []string // fixes the night's whole suite could not judge: done, unpublished
	// machine are what the machine failed (storage, the ticket database), outages when the
	// database took no writes.
	machine []string
	outages []string
}

// outcome decides the night's outcome and error from how it ended.
func (e nightEnding) outcome(ctx context.Context, err, stopped error) (store.Outcome, string) {
	switch {
	case err != nil && ctx.Err() != nil:
		return store.OutcomeStopped, fmt.Sprintf("%v before the night started: %v", ErrShutdown, err)
	case err != nil:
		return store.OutcomeFailed, err.Error()
	case errors.Is(stopped, store.ErrDatabaseGone):
		return store.OutcomeFailed, stopped.Error()
	case stopped != nil && !errors.Is(stopped, ErrWindowClosed) && !errors.Is(stopped, ErrMachineFault):
		return store.OutcomeStopped, stopped.Error()
	}
	var why []string
	if len(e.machine) > 0 {
		why = append(why, "the machine failed, not the tickets (released uncharged): "+strings.Join(e.machine, "; "))
	}
	if len(e.outages) > 0 {
		why = append(why, strings.Join(e.outages, "; "))
	}
	if len(e.down) > 0 {
		why = append(why, "model endpoint down at the end: "+strings.Join(e.down, "; "))
	}
	if len(e.unjudged) > 0 {
		why = append(why, "fixes not published: the night's whole suite could not judge them (the next night's judges them again; or requeue each, or push its branch by hand): "+strings.Join(e.unjudged, "; "))
	}
	if len(e.notPushed) > 0 {
		why = append(why, "branches not pushed (they stay in this machine's clone; the next night's start pushes the done tickets' again): "+strings.Join(e.notPushed, "; "))
	}
	if len(e.github) > 0 {
		why = append(why, "GitHub refused the night's last passes (fixes may be unpublished or issues unread; each is asked again at a later poll, after a backoff, and at once the next night; /metrics ticketd_github_failing): "+strings.Join(e.github, "; "))
	}
	if e.ready > 0 {
		cause := "the run window closed"
		switch {
		case stopped == nil:
			cause = "the night ended"
		case errors.Is(stopped, ErrMachineFault):
			cause = "the machine's fault stopped this node's claims"
		}
		why = append(why, fmt.Sprintf("%d ticket(s) ready but not worked when %s", e.ready, cause))
	}
	if e.parked > 0 {
		why = append(why, fmt.Sprintf("%d ticket(s) parked: the endpoint kept failing them (ticketctl list --state parked; ticketctl requeue ID)", e.parked))
	}
	if e.pausedLeft > 0 {
		why = append(why, fmt.Sprintf("%d ticket(s) of paused repositories not worked: %s", e.pausedLeft, strings.Join(e.paused, "; ")))
	}
	if len(why) > 0 {
		return store.OutcomePartial, strings.Join(why, "; ")
	}
	return store.OutcomeOK, ""
}

// night is RunNight's work; it fills rep and ending, and returns an error when the night
// could not start.
// prepared is called once the preparation is over, to let the next node prepare.
func (d *Daemon) night(ctx context.Context, log *slog.Logger, rep *NightReport, ending *nightEnding, prepared func()) error {
	cfg := d.Config
	runID := rep.RunID
	d.pushes.reset()
	bwrap, err := d.prepareNight(ctx, log, rep)
	if err != nil {
		return err
	}
	trees := worktree.NewManager(cfg.Workspace, log)
	trees.Ready = worktreeReady(cfg)
	// A commit whose files alone outgrow what a check's worktree may hold (a blob of
	// gigabytes of zeros, megabytes in the repository) is refused before the checkout writes
	// it to disk.
	trees.MaxCheckout = int64(cfg.MaxWorktreeSize)
	// A ticket's worktree is kept for the next ticket of its repository, which then writes
	// only the files that differ instead of checking out every file again (seconds on a big
	// repository). At most one tree per worker is kept; the night's end removes them.
	trees.Keep = cfg.Night.Workers
	defer func() {
		if err := trees.Close(); err != nil {
			log.Warn("remove the worktrees kept for reuse", "err", err)
		}
	}()

	// claimCtx stops new claims; workCtx cancels work in flight. They differ so that the
	// window closing lets running attempts finish while a shutdown stops them at once.
	claimCtx, stopClaims := context.WithCancelCause(ctx)
	defer stopClaims(nil)
	workCtx, stopWork := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stopWork(nil)
	defer d.guardNight(workCtx, log, runID, cfg.Store.Shared(), func(cause error) { stopClaims(cause); stopWork(cause) })()
	unhook := context.AfterFunc(ctx, func() { stopWork(fmt.Errorf("%w: %v", ErrShutdown, context.Cause(ctx))) })
	defer unhook() // ctx outlives the night under `ticketd run`: do not pile up hooks on it
	rec := d.nightRecorder(log, runID, func(cause error) { stopClaims(cause); stopWork(cause) })
	checks := d.Checks
	if checks == nil {
		checks = checkRunner(cfg, bwrap, log)
	}
	// The repositories' start-up checks only read, so they run while the endpoints answer
	// the preflight (a model call's latency, seconds) instead of after it; what they found is
	// acted on only once the preflight passed, so a night that cannot start touches nothing.
	seen := &validate.Probed{} // the night's import probes, which read pytest's version too
	probed, stopProbe := startProbe(ctx, cfg, checks, seen)
	client, roles, windows, err := d.nightClient(ctx, log, runID, rec)
	if err != nil {
		stopProbe()
		return err
	}
	w := d.newPool(ctx, log, trees, newFixGuard(checks, log), client, nightParts{bwrap: bwrap, roles: roles, windows: windows,
		rec: rec, stopClaims: stopClaims, workCtx: workCtx, checks: checks, probed: seen})
	// Repositories that fail their start-up check are reported and paused; the night goes
	// on with the others. The pool sees only those that passed.
	healthy, err := w.checkStartup(ctx, probed())
	if err != nil {
		return err
	}
	w.cfg.Repos = healthy
	d.collectLeftovers(ctx, log, trees, healthy)
	d.unpark(ctx, log, rep.Trigger)
	d.pushLeftovers(ctx, log, healthy)
	d.blameRedChecks(log, trees, checks, w)
	stopGitHub := d.runGitHub(workCtx)
	defer stopGitHub()
	// Baselines run beside the work: a repository's tickets are claimable as soon as its own
	// baseline is ready. The preparation (for a second node waiting to join) ends with the
	// last baseline.
	waitBaselines := w.startBaselines(claimCtx, prepared)
	// The window stops claims; attempts still running get the grace period to finish, then
	// they are stopped too (keeping their partial work) and released without spending an
	// attempt. It counts from the end of the preparation (preflights), as the baselines
	// start: a slow start must not eat the night, nor close the window before the first claim.
	w.windowEnd = d.now().Add(cfg.Night.Window)
	w.end = &ender{d: d, st: d.Store, health: w.health, results: w.results, faults: w.faults, pauseRepo: w.pauseRepo,
		limits: limits{MaxDollars: cfg.Budget.MaxDollars, WindowEnd: w.windowEnd}, parking: nightParking(cfg, runID, rep.Trigger, w.windowEnd),
		suite: &nightSuite{d: d, trees: trees, run: checks}}
	w.end.fixes = newNightFixes(combinedChecks{trees: trees, checks: w.guard, suite: w.end.suite})
	// Fixes an earlier night held for its whole suite and never judged wait for tonight's
	// (heldagain.go); their baselines are read beside the night's own.
	reheld := make(chan struct{})
	go func() {
		defer close(reheld)
		w.reholdUnjudged(claimCtx, log, w.end.suite)
	}()
	stopWindow := d.clock().AfterFunc(cfg.Night.Window, func() {
		log.Info("run window closed: no new claims", "grace_s", seconds(cfg.Night.Grace))
		stopClaims(ErrWindowClosed)
	})
	defer stopWindow()
	stopGrace := d.clock().AfterFunc(cfg.Night.Window+cfg.Night.Grace, func() {
		stopWork(fmt.Errorf("%w and its grace period of %s ran out", ErrWindowClosed, cfg.Night.Grace))
	})
	defer stopGrace()
	d.logNightStarted(ctx, log, runID, cfg.Night.Workers, w.windowEnd, len(healthy))
	d.logForecast(ctx, log)
	prog := d.startProgress(ctx, log, runID, func() (float64, bool, bool) {
		return rec.Dollars(), rec.EstimatedDollars() > 0, rec.CostUnknown()
	})
	defer prog.end()
	var wg sync.WaitGroup
	for i := range cfg.Night.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.loop(claimCtx, workCtx, fmt.Sprintf("w%d-%d", i+1, os.Getpid()))
		}()
	}
	wg.Wait()
	waitBaselines()
	<-reheld
	// The fixes the selected tests passed are published only once the whole suite passes
	// over them together (nightsuite.go).
	w.end.suite.runAll(workCtx, log, cfg.Night.Workers)
	rep.Finished = d.now()
	rep.Touched = w.touchedIDs()
	rec.flush(context.WithoutCancel(ctx), log)
	rep.Dollars, rep.EstimatedDollars, rep.CostUnknown = rec.Dollars(), rec.EstimatedDollars(), rec.CostUnknown()
	if cause := context.Cause(claimCtx); cause != nil && !errors.Is(cause, context.Canceled) {
		rep.Stopped = cause
	} else if ctx.Err() != nil {
		rep.Stopped = fmt.Errorf("%w: %v", ErrShutdown, context.Cause(ctx))
	}
	// The last publishing pass comes before the ending is read: what GitHub still refuses
	// then is what the night leaves unpublished.
	stopGitHub()
	*ending = w.ending(context.WithoutCancel(ctx), client)
	ending.github = d.githubFailing()
	return nil
}

// prepareNight readies the machine for a night: the sandbox, the intake, the folders. It
// returns the bwrap binary the checks run in ("" without).
func (d *Daemon) prepareNight(ctx context.Context, log *slog.Logger, rep *NightReport) (string, error) {
	cfg := d.Config
	bwrap, err := prepareSandbox(ctx, cfg, log)
	if err != nil {
		return "", err
	}
	mode := cmp.Or(cfg.Sandbox, sandbox.ModeBwrap)
	if err := d.Store.SetRunSandbox(ctx, rep.RunID, string(mode)); err != nil {
		log.Warn("record the night's sandbox", "run", rep.RunID, "err", err)
	}
	if rep.Intake, err = d.Intake(ctx); err != nil {
		return "", err
	}
	if err := os.MkdirAll(cfg.Workspace, 0o755); err != nil {
		return "", fmt.Errorf("create workspace %s: %w", cfg.Workspace, err)
	}
	if err := os.MkdirAll(cfg.Output, 0o755); err != nil {
		return "", fmt.Errorf("create output folder %s: %w", cfg.Output, err)
	}
	return bwrap, nil
}

// nightRecorder records the night's model calls; it stops the night (stop) when its dollars
// are spent or the account is out of quota.
func (d *Daemon) nightRecorder(log *slog.Logger, runID int64, stop func(error)) *callRecorder {
	limit := d.Config.Night.MaxDollars
	return &callRecorder{store: d.Store, runID: runID, limit: limit, over: func() {
		log.Warn("night dollar budget spent: stopping", "limit", model.FormatCost(limit, false, false))
		stop(ErrNightBudget)
	}, quota: func(msg string) {
		cause := fmt.Errorf("%w: %s", ErrQuota, msg)
		log.Error("model account out of quota or credit: stopping the night", "err", msg)
		stop(cause)
	}}
}

// nightClient is the night's model client, its endpoints preflighted, with the roles it
// serves and their context windows.
func (d *Daemon) nightClient(ctx context.Context, log *slog.Logger, runID int64, rec *callRecorder) (*model.Client, map[model.Role]bool, map[model.Role]int, error) {
	cfg := d.Config
	opts := append([]model.Option{model.WithClock(d.clock()), model.WithEndpointObserver(endpointLog(d.Store, runID, log))}, d.ModelOptions...)
	client, err := model.New(cfg.Models, rec, log, opts...)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("model client: %w", err)
	}
	roles := map[model.Role]bool{}
	windows := map[model.Role]int{}
	for r, rc := range cfg.Models.Roles {
		roles[r] = true
		if rc.ContextWindow > 0 {
			windows[r] = rc.ContextWindow
		}
	}
	if err := client.Preflight(ctx, pipeline.PreflightRequests(roles, cfg.Budget.MaxQuestions > 0)); err != nil {
		return nil, nil, nil, fmt.Errorf("%w: %w", ErrPreflight, err)
	}
	return client, roles, windows, nil
}

// nightParts are what a night's worker pool is made of, beside the daemon's own.
type nightParts struct {
	bwrap      string
	roles      map[model.Role]bool
	windows    map[model.Role]int
	rec        *callRecorder
	stopClaims context.CancelCauseFunc
	workCtx    context.Context
	// checks is the night's check runner, which may tell each pytest check's version from
	// probed, the start-up's import probes.
	checks pipeline.CheckRunner
	probed *validate.Probed
}

// newPool makes the night's worker pool.
func (d *Daemon) newPool(ctx context.Context, log *slog.Logger, trees *worktree.Manager, guard *fixGuard, client *model.Client, p nightParts) *workerPool {
	cfg := d.Config
	w := &workerPool{
		d:         d,
		cfg:       cfg,
		log:       log,
		trees:     trees,
		guard:     guard,
		baselines: newBaselines(guard, d.Store, log),
		runner: &pipeline.Runner{
			Models: client, Checks: guard, Recorder: d.Store, Logger: log, Now: d.now, Roles: p.roles,
			Layout: d.PromptLayout, CompactAt: cfg.Budget.CompactAt, ContextWindows: p.windows,
			JudgeAdvisory: cfg.Judge == "advisory", Reviewers: cfg.Review.PipelineReviewers(),
			NoQuestions: cfg.Budget.MaxQuestions == 0,
		},
		envs:       newRepoEnvs(cfg, p.bwrap, log),
		gate:       client,
		faults:     &machineFaults{stopClaims: p.stopClaims},
		health:     &storeHealth{st: d.Store, now: d.now, lease: cfg.Night.Lease, calls: p.rec, stop: p.workCtx, waiting: d.onStoreWait},
		stopClaims: p.stopClaims,
		fetch:      store.NewFetcher(d.Store, cfg.Night.Lease),
	}
	d.Store.PassOver() // the last night's suspect, if any, is no suspect of this one
	if v, ok := p.checks.(pytestVersioner); ok {
		w.baselines.versions, w.baselines.probed = v, p.probed
	}
	w.envs.builder.Now = d.now
	w.envs.st, w.envs.checks, w.envs.pauseRepo, w.envs.now = d.Store, guard, w.pauseRepo, d.now
	p.rec.watch(w.health.isDown, func(err error) { w.health.writeFailed(log, "record model call", 0, err) })
	w.results = &resultsFolder{st: d.Store, output: cfg.Output, faults: w.faults, now: d.now}
	if id, err := d.Store.Identity(ctx); err == nil {
		w.results.identity = id
	}
	return w
}

// unpark brings parked tickets back for this night: a parked ticket waits for the next night,
// the schedule's next tick under `ticketd run`; under `ticketd once`, which has no schedule,
// the next `once`.
func (d *Daemon) unpark(ctx context.Context, log *slog.Logger, trigger string) {
	before := time.Time{}
	if trigger == TriggerCron {
		before = d.now()
	}
	if n, err := d.Store.Unpark(ctx, before, "ticketd"); err != nil {
		log.Warn("unpark tickets", "err", err)
	} else if n > 0 {
		log.Info("parked tickets back in the queue for this night", "tickets", n)
	}
}

// nightParking is until when this night parks a ticket: the schedule's next night under
// `ticketd run`, the next `ticketd once` otherwise.
func nightParking(cfg config.Config, runID int64, trigger string, windowEnd time.Time) parking {
	park := parking{runID: runID, max: cfg.Night.MaxTransportReleases, until: windowEnd, note: "until the next `ticketd once`"}
	if trigger == TriggerCron {
		park.until = nextNight(cfg.Night.Schedule, windowEnd)
		park.note = "until the next night (" + park.until.UTC().Format(time.RFC3339) + ")"
	}
	return park
}

// TriggerCron names the nights `ticketd run` starts on its schedule: only they park a ticket
// until the schedule's next tick.
const TriggerCron = "cron"

// ending reads what the night left undone.
func (w *workerPool) ending(ctx context.Context, gate endpointGate) nightEnding {
	var e nightEnding
	// What the machine failed is known without the database: a database that takes no
	// reads either (its disk died) must not hide its own outage behind an ok night.
	e.paused = w.unhealthy.reasons()
	e.machine, e.outages = w.faults.list(), w.health.outages()
	if due, err := w.d.Store.NextDue(ctx); err != nil {
		w.log.Error("read what the night left undone", "err", err)
		e.outages = append(e.outages, fmt.Sprintf("what the night left undone could not be read from the ticket database: %v", err))
	} else {
		e.ready, e.parked, e.pausedLeft = due.Ready, due.Parked, due.Paused
		if due.Queued > 0 && !due.NextRunAfter.After(w.d.now()) && e.ready == 0 {
			e.ready = 1
		}
	}
	e.notPushed = w.d.pushes.list()
	if w.end != nil {
		e.unjudged = w.end.suite.unpublished()
	}
	if g, ok := gate.(interface{ Endpoints() []model.EndpointStatus }); ok {
		for _, s := range g.Endpoints() {
			if s.Down {
				e.down = append(e.down, fmt.Sprintf("%s since %s, last error: %s", s.Name, s.Since.UTC().Format(time.RFC3339), s.LastError))
			}
		}
	}
	return e
}

// Preflight sends every role the request the night will send it (see
// model.Client.Preflight), so `ticketd run` fails at start, with the server's own words,
// instead of at the first night.
func (d *Daemon) Preflight(ctx context.Context) error {
	client, err := model.New(d.Config.Models, nil, d.logger(), append([]model.Option{model.WithClock(d.clock())}, d.ModelOptions...)...)
	if err != nil {
		return fmt.Errorf("model client: %w", err)
	}
	roles := map[model.Role]bool{}
	for r := range d.Config.Models.Roles {
		roles[r] = true
	}
	if err := client.Preflight(ctx, pipeline.PreflightRequests(roles, d.Config.Budget.MaxQuestions > 0)); err != nil {
		return fmt.Errorf("%w: %w", ErrPreflight, err)
	}
	return nil
}

// nextNight is when a parked ticket may run again: the schedule's first tick after this
// night's window closes (the window's end when the schedule cannot be read).
func nextNight(schedule string, windowEnd time.Time) time.Time {
	sched, err := cron.ParseStandard(schedule)
	if err != nil {
		return windowEnd
	}
	return sched.Next(windowEnd)
}
