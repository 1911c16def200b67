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

// A command is one ticketd subcommand: its flags are its own, and its --help lists them.
type command struct {
	name, args, short string
	long              string // what it does, its exit codes
	flags             func(fs *flag.FlagSet, o *options)
}

// options are every command's flags; each command defines the ones it takes.
type options struct {
	config, dir, logFormat, logLevel string
}

func logFlags(fs *flag.FlagSet, o *options) {
	fs.StringVar(&o.logFormat, "log-format", "", "log `FORMAT`: text (coloured on a terminal) or json (one object a line); default log.format of the config (demo: text)")
	fs.StringVar(&o.logLevel, "log-level", "", "log `LEVEL`: debug, info, warn or error; default log.level of the config (demo: warn)")
}

func configFlag(fs *flag.FlagSet, o *options) {
	fs.StringVar(&o.config, "config", "config.yaml", "the configuration `FILE`")
}

const onceExits = `Exit codes:
  0  the night ran and worked every ticket it could claim (outcome ok)
  1  the night could not start for a reason of this machine: the config, the sandbox, the
     database, no healthy repository, another ticketd on the workspace or database
  2  usage error (unknown command or flag, a --config that cannot be read)
  3  the model endpoint kept the night from its tickets (preflight refused, or down for
     models.preflight_wait: outcome failed), or the night stopped early or left tickets
     unworked (outcome stopped or partial: endpoint down, out of quota, a systemic endpoint
     failure, parked tickets, the window or dollar budget, a shutdown), or left work
     undelivered (partial: a push remote or GitHub refused it)`

var commands = []command{
	{name: "demo", args: "[--dir DIR]", short: "an offline demo night with the scripted model (a test double)",
		long: `Creates a small Python project with three bugs, three issue files and a config in DIR
(default: a new temporary folder), and runs a night against the scripted model.

Exit codes:
  0  every demo ticket was fixed
  1  the demo could not run, or a ticket was not fixed
  2  usage error`,
		flags: func(fs *flag.FlagSet, o *options) {
			fs.StringVar(&o.dir, "dir", "", "keep the demo in `DIR` (empty or absent); default a new temporary folder")
			logFlags(fs, o)
		}},
	{name: "once", args: "--config FILE", short: "run one night now",
		long: "Intake, preflight, start-up checks, then the workers until the queue is done or the window\n" +
			"closes; prints the night's outcome and cost.\n\n" + onceExits,
		flags: func(fs *flag.FlagSet, o *options) { configFlag(fs, o); logFlags(fs, o) }},
	{name: "check", args: "--config FILE", short: "check a config without running a night: the database, the sandbox, the repositories, the endpoints",
		long: `Loads the config (reporting every mistake in it at once), then looks at what a night needs,
writing nothing: the database (reachable, ticketd's, its schema), the sandbox, each repository's
start-up check (a git repository, base_ref, the checks' tools), the intake folders, and each
model endpoint with the night's own preflight requests. Prints one line per item.

Exit codes:
  0  everything a night needs is in place
  1  something is not: each such line says what and what to do
  2  usage error (unknown flag, a --config that cannot be read)`,
		flags: func(fs *flag.FlagSet, o *options) { configFlag(fs, o); logFlags(fs, o) }},
	{name: "run", args: "--config FILE", short: "run nights on night.schedule (cron) until stopped",
		long: `Checks the endpoints (preflight) at start, then waits for night.schedule and runs a night at
each tick; logs the next night's time while it waits. SIGTERM or SIGINT stops it: a running
night releases its tickets (no attempt spent) and the process exits 0. SIGHUP is logged and
ignored (the config is read at start only: restart to apply a new one).

Exit codes:
  0  stopped by SIGTERM or SIGINT
  1  it could not start: the config, the sandbox, the database, the preflight, the schedule
  2  usage error (unknown command or flag, a --config that cannot be read)`,
		flags: func(fs *flag.FlagSet, o *options) { configFlag(fs, o); logFlags(fs, o) }},
}

