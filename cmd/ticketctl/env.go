package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/store"
)

// command is one ticketctl subcommand.
type command struct {
	name  string
	args  string // synopsis after the name
	short string
	long  string // extra help text, may be empty
	run   func(e *env, args []string) error
}

// commands in the order help lists them; filled in init because help refers back to it.
var commands []command

func init() {
	commands = []command{
		{name: "list", args: "[--state S[,S]] [--repo R] [--since 24h|2006-01-02] [--limit N]", short: "list tickets, newest first",
			long: "States: queued, running, parked, needs_info, needs_budget, duplicate, done, escalated, cancelled. --limit 0 lists all.", run: cmdList},
		{name: "show", args: "ID", short: "a ticket with its events, model calls, cost and per-role figures", run: cmdShow},
		{name: "report", args: "ID [FILE]", short: "print a file of the ticket's results, as the database keeps it (default report.md)",
			long: "FILE is a path inside the results folder, as show lists them: patch, attempt-1/stop-reason, ...", run: cmdReport},
		{name: "logs", args: "ID [--attempt N]", short: "events, model calls and tool calls of a ticket, in time order", run: cmdLogs},
		{name: "requeue", args: "ID [--note TEXT] [--done] [--force]", short: "put a ticket back in the queue: attempts number on with a fresh budget; history is kept",
			long: "Attempt numbers never restart: the next attempt is numbered after the last, and earlier attempts'\nresults, records and branches stay. --note is read by the maker with the issue. A done ticket is\nrequeued only with --done: its fix branch is kept, and the new round works on a branch of its own.\nA running ticket is requeued only with --force: use it for a ticket stuck on a dead worker;\nthe old worker's writes are then refused.", run: cmdRequeue},
		{name: "cancel", args: "ID [--reason TEXT]", short: "cancel a queued ticket, or ask a running one's worker to stop", run: cmdCancel},
		{name: "add", args: "--repo R --title T [--body B | --body-file F] [--label L]... [--priority N] [--max-attempts N]", short: "enqueue a ticket by hand",
			long: "--body-file - reads the body from standard input.", run: cmdAdd},
		{name: "answer", args: "ID TEXT | --file F", short: "answer the question a needs_info ticket's maker asked; the ticket goes back in the queue",
			long: "The next attempt's maker reads the question and this answer (the triage is kept).\nTEXT may be several words; --file - reads it from standard input.", run: cmdAnswer},
		{name: "budget", args: "ID +DOLLARS", short: "give a needs_budget ticket more money per attempt (e.g. +2.50); it goes back in the queue",
			long: "A ticket whose attempt its dollars stopped (spent, or projected to be by its next model call)\nwaits as needs_budget with its partial work on a branch; this adds DOLLARS to budget.max_dollars\nfor each of its later attempts.", run: cmdBudget},
		{name: "unlink", args: "ID", short: "put a ticket waiting as a duplicate back in the queue, to be worked on its own",
			long: "A ticket that reports the same failure as an earlier one of its repository waits as its duplicate\n(ticketctl list shows \"duplicate of #N\") and is closed with that ticket's fix. Unlinked, it is\nworked on its own and never linked again.", run: cmdUnlink},
		{name: "revise", args: "ID TEXT", short: "ask a round of a done ticket's fix: the next night goes on from its branch's head with TEXT (gated as before)",
			long: "The maker reads TEXT as a note with the issue and changes the published fix further; the round pushes one\ncommit on the same branch. review.max_rounds (--config, default 3) bounds the rounds; past it the\nticket escalates for a human.", run: cmdRevise},
		{name: "accept", args: "ID", short: "publish an escalated ticket's kept change as its fix (branch, patch, report, push, draft PR), as accepted by you",
			long: "For a change the gate refused by rule that a human judges right (a fix that changes behaviour a test\npins, a fixture the fix needs). Needs --config. Run again after an interruption, it finishes the\npublication without repeating any of it.", run: cmdAccept},
		{name: "escalations", args: "[--repo R] [--since 24h] [--limit N]", short: "what needs a human: escalated tickets with their reason and report folder, and questions waiting for an answer", run: cmdEscalations},
		{name: "intake", args: "", short: "the issue files intake skipped at its latest scan, and why (escalations lists them too)", run: cmdIntake},
		{name: "envs", args: "", short: "the repositories' environments (repos.<name>.setup): latest setup per node, a failed recipe's output, and with --config those on disk", run: cmdEnvs},
		{name: "stats", args: "[--run ID] [--nights N]", short: "the last night's outcome, then counts, success rate, cost, durations, cache figures; per night and overall",
			long: "The nodes row lists the machines of each night; * marks one that did not finish it (still running, or it died).", run: cmdStats},
		{name: "nights", args: "[--limit N]", short: "the nights, newest first: trigger, start, end, outcome (ok, partial, stopped, failed), why, tickets, cost", run: cmdNights},
		{name: "gc", args: "--older-than 720h [--branches]", short: "prune old finished tickets' bulky columns, kept-attempt branches, results/ and unused environments (history and costs kept)",
			long: "Branches, results/ and environments need --config (the repositories, the output folder, the workspace).\nFix branches (ticketd/<id>-<slug> of done tickets) are deleted only with --branches. An environment\nis deleted when no night used it within the age, except each repository's latest one.", run: cmdGC},
		{name: "migrate", args: "--to-url-env VAR", short: "copy this SQLite store, history included, into the empty PostgreSQL database $VAR names",
			long: "Stop every ticketd using the SQLite file first. The target must be empty; it is left as it was when the copy fails.", run: cmdMigrate},
		{name: "serve", args: "[--addr 127.0.0.1:8377] [--read-only]", short: "serve the status page, /metrics and /healthz from the database (no daemon needed)", run: cmdServe},
		{name: "help", args: "[COMMAND]", short: "this help, or a command's", run: cmdHelp},
	}
}

