package daemon

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/store"
)

// The night's log is what an operator follows in journalctl: a "night started" line with
// what is queued, a "night progress" line every ProgressEvery, and a "night ended" line
// with the outcome, the counts and the cost. Durations are seconds (keys ending in _s),
// costs are rounded as every other surface writes them ($0.0123, ~ estimated, + unknown).

// DefaultProgressEvery is how often a night logs its progress.
const DefaultProgressEvery = 5 * time.Minute

// seconds is a duration as logged: seconds, to the millisecond.
func seconds(d time.Duration) float64 {
	return math.Round(d.Seconds()*1000) / 1000
}

// logNightStarted says the workers start, with what waits for them.
func (d *Daemon) logNightStarted(ctx context.Context, log *slog.Logger, runID int64, workers int, windowEnd time.Time, repos int) {
	due, err := d.Store.NextDue(ctx)
	if err != nil {
		log.Warn("read the queue at the night's start", "err", err)
	}
	attrs := []any{"run", runID, "ready", due.Ready, "queued", due.Queued, "parked", due.Parked, "repos", repos,
		"workers", workers, "window_ends", windowEnd.UTC().Format(time.RFC3339)}
	if limit := d.Config.Night.MaxDollars; limit > 0 {
		attrs = append(attrs, "max_dollars", model.FormatCost(limit, false, false))
	}
	log.Info("night started", attrs...)
}

// logNightEnded writes the night's one closing line: ok at INFO; partial, stopped and failed
// at WARN or ERROR with why; a night a shutdown stopped (shutdown: the process's context
// ended) at INFO, since that is what was asked.
func (d *Daemon) logNightEnded(ctx context.Context, log *slog.Logger, rep NightReport, shutdown bool) {
	attrs := []any{"run", rep.RunID, "outcome", string(rep.Outcome), "worked", len(rep.Touched)}
	if runs, err := d.Store.Runs(ctx, 8); err == nil {
		for _, r := range runs {
			if r.ID == rep.RunID {
				attrs = append(attrs, "done", r.Done, "escalated", r.Escalated, "retried", r.Retried)
				break
			}
		}
	}
	attrs = append(attrs, "cost", model.FormatCost(rep.Dollars, rep.EstimatedDollars > 0, rep.CostUnknown),
		"duration_s", seconds(rep.Finished.Sub(rep.Started)))
	if rep.Error != "" {
		attrs = append(attrs, "why", rep.Error)
	}
	switch {
	case rep.Outcome == store.OutcomeOK:
		log.Info("night ended", attrs...)
	case rep.Outcome == store.OutcomeStopped && (shutdown || errors.Is(rep.Stopped, ErrShutdown)):
		log.Info("night ended: stopped by a shutdown", attrs...)
	case rep.Outcome == store.OutcomeFailed:
		log.Error("night ended: it could not start, nothing was claimed", attrs...)
	default:
		log.Warn("night ended "+string(rep.Outcome), attrs...)
	}
}

// progress logs a night's progress every so often until stopped: what runs, what is done or
// escalated, and the spend so far. It rides the daemon's timers, so a test fires it at will.
type progress struct {
	d      *Daemon
	log    *slog.Logger
	runID  int64
	every  time.Duration
	spent  func() (dollars float64, estimated, unknown bool)
	mu     sync.Mutex
	stop   func() bool
	done   bool
	ctx    context.Context
	cancel context.CancelFunc
}

func (d *Daemon) startProgress(ctx context.Context, log *slog.Logger, runID int64, spent func() (float64, bool, bool)) *progress {
	every := d.ProgressEvery
	if every <= 0 {
		every = DefaultProgressEvery
	}
	p := &progress{d: d, log: log, runID: runID, every: every, spent: spent}
	p.ctx, p.cancel = context.WithCancel(context.WithoutCancel(ctx))
	p.arm()
	return p
}

func (p *progress) arm() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.done {
		p.stop = p.d.clock().AfterFunc(p.every, p.tick)
	}
}

func (p *progress) tick() {
	p.report()
	p.arm()
}

// report logs one progress line.
func (p *progress) report() {
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	st, err := p.d.Store.Stats(ctx, p.runID)
	if err != nil {
		if ctx.Err() == nil {
			p.log.Warn("night progress: read the night's figures", "run", p.runID, "err", err)
		}
		return
	}
	dollars, estimated, unknown := p.spent()
	p.log.Info("night progress", "run", p.runID, "running", st.ByState[store.StateRunning], "queued", st.ByState[store.StateQueued],
		"done", st.ByState[store.StateDone], "escalated", st.ByState[store.StateEscalated], "parked", st.ByState[store.StateParked],
		"spent", model.FormatCost(dollars, estimated, unknown))
}

// end stops the reports.
func (p *progress) end() {
	p.mu.Lock()
	p.done = true
	if p.stop != nil {
		p.stop()
	}
	p.mu.Unlock()
	p.cancel()
}
