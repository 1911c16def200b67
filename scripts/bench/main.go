// Command bench is ticketd's benchmark: it runs the frozen case set (scripts/bench/cases)
// through real nights and judges every produced branch with the case's hidden tests, never
// with the pipeline's own verdict.
//
// Each round starts from nothing: a fresh temporary folder with a fresh database, every
// case materialized fresh at its bug as its own git repository, the issue files written
// anew, and (offline) a fresh scripted model. One JSON line per round is appended to
// scripts/bench/results.local.jsonl (untracked), or with --record to the shared record
// scripts/bench/results.jsonl, which is never rewritten; the median over the rounds is
// printed.
//
//	go run ./scripts/bench                          # offline, 3 rounds × 30 cases
//	go run ./scripts/bench --workers 1 --latency 2s # vary one knob
//	go run ./scripts/bench --scenario realistic     # every maker errs as real models do
//	go run ./scripts/bench --scenario tamper        # every maker cheats instead of fixing: must ship 0
//	go run ./scripts/bench --config real.yaml       # measure the models of a real endpoint
//	go run ./scripts/bench --record                 # figures for docs/bench.md: append to results.jsonl
//	go run ./scripts/bench --compare                # the last two result lines side by side
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
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ticketd/ticketd/pipeline"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the bench could not run (a case, the config, git, pytest)
	exitUsage = 2
)

// Scenario names for --scenario besides the scripted behaviours themselves.
const (
	scenarioByDifficulty = "by-difficulty"
	scenarioPlain        = "plain"
	scenarioRealistic    = "realistic"
)

// scenarios are the --scenario values. by-difficulty (the default mix) uses each case's own
// `scripted` behaviour from case.yaml, and the cases that solve or fix wrongly first also
// make the mistakes real models make (scriptedmodel.Realism); plain is that mix without
// the mistakes; realistic makes every case's maker err so, loop and never cases included;
// tamper makes every case's maker cheat instead of fixing, one move per case in turn
// (scriptedmodel.TamperMoves); the others apply one scripted maker behaviour to every case.
var scenarios = []string{scenarioByDifficulty, scenarioPlain, scenarioRealistic, "solve", "wrong_then_right", "late_fix", "loop", "never", "malformed_args", "tamper"}

// options are the parsed flags.
type options struct {
	casesDir     string
	rounds       int
	workers      int // 0: the config's night.workers, or 3
	configFile   string
	scenario     string
	latency      time.Duration
	jsonOut      bool
	out          string
	record       bool // --record: out is the shared scripts/bench/results.jsonl
	compare      bool
	compareLines string // "A,B" (1-based); empty: the last two lines
	filter       *regexp.Regexp
	seed         int64
	nightTimeout time.Duration
	keep         bool
	verbose      bool
	large        bool // run the generated large-repository case instead of the case set (large.go)
	largeScale   int  // --large-scale: the large repository's size as a multiple of the default
	// reviewers are the checker's angles (review.reviewers), e.g. correctness,security;
	// empty keeps the configuration's (correctness alone by default).
	reviewers []string
	// agentsMD commits an AGENTS.md to every repository of the round (agents.go).
	agentsMD bool
	// waits are --block-profile and --mutex-profile (waitprofile.go).
	waits waitProfiles
}

// compareFlag is --compare, which may stand alone or carry "A,B".
type compareFlag struct {
	set   bool
	lines string
}

func (c *compareFlag) String() string   { return c.lines }
func (c *compareFlag) IsBoolFlag() bool { return true }
func (c *compareFlag) Set(s string) error {
	switch s {
	case "true":
		c.set = true
	case "false":
		c.set = false
	default:
		c.set, c.lines = true, s
	}
	return nil
}

var lineRangeRe = regexp.MustCompile(`^\d+,\d+$`)

