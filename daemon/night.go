// Package daemon is the ticketd process: it takes tickets in from the configured sources,
// runs a night of fix workers over the queue, and turns each attempt's outcome into a ticket
// transition, a branch, a patch and a report.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/daemon/intake"
	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/pipeline/model"
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
	// ModelOptions are passed to model.New (tests inject an HTTP client or clock).
	ModelOptions []model.Option
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// PromptLayout is the pipeline's prompt layout; the zero value is the cache-friendly one.
	PromptLayout pipeline.Layout
}

// Causes recorded when a night stops work in flight.
var (
	ErrShutdown         = errors.New("ticketd is shutting down")
	ErrWindowClosed     = errors.New("the night's run window closed")
	ErrNightBudget      = errors.New("the night's dollar budget is spent")
	errCancelRequested  = errors.New("cancel requested by an operator")
	errLeaseLost        = errors.New("lease lost to another worker")
	errHeartbeatFailing = errors.New("heartbeat kept failing")
)

// NightReport summarises one night.
type NightReport struct {
	RunID    int64
	Trigger  string
	Started  time.Time
	Finished time.Time
	Intake   []intake.ScanReport
	Touched  []int64 // tickets claimed during the night, in claim order
	Dollars  float64
	Stopped  error // why the night ended early, nil when the queue drained
}

func (d *Daemon) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

func (d *Daemon) logger() *slog.Logger {
	if d.Logger != nil {
		return d.Logger
	}
	return slog.Default()
}

// Intake scans every configured source and enqueues what is new.
func (d *Daemon) Intake(ctx context.Context) ([]intake.ScanReport, error) {
	var reps []intake.ScanReport
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
		}
		rep, err := dir.Scan(ctx, d.Store)
		if err != nil {
			return reps, err
		}
		for _, bad := range rep.Invalid {
			d.logger().Warn("issue file skipped", "err", bad)
		}
		if len(rep.Added) > 0 {
			d.logger().Info("intake", "source", dir.Source(), "files", rep.Files, "added", len(rep.Added))
		}
		reps = append(reps, rep)
	}
	return reps, nil
}

// RunNight runs one night: intake, then workers until the queue has nothing left to do in
// the window, the dollars run out, or ctx is cancelled. Tickets in flight when it stops
// early are released without burning their attempt.
func (d *Daemon) RunNight(ctx context.Context, trigger string) (NightReport, error) {
	cfg := d.Config
	log := d.logger().With("trigger", trigger)
	rep := NightReport{Trigger: trigger, Started: d.now()}
	runID, err := d.Store.StartRun(ctx, trigger)
	if err != nil {
		return rep, err
	}
	rep.RunID = runID
	defer func() {
		if err := d.Store.FinishRun(context.WithoutCancel(ctx), runID); err != nil {
			log.Warn("finish run", "run", runID, "err", err)
		}
	}()

	if rep.Intake, err = d.Intake(ctx); err != nil {
		return rep, err
	}
	if err := os.MkdirAll(cfg.Workspace, 0o755); err != nil {
		return rep, fmt.Errorf("create workspace %s: %w", cfg.Workspace, err)
	}
	if err := os.MkdirAll(cfg.Output, 0o755); err != nil {
		return rep, fmt.Errorf("create output folder %s: %w", cfg.Output, err)
	}
	trees := worktree.NewManager(cfg.Workspace, log)
	for name, r := range cfg.Repos {
		if removed, err := trees.CollectLeftovers(ctx, r.Path); err != nil {
			log.Warn("collect leftover worktrees", "repo", name, "err", err)
		} else if len(removed) > 0 {
			log.Info("removed leftover worktrees", "repo", name, "count", len(removed))
		}
	}

	// claimCtx stops new claims; workCtx cancels work in flight. They differ so that the
	// window closing lets running attempts finish while a shutdown stops them at once.
	claimCtx, stopClaims := context.WithCancelCause(ctx)
	defer stopClaims(nil)
	workCtx, stopWork := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stopWork(nil)
	unhook := context.AfterFunc(ctx, func() { stopWork(fmt.Errorf("%w: %v", ErrShutdown, context.Cause(ctx))) })
	defer unhook() // ctx outlives the night under `ticketd run`: do not pile up hooks on it
	windowEnd := rep.Started.Add(cfg.Night.Window)
	windowTimer := time.AfterFunc(cfg.Night.Window, func() { stopClaims(ErrWindowClosed) })
	defer windowTimer.Stop()

	rec := &callRecorder{store: d.Store, runID: runID, limit: cfg.Night.MaxDollars, over: func() {
		log.Warn("night dollar budget spent: stopping", "limit_usd", cfg.Night.MaxDollars)
		stopClaims(ErrNightBudget)
		stopWork(ErrNightBudget)
	}}
	client, err := model.New(cfg.Models, rec, log, d.ModelOptions...)
	if err != nil {
		return rep, fmt.Errorf("model client: %w", err)
	}
	checks := d.Checks
	if checks == nil {
		checks = &validate.Runner{Logger: log}
	}
	roles := map[model.Role]bool{}
	for r := range cfg.Models.Roles {
		roles[r] = true
	}
	if err := preflight(ctx, checks, cfg.Repos); err != nil {
		return rep, fmt.Errorf("checks: %w", err)
	}
	w := &workerPool{
		d:         d,
		cfg:       cfg,
		log:       log,
		trees:     trees,
		baselines: newBaselines(checks),
		runner: &pipeline.Runner{
			Models: client, Checks: checks, Recorder: d.Store, Logger: log, Now: d.Now, Roles: roles,
			Layout: d.PromptLayout, JudgeAdvisory: cfg.Judge == "advisory",
		},
		windowEnd: windowEnd,
	}
	// The claim window counts from the end of the baselines: they are the night's preparation.
	windowTimer.Stop()
	w.checkRepos(claimCtx)
	windowTimer.Reset(cfg.Night.Window)
	w.windowEnd = d.now().Add(cfg.Night.Window)
	var wg sync.WaitGroup
	for i := range cfg.Night.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.loop(claimCtx, workCtx, fmt.Sprintf("w%d-%d", i+1, os.Getpid()))
		}()
	}
	wg.Wait()
	rep.Finished = d.now()
	rep.Touched = w.touchedIDs()
	rep.Dollars = rec.Dollars()
	if cause := context.Cause(claimCtx); cause != nil && !errors.Is(cause, context.Canceled) {
		rep.Stopped = cause
	} else if ctx.Err() != nil {
		rep.Stopped = fmt.Errorf("%w: %v", ErrShutdown, context.Cause(ctx))
	}
	log.Info("night finished", "run", runID, "tickets", len(rep.Touched), "cost_usd", rep.Dollars,
		"took", rep.Finished.Sub(rep.Started).Round(time.Millisecond), "stopped", rep.Stopped)
	return rep, nil
}