func findCommand(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// usage is the top-level help.
func usage() string {
	var b strings.Builder
	b.WriteString("ticketd fixes bugs overnight.\n\nUsage:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  ticketd %-22s %s\n", c.name+" "+c.args, c.short)
	}
	b.WriteString("  ticketd help [COMMAND]         this help, or a command's flags and exit codes\n\n")
	b.WriteString("Run 'ticketd COMMAND --help' for a command's flags. ticketctl inspects and steers the queue.\n\n")
	b.WriteString(strings.Replace(onceExits, "Exit codes:", "Exit codes of once (run's and demo's: ticketd help run, ticketd help demo):", 1) + "\n")
	return b.String()
}

// commandHelp is one command's help: synopsis, what it does, its flags.
func commandHelp(c command) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: ticketd %s %s\n\n%s.\n\n", c.name, c.args, strings.ToUpper(c.short[:1])+c.short[1:])
	if c.long != "" {
		b.WriteString(c.long + "\n\n")
	}
	b.WriteString("Flags:\n")
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	c.flags(fs, &options{})
	fs.SetOutput(&b)
	fs.PrintDefaults()
	return b.String()
}

// Exit codes.
const (
	exitOK         = 0
	exitFailed     = 1
	exitUsage      = 2
	exitIncomplete = 3
)

func main() {
	// A hangup (a closed terminal, a stray kill -HUP) must not end a night without a word:
	// ignored here, logged once the logger exists (watchHangup).
	signal.Ignore(syscall.SIGHUP)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the process: tests call it with their own writers.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, "ticketd: no command given\n\n"+usage())
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && args[0] == "help" {
			c, ok := findCommand(args[1])
			if !ok {
				fmt.Fprintf(stderr, "ticketd help: unknown command %q\ntry: ticketd help\n", args[1])
				return exitUsage
			}
			fmt.Fprint(stdout, commandHelp(c))
			return exitOK
		}
		fmt.Fprint(stdout, usage())
		return exitOK
	}
	cmd, rest := args[0], args[1:]
	c, ok := findCommand(cmd)
	if !ok {
		fmt.Fprintf(stderr, "ticketd: unknown command %q\ntry: ticketd help\n", cmd)
		return exitUsage
	}
	var o options
	fs := flag.NewFlagSet("ticketd "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.flags(fs, &o)
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, commandHelp(c))
			return exitOK
		}
		fmt.Fprintf(stderr, "ticketd %s: %v\ntry: ticketd %s --help\n", cmd, err, cmd)
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "ticketd %s: unexpected argument %q\ntry: ticketd %s --help\n", cmd, fs.Arg(0), cmd)
		return exitUsage
	}

	switch cmd {
	case "demo":
		log, err := newLogger(stderr, or(o.logFormat, "text"), or(o.logLevel, "warn"))
		if err != nil {
			fmt.Fprintf(stderr, "ticketd demo: %v\n", err)
			return exitUsage
		}
		res, err := demo.Run(ctx, demo.Options{Dir: o.dir, Stdout: stdout, Logger: log})
		if err != nil {
			fmt.Fprintf(stderr, "ticketd demo: %v\n", err)
			return exitFailed
		}
		for _, t := range res.Tickets {
			if t.State != "done" {
				fmt.Fprintf(stderr, "ticketd demo: ticket %d ended %s, not done: %s\n", t.ID, t.State, t.Reason)
				return exitFailed
			}
		}
		return exitOK
	default: // once, run
		if _, err := os.Stat(o.config); err != nil {
			fmt.Fprintf(stderr, "ticketd %s: read config: %v\ntry: ticketd %s --config FILE (start from config.yaml in the repository)\n", cmd, err, cmd)
			return exitUsage
		}
		cfg, err := config.Load(o.config)
		if err != nil {
			fmt.Fprintf(stderr, "ticketd %s: %v\n", cmd, err)
			return exitFailed
		}
		log, err := newLogger(stderr, or(o.logFormat, cfg.Log.Format), or(o.logLevel, cfg.Log.Level))
		if err != nil {
			fmt.Fprintf(stderr, "ticketd %s: %v\n", cmd, err)
			return exitUsage
		}
		if cmd == "check" {
			return check(ctx, cfg, log, stdout, stderr)
		}
		return serve(ctx, cmd, cfg, log, stdout, stderr)
	}
}