// The result files under scripts/bench: a run appends to the untracked local one, so the
// bench command of docs/bench.md leaves the tree clean; --record appends to the shared one in git.
const (
	localResults  = "results.local.jsonl"
	sharedResults = "results.jsonl"
)

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		o      options
		cmp    compareFlag
		filter string
	)
	fs.StringVar(&o.casesDir, "cases", "", "folder of case folders (default: scripts/bench/cases of this repository)")
	fs.IntVar(&o.rounds, "rounds", 3, "rounds to run; the median is reported")
	fs.IntVar(&o.workers, "workers", 0, "concurrent workers per night (default: the config's night.workers, else 3)")
	fs.StringVar(&o.configFile, "config", "", "ticketd config whose models, night and budget knobs are used; a non-loopback endpoint means a real model")
	fs.StringVar(&o.scenario, "scenario", scenarioByDifficulty, "scripted model scenario: "+strings.Join(scenarios, ", "))
	fs.DurationVar(&o.latency, "latency", 0, "scripted model's simulated latency per call, e.g. 2s")
	fs.BoolVar(&o.jsonOut, "json", false, "print the summary as one JSON object")
	fs.StringVar(&o.out, "out", "", "append one JSON line per round to this file (default: scripts/bench/"+localResults+", untracked)")
	fs.BoolVar(&o.record, "record", false, "append to scripts/bench/"+sharedResults+", the shared record in git, instead (for figures you publish)")
	fs.Var(&cmp, "compare", "print two result lines of --out side by side: the last two, or --compare A,B (1-based)")
	fs.StringVar(&filter, "filter", "", "run only the cases whose name matches this regular expression")
	fs.Int64Var(&o.seed, "seed", 1, "seed of the scripted model's random decisions")
	fs.DurationVar(&o.nightTimeout, "night-timeout", 30*time.Minute, "stop a night that runs longer than this")
	fs.BoolVar(&o.keep, "keep", false, "keep each round's folder (database, repositories, results) and print where")
	fs.BoolVar(&o.verbose, "verbose", false, "log the daemon at info level (default: warnings only)")
	var reviewers string
	fs.StringVar(&reviewers, "reviewers", "", "the checker's review angles, comma separated: correctness[,security][,performance] (security reviews what touches paths, auth, shell, SQL or deserialisation; performance every change)")
	fs.BoolVar(&o.agentsMD, "agents-md", false, "commit an AGENTS.md (repository instructions for agents) to every repository of the round")
	fs.BoolVar(&o.large, "large", false, "run the generated large-repository case (~5,000 files, a few hundred tests): tier timings, baseline reuse, peak RSS")
	fs.StringVar(&o.waits.block, "block-profile", "", "write where goroutines blocked (channels, locks) over the whole run to this file (go tool pprof -top FILE)")
	fs.StringVar(&o.waits.mutex, "mutex-profile", "", "write the contended mutexes over the whole run to this file (go tool pprof -top FILE)")
	fs.IntVar(&o.largeScale, "large-scale", 1, "with --large: the repository's packages, docs and tests times N (2: ~10,000 files)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: go run ./scripts/bench [flags]\n\nRuns the frozen bug cases through real nights and judges each branch with hidden tests.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(joinCompare(args)); err != nil {
		return o, err
	}
	if rest := fs.Args(); len(rest) > 0 {
		return o, fmt.Errorf("unexpected arguments %q; flags only, e.g. go run ./scripts/bench --rounds 1", rest)
	}
	o.compare, o.compareLines = cmp.set, cmp.lines
	if o.record && o.out != "" {
		return o, fmt.Errorf("--record and --out %s: --record appends to scripts/bench/%s; give one of them", o.out, sharedResults)
	}
	if o.out == "" {
		o.out = defaultOut(o.record)
	}
	if err := o.check(); err != nil {
		return o, err
	}
	var err error
	if o.reviewers, err = parseReviewers(reviewers); err != nil {
		return o, err
	}
	if filter != "" {
		re, err := regexp.Compile(filter)
		if err != nil {
			return o, fmt.Errorf("--filter %q: %w", filter, err)
		}
		o.filter = re
	}
	return o, nil
}