func findCommand(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// globals are the flags every command accepts, before or after its name.
type globals struct {
	db, config string
	json       bool
}

// env is one invocation: where output goes, the global flags, and how to reach the database.
type env struct {
	ctx            context.Context
	stdout, stderr io.Writer
	// jsonOut is stdout for --json documents; nil means stdout.
	jsonOut   io.Writer
	stdin     io.Reader
	lookupEnv func(string) (string, bool)
	g         globals
	cmd       string
	cfg       *config.Config // loaded when --config was used
}

func (e *env) dispatch(args []string) error {
	fs := e.flagSet("")
	rest, err := e.parseUntilCommand(fs, args)
	if err != nil {
		return err
	}
	if len(rest) == 0 {
		e.usage(e.stderr)
		return usagef("ticketctl help", "no command given")
	}
	c, ok := findCommand(rest[0])
	if !ok {
		return usagef("ticketctl help", "unknown command %q", rest[0])
	}
	e.cmd = c.name
	return c.run(e, rest[1:])
}

// parseUntilCommand parses global flags up to the command name.
func (e *env) parseUntilCommand(fs *flag.FlagSet, args []string) ([]string, error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			e.usage(e.stdout)
			return nil, errHelpShown
		}
		return nil, usagef("ticketctl help", "%v", err)
	}
	return fs.Args(), nil
}

// flagSet returns a FlagSet for command name with the global flags registered on it. The
// globals are bound with Func so registering them on several sets never resets a value.
func (e *env) flagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Func("db", "database `PATH` (wins over --config and TICKETD_DB)", func(v string) error { e.g.db = v; return nil })
	fs.Func("config", "ticketd config `FILE`: its store names the database", func(v string) error { e.g.config = v; return nil })
	fs.BoolFunc("json", "print the result as JSON", func(v string) error {
		b, err := strconv.ParseBool(v)
		e.g.json = b
		return err
	})
	return fs
}

// parse parses a command's flags wherever they stand among its positional arguments, and
// checks the number of positionals is between lo and hi (hi < 0: no limit).
func (e *env) parse(fs *flag.FlagSet, args []string, lo, hi int) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				e.commandUsage(e.stdout, fs)
				return nil, errHelpShown
			}
			return nil, usagef("ticketctl help "+e.cmd, "%s: %v", e.cmd, err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
	if len(pos) < lo || (hi >= 0 && len(pos) > hi) {
		c, _ := findCommand(e.cmd)
		want := "no arguments"
		if hi != 0 {
			want = c.args
		}
		return nil, usagef("ticketctl help "+e.cmd, "%s: got %d argument(s) %q, want %s", e.cmd, len(pos), pos, want)
	}
	return pos, nil
}