// serve runs once or run with a loaded configuration.
func serve(ctx context.Context, cmd string, cfg config.Config, log *slog.Logger, stdout, stderr io.Writer) int {
	unlock, err := daemon.LockInstance(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "ticketd %s: refusing to start: %v\n", cmd, err)
		return exitFailed
	}
	defer unlock()
	defer watchHangup(log)()
	if _, err := daemon.CheckSandbox(ctx, cfg); err != nil {
		fmt.Fprintf(stderr, "ticketd %s: refusing to start: %v\n", cmd, err)
		return exitFailed
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
	unlockDB, err := daemon.LockDatabase(cfg)
	if err != nil {
		st.Close()
		fmt.Fprintf(stderr, "ticketd %s: refusing to start: %v\n", cmd, err)
		return exitFailed
	}
	defer func() { st.Close(); unlockDB() }() // the lock's descriptor closes after SQLite's
	d := &daemon.Daemon{Config: cfg, Store: st, Logger: log}
	// Under the instance lock, this node's (or, on a SQLite file, every) night left open is
	// a dead process's: close it, and see whose the crash was.
	if _, err := d.SettleDeadNights(ctx, !cfg.Store.Shared()); err != nil {
		log.Warn("close the nights of a process that died", "err", err)
	}
	if err := startExtras(ctx, d, log); err != nil {
		fmt.Fprintf(stderr, "ticketd %s: %v\n", cmd, err)
		return exitFailed
	}
	if cmd == "once" {
		rep, err := d.RunNight(ctx, "once")
		return onceSummary(ctx, st, rep, err, stdout, stderr)
	}
	if err := d.Preflight(ctx); err != nil {
		recordFailedStart(ctx, st, err, log)
		fmt.Fprintf(stderr, "ticketd run: %v\n", err)
		return exitFailed
	}
	if err := schedule(ctx, d, log); err != nil {
		fmt.Fprintf(stderr, "ticketd run: %v\n", err)
		return exitFailed
	}
	return exitOK
}

// nightCounts says how many of the night's tickets ended done and escalated, as its run
// records them when it ends; where that record cannot be read (the database went away) or
// was never written (its end could not be recorded), it says so rather than print zeros
// for fixes that may well have been done.
func nightCounts(ctx context.Context, st *store.Store, id int64) string {
	runs, err := st.Runs(context.WithoutCancel(ctx), 0)
	if err != nil {
		return fmt.Sprintf("done and escalated unknown: the ticket database could not be read: %v", err)
	}
	for _, r := range runs {
		if r.ID != id {
			continue
		}
		if r.EndedAt.IsZero() {
			return "done and escalated unknown: the night's end is not recorded in the ticket database"
		}
		return fmt.Sprintf("%d done, %d escalated", r.Done, r.Escalated)
	}
	return fmt.Sprintf("done and escalated unknown: the ticket database holds no night %d", id)
}

// onceSummary prints how the night of `ticketd once` went (stdout: the figures; stderr: why
// it is not ok) and returns its exit code.
func onceSummary(ctx context.Context, st *store.Store, rep daemon.NightReport, err error, stdout, stderr io.Writer) int {
	if rep.RunID == 0 {
		fmt.Fprintf(stderr, "ticketd once: %v\n", err)
		return exitFailed
	}
	fmt.Fprintf(stdout, "night %d %s: %d ticket(s) worked (%s), %s, %s\n", rep.RunID, rep.Outcome,
		len(rep.Touched), nightCounts(ctx, st, rep.RunID), model.FormatCost(rep.Dollars, rep.EstimatedDollars > 0, rep.CostUnknown),
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
	case rep.Outcome == store.OutcomeFailed && err == nil:
		// It started and then failed: the machine (its database went away) kept it from
		// its tickets, which are not charged.
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
		return slog.New(tint.NewTextHandler(w, &tint.Options{Level: lv, TimeFormat: time.TimeOnly, NoColor: !isTerminal(w)})), nil
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