// defaultOut is the results file when --out is not given: the local one, or with --record
// the shared one, under scripts/bench of the repository the bench runs in.
func defaultOut(record bool) string {
	name := localResults
	if record {
		name = sharedResults
	}
	if wd, err := os.Getwd(); err == nil {
		if root := moduleRoot(wd); root != "" {
			return filepath.Join(root, "scripts", "bench", name)
		}
	}
	return name
}

// check refuses flag values out of range, naming the flag and what it wants.
func (o *options) check() error {
	if o.compareLines != "" && !lineRangeRe.MatchString(o.compareLines) {
		return fmt.Errorf("--compare %q: want two 1-based line numbers of %s, e.g. --compare 3,5", o.compareLines, o.out)
	}
	if o.rounds < 1 {
		return fmt.Errorf("--rounds %d: want at least 1", o.rounds)
	}
	if o.workers < 0 || o.workers > 64 {
		return fmt.Errorf("--workers %d: want 1..64", o.workers)
	}
	if o.latency < 0 {
		return fmt.Errorf("--latency %s: must not be negative", o.latency)
	}
	if !validScenario(o.scenario) {
		return fmt.Errorf("--scenario %q: want one of %s", o.scenario, strings.Join(scenarios, ", "))
	}
	return nil
}

// parseReviewers reads --reviewers, a comma-separated list of the checker's angles, each
// one the pipeline knows.
func parseReviewers(list string) ([]string, error) {
	var out []string
	for _, a := range strings.Split(list, ",") {
		if a = strings.TrimSpace(a); a == "" {
			continue
		}
		if _, err := pipeline.NewReviewer(a, nil, nil); err != nil {
			return nil, fmt.Errorf("--reviewers: %w", err)
		}
		out = append(out, a)
	}
	return out, nil
}

// joinCompare turns "--compare A,B" into "--compare=A,B": --compare may stand alone, so
// the flag package would otherwise stop at A,B as the first positional argument.
func joinCompare(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if (a == "--compare" || a == "-compare") && i+1 < len(args) && lineRangeRe.MatchString(args[i+1]) {
			out = append(out, a+"="+args[i+1])
			i++
			continue
		}
		out = append(out, a)
	}
	return out
}

func validScenario(s string) bool {
	for _, v := range scenarios {
		if s == v {
			return true
		}
	}
	return false
}

// run is the whole command; tests call it in-process.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return exitUsage
	}
	if o.compare {
		a, b, err := compareLineNumbers(o.out, o.compareLines)
		if err == nil {
			err = printCompare(stdout, o.out, a, b, o.jsonOut)
		}
		if err != nil {
			fmt.Fprintf(stderr, "bench: %v\n", err)
			return exitError
		}
		return exitOK
	}
	level := slog.LevelWarn
	if o.verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	o.waits.start()
	defer func() {
		if err := o.waits.stop(); err != nil {
			fmt.Fprintf(stderr, "bench: %v\n", err)
		}
	}()
	if o.large {
		return runLarge(ctx, o, stdout, stderr, log)
	}
	sum, err := bench(ctx, o, stderr, log)
	if err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return exitError
	}
	if o.jsonOut {
		err = writeSummaryJSON(stdout, sum)
	} else {
		err = printSummary(stdout, sum)
	}
	if err != nil {
		fmt.Fprintf(stderr, "bench: print summary: %v\n", err)
		return exitError
	}
	return exitOK
}

// compareLineNumbers turns --compare's value into two 1-based line numbers of out.
func compareLineNumbers(out, spec string) (int, int, error) {
	if spec == "" {
		n, err := countLines(out)
		if err != nil {
			return 0, 0, err
		}
		if n < 2 {
			return 0, 0, fmt.Errorf("compare: %s holds %d result line(s); run the bench twice first", out, n)
		}
		return n - 1, n, nil
	}
	as, bs, _ := strings.Cut(spec, ",")
	a, _ := strconv.Atoi(as)
	b, _ := strconv.Atoi(bs)
	if a < 1 || b < 1 {
		return 0, 0, fmt.Errorf("compare %q: line numbers start at 1", spec)
	}
	return a, b, nil
}

// moduleRoot walks up from dir to the folder holding go.mod ("" when there is none).
func moduleRoot(dir string) string {
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}