// parseID reads a ticket id argument.
func (e *env) parseID(v string) (int64, error) {
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id <= 0 {
		return 0, usagef("ticketctl list", "%s: ticket id %q is not a positive number; list shows the ids", e.cmd, v)
	}
	return id, nil
}

// dbPath finds the database: --db (a SQLite file or a postgres:// URL), else --config's
// store (path, url or the URL in url_env), else $TICKETD_DB. A --config is loaded even when
// --db names the database: add checks repositories against it.
func (e *env) dbPath() (path, from string, err error) {
	if e.g.config != "" && e.cfg == nil {
		cfg, err := config.Load(e.g.config)
		if err != nil {
			return "", "", fmt.Errorf("load --config %s: %w", e.g.config, err)
		}
		e.cfg = &cfg
	}
	switch {
	case e.g.db != "":
		return e.g.db, "--db", nil
	case e.cfg != nil:
		loc, err := e.cfg.Store.Location()
		if err != nil {
			return "", "", fmt.Errorf("--config %s: %w", e.g.config, err)
		}
		switch {
		case e.cfg.Store.URLEnv != "":
			return loc, "store.url_env " + e.cfg.Store.URLEnv + " in " + e.g.config, nil
		case e.cfg.Store.URL != "":
			return loc, "store.url in " + e.g.config, nil
		}
		return loc, "store.path in " + e.g.config, nil
	}
	if v, ok := e.lookupEnv("TICKETD_DB"); ok && v != "" {
		return v, "TICKETD_DB", nil
	}
	return "", "", usagef("ticketctl --db ./ticketd.db "+e.cmd, "no database named: pass --db PATH or --config FILE, or set TICKETD_DB")
}

// open opens the existing ticketd database. It never creates a SQLite file (a typo must not
// yield an empty queue), and never writes to a file that is not one: an empty file, another
// program's SQLite database or any other file is refused before anything is written. A
// PostgreSQL URL names a database the server already has.
func (e *env) open() (*store.Store, error) {
	path, from, err := e.dbPath()
	if err != nil {
		return nil, err
	}
	var opts store.Options
	if e.cfg != nil {
		opts.Synchronous = e.cfg.Store.Synchronous
		opts.Node = e.cfg.Node
	}
	opts.OnRetry = e.sayWaiting(path)
	if store.IsURL(path) {
		s, err := store.OpenURL(e.ctx, path, opts)
		if err != nil {
			return nil, fmt.Errorf("open database (from %s): %w", from, err)
		}
		return s, nil
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("database %s (from %s) does not exist: check the path, or run `ticketd once` to create it", path, from)
	case err != nil:
		return nil, fmt.Errorf("database %s (from %s): %w", path, from, err)
	case fi.IsDir():
		return nil, fmt.Errorf("database %s (from %s) is a directory: name the ticketd.db file inside it", path, from)
	}
	if _, err := store.Inspect(e.ctx, path); errors.Is(err, store.ErrNotTicketd) {
		return nil, fmt.Errorf("database %s (from %s): %w; ticketctl writes nothing to it: name the file ticketd's store.path points at", path, from, err)
	} else if err != nil {
		return nil, fmt.Errorf("database %s (from %s): %w", path, from, err)
	}
	s, err := store.Open(e.ctx, path, opts)
	if err != nil {
		return nil, fmt.Errorf("open database %s (from %s): %w", path, from, err)
	}
	return s, nil
}

// withStore opens the database, runs fn and closes it, keeping fn's error first.
// withTicket parses the one ticket id the command takes, opens the store and hands over the
// ticket as it stands, or an error that names an unknown id (exit 3).
func (e *env) withTicket(fs *flag.FlagSet, args []string, fn func(s *store.Store, t store.Ticket) error) error {
	pos, err := e.parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	id, err := e.parseID(pos[0])
	if err != nil {
		return err
	}
	return e.withStore(func(s *store.Store) error {
		t, err := s.Get(e.ctx, id)
		if err != nil {
			return notFoundHint(err)
		}
		return fn(s, t)
	})
}

func (e *env) withStore(fn func(s *store.Store) error) error {
	s, err := e.open()
	if err != nil {
		return err
	}
	err = fn(s)
	if cerr := s.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("close database: %w", cerr)
	}
	return err
}

