// Command ticketd is the overnight bug-fixing daemon: `run` starts nights on a cron
// schedule, `once` runs one night now, `demo` runs an offline demo night with the scripted
// model (a test double).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/lmittmann/tint"
	"github.com/robfig/cron/v3"

	"github.com/ticketd/ticketd/daemon"
	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/daemon/demo"
	"github.com/ticketd/ticketd/daemon/reaper"
	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/store"
)

const usage = `ticketd fixes bugs overnight.

Usage:
  ticketd demo [--dir DIR]            offline demo night with the scripted model (a test double)
  ticketd once --config FILE          run one night now
  ticketd run  --config FILE          run nights on night.schedule (cron) until stopped

Flags for every command:
  --log-format text|json              text (colour on a terminal) or JSON lines; default from config
  --log-level debug|info|warn|error

Exit codes of once:
  0  the night ran and worked every ticket it could claim (outcome ok)
  1  the night could not start for a reason of this machine: config, sandbox, database, no
     healthy repository, another ticketd on the workspace or database
  2  usage error
  3  the model endpoint kept the night from its tickets (preflight refused or down for
     models.preflight_wait: outcome failed), or the night stopped early or left tickets
     unworked (outcome stopped or partial: endpoint down, out of quota, a systemic endpoint
     failure, parked tickets, the window or dollar budget, a shutdown)
`

// Exit codes.
const (
	exitOK         = 0
	exitFailed     = 1
	exitUsage      = 2
	exitIncomplete = 3
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the process: tests call it with their own writers.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, usage)
		return 0
	}
	cmd, rest := args[0], args[1:]
	fs := flag.NewFlagSet("ticketd "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "config.yaml", "configuration file")
	dir := fs.String("dir", "", "demo: folder for the demo (default: a new temporary folder)")
	logFormat := fs.String("log-format", "", "text or json")
	logLevel := fs.String("log-level", "", "debug, info, warn or error")
	if err := fs.Parse(rest); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "ticketd %s: unexpected argument %q\ntry: ticketd help\n", cmd, fs.Arg(0))
		return exitUsage
	}

	switch cmd {
	case "demo":
		log, err := newLogger(stderr, or(*logFormat, "text"), or(*logLevel, "warn"))
		if err != nil {
			fmt.Fprintf(stderr, "ticketd demo: %v\n", err)
			return 2
		}
		res, err := demo.Run(ctx, demo.Options{Dir: *dir, Stdout: stdout, Logger: log})
		if err != nil {
			fmt.Fprintf(stderr, "ticketd demo: %v\n", err)
			return 1
		}
		for _, t := range res.Tickets {
			if t.State != "done" {
				fmt.Fprintf(stderr, "ticketd demo: ticket %d ended %s, not done: %s\n", t.ID, t.State, t.Reason)
				return 1
			}
		}
		return 0
	case "once", "run":
		cfg, err := config.Load(*configPath)
		if err != nil {
			fmt.Fprintf(stderr, "ticketd %s: %v\n", cmd, err)
			return 2
		}
		log, err := newLogger(stderr, or(*logFormat, cfg.Log.Format), or(*logLevel, cfg.Log.Level))
		if err != nil {
			fmt.Fprintf(stderr, "ticketd %s: %v\n", cmd, err)
			return 2
		}
		unlock, err := daemon.LockInstance(cfg)
		if err != nil {
			fmt.Fprintf(stderr, "ticketd %s: refusing to start: %v\n", cmd, err)
			return exitFailed
		}
		defer unlock()
		if _, err := daemon.CheckSandbox(ctx, cfg); err != nil {
			fmt.Fprintf(stderr, "ticketd %s: refusing to start: %v\n", cmd, err)
			return 1
		}
		// Orphans of what the daemon starts (a git helper gone to the background) become
		// ours and are reaped, and killed at exit, instead of piling up under PID 1.
		rp := &reaper.Reaper{Logger: log}
		if err := rp.Start(); err != nil {
			log.Warn("orphaned processes will not be reaped", "err", err)
		} else {
			defer rp.Stop()
		}
		st, err := daemon.OpenStore(ctx, cfg)
		if err != nil {
			fmt.Fprintf(stderr, "ticketd %s: %v\n", cmd, err)
			return exitFailed
		}
		defer st.Close()
		d := &daemon.Daemon{Config: cfg, Store: st, Logger: log}
		if err := startExtras(ctx, d, log); err != nil {
			fmt.Fprintf(stderr, "ticketd %s: %v\n", cmd, err)
			return exitFailed
		}
		if cmd == "once" {
			rep, err := d.RunNight(ctx, "once")
			return onceSummary(ctx, st, rep, err, stdout, stderr)
		}
		if err := d.Preflight(ctx); err != nil {
			fmt.Fprintf(stderr, "ticketd run: %v\n", err)
			return exitFailed
		}
		if err := schedule(ctx, d, log); err != nil {
			fmt.Fprintf(stderr, "ticketd run: %v\n", err)
			return exitFailed
		}
		return exitOK
	default:
		fmt.Fprintf(stderr, "ticketd: unknown command %q\ntry: ticketd help\n", cmd)
		return 2
	}
}