// actor names who did an operator action, for the ticket's events.
func (e *env) actor() string {
	name := ""
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	if v, ok := e.lookupEnv("USER"); ok && v != "" {
		name = v
	}
	if name == "" {
		return "ticketctl"
	}
	return "ticketctl:" + name
}

// printJSON writes v as indented JSON with a trailing newline.
func (e *env) printJSON(v any) error {
	enc := json.NewEncoder(cmp.Or[io.Writer](e.jsonOut, e.stdout))
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("%s: write JSON: %w", e.cmd, err)
	}
	return nil
}

// table returns an aligned table writer on stdout; call Flush when done.
func (e *env) table() *tabwriter.Writer { return newTable(e.stdout) }

// newTable returns an aligned table writer on w; call Flush when done.
func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }

func (e *env) usage(w io.Writer) {
	fmt.Fprintf(w, "ticketctl inspects and steers ticketd's queue.\n\nUsage: ticketctl [--db PATH | --config FILE] [--json] COMMAND [ARGS]\n\nCommands:\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range commands {
		fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.short)
	}
	tw.Flush()
	fmt.Fprintf(w, `
Global flags (before or after the command):
  --db PATH      the database file
  --config FILE  a ticketd config; its store.path names the database
  --json         print the result as JSON (stable field names; errors stay on stderr)
The database is --db, else --config's store.path, else $TICKETD_DB. It must exist.

%s

Run 'ticketctl help COMMAND' for a command's flags.
`, exitHelp)
}

// commandUsage prints the help of the command fs belongs to, with its own flags.
func (e *env) commandUsage(w io.Writer, fs *flag.FlagSet) {
	c, ok := findCommand(fs.Name())
	if !ok {
		e.usage(w)
		return
	}
	fmt.Fprintf(w, "Usage: ticketctl %s %s\n\n%s.\n", c.name, c.args, upperFirst(c.short))
	if c.long != "" {
		fmt.Fprintf(w, "%s\n", c.long)
	}
	global := map[string]bool{"db": true, "config": true, "json": true}
	var own []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		if !global[f.Name] {
			own = append(own, f)
		}
	})
	if len(own) > 0 {
		fmt.Fprintf(w, "\nFlags:\n")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, f := range own {
			name, usage := flag.UnquoteUsage(f)
			def := ""
			if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "false" && f.DefValue != "[]" {
				def = " (default " + f.DefValue + ")"
			}
			fmt.Fprintf(tw, "  --%s %s\t%s%s\n", f.Name, name, usage, def)
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "\nGlobal flags: --db PATH, --config FILE, --json (see 'ticketctl help').\n")
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func cmdHelp(e *env, args []string) error {
	pos, err := e.parse(e.flagSet("help"), args, 0, 1)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		e.usage(e.stdout)
		return nil
	}
	c, ok := findCommand(pos[0])
	if !ok {
		return usagef("ticketctl help", "help: unknown command %q", pos[0])
	}
	if c.name == "help" {
		e.usage(e.stdout)
		return nil
	}
	// A command's help lives with its flags: run it with -h.
	e.cmd = c.name
	if err := c.run(e, []string{"-h"}); !errors.Is(err, errHelpShown) {
		return err
	}
	return nil
}

// sayWaiting returns the store's OnRetry for ticketctl: the first time a write meets a
// database another process holds, it says on stderr what it waits for, and for how long at
// most, instead of hanging without a word.
func (e *env) sayWaiting(path string) func(op string, try int, err error) {
	var once sync.Once
	return func(op string, try int, err error) {
		once.Do(func() {
			if store.IsURL(path) {
				// PostgreSQL: a server away (a restart, a failover) or a busy write.
				why, _, _ := strings.Cut(fmt.Sprint(err), "\n")
				fmt.Fprintf(e.stderr, "ticketctl: %s: the database did not take it (%s); retrying while it is away, for up to 30s (Ctrl-C stops: nothing is written)\n", op, why)
				return
			}
			holder := "another process"
			if data, rerr := os.ReadFile(path + ".lock"); rerr == nil {
				if pid := strings.TrimSpace(string(data)); pid != "" {
					holder = "another process (ticketd pid " + pid + " holds this database)"
				}
			}
			fmt.Fprintf(e.stderr, "ticketctl: %s: waiting for the database's write lock, which %s holds; retrying for up to about a minute (Ctrl-C stops: nothing is written)\n", op, holder)
		})
	}
}