// onceSummary prints how the night of `ticketd once` went (stdout: the figures; stderr: why
// it is not ok) and returns its exit code.
func onceSummary(ctx context.Context, st *store.Store, rep daemon.NightReport, err error, stdout, stderr io.Writer) int {
	if rep.RunID == 0 {
		fmt.Fprintf(stderr, "ticketd once: %v\n", err)
		return exitFailed
	}
	var run store.Run
	if runs, rerr := st.Runs(context.WithoutCancel(ctx), 0); rerr == nil {
		for _, r := range runs {
			if r.ID == rep.RunID {
				run = r
				break
			}
		}
	}
	fmt.Fprintf(stdout, "night %d %s: %d ticket(s) worked (%d done, %d escalated), %s, %s\n", rep.RunID, rep.Outcome,
		len(rep.Touched), run.Done, run.Escalated, model.FormatCost(rep.Dollars, rep.EstimatedDollars > 0, rep.CostUnknown),
		rep.Finished.Sub(rep.Started).Round(time.Second))
	if rep.EstimatedDollars > 0 {
		fmt.Fprintf(stdout, "  ~: $%.4f of it estimated (the server sent no usage, or a request was abandoned)\n", rep.EstimatedDollars)
	}
	if rep.CostUnknown {
		fmt.Fprintln(stdout, "  + unknown: some calls have no known cost (a model without a price under models.prices, or an answer never received)")
	}
	switch {
	case rep.Outcome == store.OutcomeOK:
		return exitOK
	case rep.Outcome == store.OutcomeFailed && errors.Is(err, daemon.ErrPreflight):
		// The endpoint, not the machine or the config, kept the night from its tickets.
		fmt.Fprintf(stderr, "ticketd once: the night failed: %s\n", rep.Error)
		return exitIncomplete
	case rep.Outcome == store.OutcomeFailed:
		fmt.Fprintf(stderr, "ticketd once: the night failed: %s\n", rep.Error)
		return exitFailed
	}
	fmt.Fprintf(stderr, "ticketd once: the night %s: %s\n", rep.Outcome, rep.Error)
	return exitIncomplete
}

// schedule runs a night at every tick of night.schedule until ctx ends. A night still
// running at the next tick makes that tick a no-op (SkipIfStillRunning before Recover, so
// a panic is recovered inside the skip guard and does not wedge it).
func schedule(ctx context.Context, d *daemon.Daemon, log *slog.Logger) error {
	c := cron.New(cron.WithChain(cron.SkipIfStillRunning(cron.DiscardLogger), cron.Recover(cron.DiscardLogger)))
	var id cron.EntryID
	next := func() string { return c.Entry(id).Next.Format(time.RFC3339) }
	id, err := c.AddFunc(d.Config.Night.Schedule, func() {
		// RunNight records and logs the night's outcome itself.
		_, _ = d.RunNight(ctx, daemon.TriggerCron)
		if ctx.Err() == nil {
			log.Info("waiting for the next night", "next_night", next(), "schedule", d.Config.Night.Schedule)
		}
	})
	if err != nil {
		return fmt.Errorf("night.schedule %q: %w (use five cron fields, e.g. \"0 1 * * *\", or @daily)", d.Config.Night.Schedule, err)
	}
	c.Start()
	log.Info("waiting for the schedule", "next_night", next(), "schedule", d.Config.Night.Schedule)
	<-ctx.Done()
	log.Info("shutting down: waiting for the running night to release its tickets")
	<-c.Stop().Done()
	return nil
}

// newLogger returns tint on a terminal (colour only there) or JSON lines.
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %q is not debug, info, warn or error", level)
	}
	switch format {
	case "json":
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lv})), nil
	case "text":
		return slog.New(tint.NewHandler(w, &tint.Options{Level: lv, TimeFormat: time.TimeOnly, NoColor: !isTerminal(w)})), nil
	}
	return nil, errors.New("--log-format: " + format + " is not text or json")
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0 && !strings.EqualFold(os.Getenv("TERM"), "dumb")
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
