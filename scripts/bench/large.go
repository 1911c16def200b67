package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ticketd/ticketd/daemon"
	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/scripts/bench/caseset"
	"github.com/ticketd/ticketd/store"
)

// largeRepoName is the repository of the large case in the round's configuration.
const largeRepoName = "bigshop"

// largeSpec shapes the synthetic large repository. The default is a repository of about
// 5,000 files (modules in short import chains, docs and data files) with a few hundred
// tests, a dozen of them slow, like a real service's suite.
type largeSpec struct {
	Packages  int           // sub-packages of bigshop/
	Modules   int           // modules per sub-package
	Docs      int           // non-Python files (docs, data)
	TestFiles int           // ordinary test files, three tests each
	SlowTests int           // tests that sleep SlowSleep (integration-like)
	SlowSleep time.Duration // how long a slow test takes
	Bugs      int           // bugs per night; the case runs two nights at the same base
	AgentsMD  bool          // commit an AGENTS.md (--agents-md)
}

var defaultLarge = largeSpec{Packages: 50, Modules: 90, Docs: 420, TestFiles: 110, SlowTests: 20, SlowSleep: 500 * time.Millisecond, Bugs: 3}

// scaledLarge is spec with its packages, docs and tests n times as many (n < 1: 1).
func scaledLarge(spec largeSpec, n int) largeSpec {
	n = max(n, 1)
	spec.Packages *= n
	spec.Docs *= n
	spec.TestFiles *= n
	spec.SlowTests *= n
	return spec
}

// largeBug is one seeded bug: its issue, its fix and the test that shows it.
type largeBug struct {
	Title, Body, Patch string
	N                  int    // the bug's number: surcharge_N, tests/test_surcharge_N.py
	Module             string // path of the buggy module
	Test               string // pytest node id failing at the base, passing once fixed
}

// largeRepo is a generated repository.
type largeRepo struct {
	Dir   string
	Files int // files committed
	Tests int // test functions
	Bugs  []largeBug
}

// generateLarge writes the large repository into dir as a git repository on branch main,
// with 2*spec.Bugs bugs (each a module off by one, with a failing test and an issue).
func generateLarge(ctx context.Context, dir string, spec largeSpec) (largeRepo, error) {
	r := largeRepo{Dir: dir}
	files := largeBaseFiles(spec)
	r.addPackages(files, spec)
	r.addFillers(files, spec)
	if err := writeFiles(dir, files); err != nil {
		return r, fmt.Errorf("generate large repository: %w", err)
	}
	r.Files = len(files)
	if err := benchGit(ctx, dir, "init", "-q", "-b", "main"); err != nil {
		return r, err
	}
	// At 10,000 files the commit leaves more loose objects than gc.auto allows, and git
	// packs them in the background while the round clones the repository: off.
	if err := benchGit(ctx, dir, "config", "gc.auto", "0"); err != nil {
		return r, err
	}
	if err := benchGit(ctx, dir, "add", "-A"); err != nil {
		return r, err
	}
	if err := benchGit(ctx, dir, "commit", "-q", "-m", "bigshop at the bugs"); err != nil {
		return r, err
	}
	slices.SortFunc(r.Bugs, func(a, b largeBug) int { return a.N - b.N }) // night 1 gets bugs 0.., night 2 the rest
	for i := range r.Bugs {
		if err := r.Bugs[i].makePatch(ctx, dir); err != nil {
			return r, err
		}
	}
	return r, nil
}

// largeBaseFiles are the files of the large repository outside its packages and tests.
func largeBaseFiles(spec largeSpec) map[string]string {
	files := map[string]string{}
	files["bigshop/__init__.py"] = "\"\"\"bigshop: a synthetic shop back end for ticketd's large-repository bench.\"\"\"\n"
	files["bigshop/core/__init__.py"] = ""
	files["bigshop/core/util.py"] = "\"\"\"Shared helpers.\"\"\"\n\n\ndef clamp(cents, low=0, high=10_000_000):\n    return max(low, min(high, cents))\n\n\ndef add(cents, extra):\n    return clamp(cents + extra)\n"
	files["pyproject.toml"] = "[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n"
	if spec.AgentsMD {
		files["AGENTS.md"] = agentsMD
	}
	files["tests/__init__.py"] = ""
	return files
}

// addPackages adds spec.Packages packages of spec.Modules modules each, with 2*spec.Bugs
// bugs (each a module off by one, with a failing test and an issue).
func (r *largeRepo) addPackages(files map[string]string, spec largeSpec) {
	bugAt := map[[2]int]int{} // (package, module) → bug index
	for i := range 2 * spec.Bugs {
		// Bugs sit at the end of an import chain (module m%5 == 4), spread over packages.
		p := (i*7 + 3) % spec.Packages
		m := ((i*13)%(spec.Modules/5))*5 + 4
		bugAt[[2]int{p, m}] = i
	}
	for p := range spec.Packages {
		pkg := fmt.Sprintf("p%02d", p)
		files["bigshop/"+pkg+"/__init__.py"] = ""
		for m := range spec.Modules {
			src := largeModule(pkg, p, m)
			if i, ok := bugAt[[2]int{p, m}]; ok {
				src += r.addBug(files, pkg, p, m, i)
			}
			files[fmt.Sprintf("bigshop/%s/m%02d.py", pkg, m)] = src
		}
	}
}

// largeModule is module m of package p: four pricing rules, importing the module before it
// except at the head of a chain of five.
func largeModule(pkg string, p, m int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\"\"\"Pricing rules of bigshop.%s, part %d.\"\"\"\n\nfrom bigshop.core import util\n", pkg, m)
	if m%5 != 0 {
		fmt.Fprintf(&b, "from bigshop.%s import m%02d as previous\n", pkg, m-1)
	}
	for k := range 4 {
		fmt.Fprintf(&b, "\n\ndef rule_%d_%d_%d(cents):\n    \"\"\"Add rule %d of part %d: %d cents.\"\"\"\n    return util.add(cents, %d)\n", p, m, k, k, m, k+m, k+m)
	}
	return b.String()
}

// addBug adds bug i's test file and issue, and returns the buggy function to append to its
// module.
func (r *largeRepo) addBug(files map[string]string, pkg string, p, m, i int) string {
	path := fmt.Sprintf("bigshop/%s/m%02d.py", pkg, m)
	test := fmt.Sprintf("tests/test_surcharge_%d.py", i)
	files[test] = fmt.Sprintf("from bigshop.%s.m%02d import rule_%d_%d_0, surcharge_%d\n\n\ndef test_surcharge():\n    assert surcharge_%d(100) == %d\n\n\ndef test_rule():\n    assert rule_%d_%d_0(100) == %d\n",
		pkg, m, p, m, i, i, 102+i, p, m, 100+m)
	r.Bugs = append(r.Bugs, largeBug{
		Title: fmt.Sprintf("Surcharge %d adds one cent too many", i),
		Body:  fmt.Sprintf("An order of 1.00 with surcharge %d costs %d cents; the surcharge is %d cents, so it should cost %d.", i, 103+i, i+2, 102+i),
		N:     i, Module: path, Test: test + "::test_surcharge",
	})
	r.Tests += 2
	return fmt.Sprintf("\n\ndef surcharge_%d(cents):\n    \"\"\"Add the surcharge of %d cents.\"\"\"\n    return util.add(cents, %d)\n", i, i+2, i+3)
}

// addFillers adds what makes the repository large besides its modules: passing test files,
// slow tests, docs and data.
func (r *largeRepo) addFillers(files map[string]string, spec largeSpec) {
	for t := range spec.TestFiles {
		p, m := t%spec.Packages, (t*3)%spec.Modules
		var b strings.Builder
		fmt.Fprintf(&b, "from bigshop.p%02d.m%02d import rule_%d_%d_0, rule_%d_%d_1, rule_%d_%d_3\n", p, m, p, m, p, m, p, m)
		for k, fn := range []int{0, 1, 3} {
			fmt.Fprintf(&b, "\n\ndef test_rule_%d():\n    assert rule_%d_%d_%d(1000) == %d\n", k, p, m, fn, 1000+fn+m)
		}
		files[fmt.Sprintf("tests/test_p%02d_m%02d_%d.py", p, m, t)] = b.String()
		r.Tests += 3
	}
	for s := range spec.SlowTests {
		files[fmt.Sprintf("tests/test_slow_%d.py", s)] = fmt.Sprintf("import time\n\nfrom bigshop.core import util\n\n\ndef test_slow_path():\n    time.sleep(%.3f)  # an integration-like test\n    assert util.clamp(-5) == 0\n", spec.SlowSleep.Seconds())
		r.Tests++
	}
	for d := range spec.Docs {
		if d%2 == 0 {
			files[fmt.Sprintf("docs/rules/rule-%03d.md", d)] = fmt.Sprintf("# Rule %d\n\nHow rule %d prices an order, and why.\n", d, d)
		} else {
			files[fmt.Sprintf("data/prices/%03d.json", d)] = fmt.Sprintf("{\"id\": %d, \"cents\": %d}\n", d, 100+d)
		}
	}
}

// writeFiles writes files (slash-separated paths under dir) with their folders.
func writeFiles(dir string, files map[string]string) error {
	for path, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// makePatch sets the bug's Patch to the diff that fixes it, made in dir's working copy
// and undone again.
func (bug *largeBug) makePatch(ctx context.Context, dir string) error {
	full := filepath.Join(dir, filepath.FromSlash(bug.Module))
	data, err := os.ReadFile(full)
	if err != nil {
		return err
	}
	fixed := strings.Replace(string(data), fmt.Sprintf("util.add(cents, %d)\n", bug.N+3), fmt.Sprintf("util.add(cents, %d)\n", bug.N+2), 1)
	if err := os.WriteFile(full, []byte(fixed), 0o644); err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, "git", "-C", dir, "diff").Output()
	if err != nil {
		return fmt.Errorf("diff large repository fix %d: %w", bug.N, err)
	}
	if bug.Patch = string(out); bug.Patch == "" {
		return fmt.Errorf("large repository fix %d changed nothing in %s", bug.N, bug.Module)
	}
	return benchGit(ctx, dir, "checkout", "-q", ".")
}

func benchGit(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir, "-c", "user.name=bench", "-c", "user.email=bench@localhost"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git %s in %s: %w: %s", strings.Join(args, " "), dir, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// LargeFigures are the large case's measurements of one round.
type LargeFigures struct {
	Files     int `json:"files"`
	Tests     int `json:"tests"`
	SlowTests int `json:"slow_tests"`
	// FirstTierS and FullSuiteS time, side by side on the same worktree with one bug's fix
	// applied, the first tier of the checks (import scan plus the test files it selects) and
	// the whole suite; FirstTierShare is their ratio (the target: under 0.25).
	FirstTierS     float64 `json:"first_tier_s"`
	FirstTierFiles int     `json:"first_tier_files"`
	ImportScanS    float64 `json:"import_scan_s"`
	FullSuiteS     float64 `json:"full_suite_s"`
	FirstTierShare float64 `json:"first_tier_share"`
	Night1S        float64 `json:"night1_s"`
	Night2S        float64 `json:"night2_s"`
	BaselineS      float64 `json:"baseline_s"`       // the baseline check of night 1
	Night2Reused   bool    `json:"night2_reused"`    // night 2 reused it (no baseline check ran)
	Night2Computed int     `json:"night2_computed"`  // baselines night 2 computed (want 0)
	PeakRSSMB      float64 `json:"peak_rss_mb"`      // VmHWM of this process over night 1 (the daemon runs in it)
	PeakRSSReset   bool    `json:"peak_rss_reset"`   // the peak was reset before the night (else it covers the whole process)
	AttemptP50S    float64 `json:"attempt_p50_s"`    // claim to finish, per ticket, both nights
	CheckTimeP50S  float64 `json:"check_time_p50_s"` // submit and run_checks tool time per ticket
	OverheadP50S   float64 `json:"overhead_p50_s"`   // attempt time outside the checks
	ModelWaitP50S  float64 `json:"model_wait_p50_s"` // summed model call latency per ticket
	// OtherP50S is a ticket's time outside its checks and its model calls: git, sandbox
	// start, store writes and the pipeline's own work, not told apart.
	OtherP50S float64 `json:"other_p50_s"`
	// TimeP50 splits a ticket's time as the attempts' records measured it (timesplit.go):
	// model wait, checks (the check processes, baselines in the attempt included), git,
	// sandbox start, store writes, other.
	TimeP50 TimeSplit `json:"time_p50"`
	// Scale is --large-scale; SelectionMissed counts the fixes the night's whole suite
	// refused after the selected tests passed them (store.SelectionMissed), both nights;
	// NightSuiteS is the nights' whole-suite runs' time (outside the attempts).
	Scale           int     `json:"scale"`
	SelectionMissed int     `json:"selection_missed"`
	NightSuiteS     float64 `json:"night_suite_s"`
	SelectedFixes   int     `json:"selected_fixes"`    // fixes the selected tests passed (held for the whole suite)
	FirstTierCaught int     `json:"first_tier_caught"` // submits the first tier refused, both nights
	// LaterFirstRequestCachedShare is, per role, sum(cached)/sum(prompt) over the first
	// request of that role of every ticket but the first of the round (both nights): what
	// the shared prefix, repository part included, saves once it is in cache.
	LaterFirstRequestCachedShare map[string]float64 `json:"later_first_request_cached_share"`
	AgentsMD                     bool               `json:"agents_md,omitempty"` // the repository had an AGENTS.md
}

// largeRecord is the results.jsonl line of a large-case round: a Record (cases and totals
// over both nights) with the large figures beside it.
type largeRecord struct {
	Record
	Large LargeFigures `json:"large"`
}

// runLarge is --large: the large case instead of the case set, as an exit code.
func runLarge(ctx context.Context, o options, stdout, stderr io.Writer, log *slog.Logger) int {
	if err := benchLarge(ctx, o, stdout, stderr, log); err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return exitError
	}
	return exitOK
}

// benchLarge runs the large case for o.rounds rounds, appending one line per round.
func benchLarge(ctx context.Context, o options, stdout, stderr io.Writer, log *slog.Logger) error {
	base, err := baseConfig(o)
	if err != nil {
		return err
	}
	if usesRealEndpoint(o, base) {
		return fmt.Errorf("--large runs offline only: %s names a real endpoint", o.configFile)
	}
	pytest, err := caseset.PytestCommand(ctx)
	if err != nil {
		return err
	}
	wd, _ := os.Getwd()
	host, _ := os.Hostname()
	commit := gitCommit(ctx, moduleRoot(wd))
	var all []LargeFigures
	for n := 1; n <= o.rounds; n++ {
		rec := largeRecord{Record: Record{Round: n, Rounds: o.rounds, Scenario: "large", Endpoint: "scripted", Latency: o.latency.Seconds(),
			Seed: o.seed, Commit: commit, CasesDir: "generated:large",
			Machine: Machine{Hostname: host, GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, NumCPU: runtime.NumCPU(), GoVersion: runtime.Version(), Load1: load1()}}}
		spec := scaledLarge(defaultLarge, o.largeScale)
		spec.AgentsMD = o.agentsMD
		if err := runLargeRound(ctx, o, base, spec, pytest, &rec, stderr, log); err != nil {
			return fmt.Errorf("large round %d: %w", n, err)
		}
		line, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		if err := appendLine(o.out, line); err != nil {
			return err
		}
		f := rec.Large
		fmt.Fprintf(stderr, "large round %d/%d: %d files, %d tests; %d/%d solved (their bug's test on the branch), %d done by the pipeline; first tier %.2fs vs full suite %.2fs (%.0f%%); baseline %.1fs, night 2 reused %v; peak RSS %.1f MB\n",
			n, o.rounds, f.Files, f.Tests, rec.Totals.Solved, rec.Totals.Tickets, rec.Totals.PipelineDone, f.FirstTierS, f.FullSuiteS, 100*f.FirstTierShare, f.BaselineS, f.Night2Reused, f.PeakRSSMB)
		all = append(all, f)
	}
	if o.jsonOut {
		return json.NewEncoder(stdout).Encode(all)
	}
	pick := func(g func(LargeFigures) float64) float64 {
		vs := make([]float64, len(all))
		for i, f := range all {
			vs[i] = g(f)
		}
		return median(vs)
	}
	fmt.Fprintf(stdout, "large case (median of %d round(s), %d files, %d tests, %d slow)\n", len(all), all[0].Files, all[0].Tests, all[0].SlowTests)
	fmt.Fprintf(stdout, "  first tier             %.2fs (%d test file(s); import scan %.3fs)\n", pick(func(f LargeFigures) float64 { return f.FirstTierS }), all[0].FirstTierFiles, pick(func(f LargeFigures) float64 { return f.ImportScanS }))
	fmt.Fprintf(stdout, "  full suite             %.2fs\n", pick(func(f LargeFigures) float64 { return f.FullSuiteS }))
	fmt.Fprintf(stdout, "  first tier / full      %.1f%%\n", 100*pick(func(f LargeFigures) float64 { return f.FirstTierShare }))
	fmt.Fprintf(stdout, "  baseline (night 1)     %.2fs; night 2 reused it: %v\n", pick(func(f LargeFigures) float64 { return f.BaselineS }), all[len(all)-1].Night2Reused)
	fmt.Fprintf(stdout, "  nights                 %.1fs, %.1fs\n", pick(func(f LargeFigures) float64 { return f.Night1S }), pick(func(f LargeFigures) float64 { return f.Night2S }))
	fmt.Fprintf(stdout, "  attempt p50            %.2fs (checks %.2fs, overhead %.2fs)\n", pick(func(f LargeFigures) float64 { return f.AttemptP50S }), pick(func(f LargeFigures) float64 { return f.CheckTimeP50S }), pick(func(f LargeFigures) float64 { return f.OverheadP50S }))
	fmt.Fprintf(stdout, "  peak RSS (daemon)      %.1f MB\n", pick(func(f LargeFigures) float64 { return f.PeakRSSMB }))
	fmt.Fprintf(stdout, "  scale                  %d (--large-scale)\n", all[0].Scale)
	fmt.Fprintf(stdout, "  ticket time p50 by tool time  model wait %.2fs, checks (submit, run_checks) %.2fs, the rest %.2fs\n",
		pick(func(f LargeFigures) float64 { return f.ModelWaitP50S }), pick(func(f LargeFigures) float64 { return f.CheckTimeP50S }), pick(func(f LargeFigures) float64 { return f.OtherP50S }))
	fmt.Fprintf(stdout, "  ticket time p50, measured\n")
	for _, p := range splitParts {
		fmt.Fprintf(stdout, "    %-14s %.2fs\n", p.name, pick(func(f LargeFigures) float64 { return p.get(f.TimeP50) }))
	}
	fmt.Fprintf(stdout, "  fixes selected-passed  %.0f; night's whole suite %.2fs; selection missed %.0f\n",
		pick(func(f LargeFigures) float64 { return float64(f.SelectedFixes) }), pick(func(f LargeFigures) float64 { return f.NightSuiteS }), pick(func(f LargeFigures) float64 { return float64(f.SelectionMissed) }))
	for _, role := range sortedRoles(all[0].LaterFirstRequestCachedShare) {
		fmt.Fprintf(stdout, "  later tickets' first %s request cached  %.1f%%%s\n", role,
			100*pick(func(f LargeFigures) float64 { return f.LaterFirstRequestCachedShare[role] }), map[bool]string{true: " (with AGENTS.md)"}[o.agentsMD])
	}
	return nil
}

func appendLine(path string, line []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("append result to %s: %w", path, err)
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("append result to %s: %w", path, err)
	}
	return f.Close()
}

// runLargeRound generates the repository, measures the two tiers side by side, then runs two
// nights of spec.Bugs tickets each at the same base commit on one database.
func runLargeRound(ctx context.Context, o options, base config.Config, spec largeSpec, pytest []string, rec *largeRecord, stderr io.Writer, log *slog.Logger) error {
	root, err := os.MkdirTemp("", "ticketd-bench-large-")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Fprintf(stderr, "large round folder: %s\n", root)
	} else {
		defer os.RemoveAll(root)
	}
	repo, err := generateLarge(ctx, filepath.Join(root, "repos", largeRepoName), spec)
	if err != nil {
		return err
	}
	f := &rec.Large
	f.Files, f.Tests, f.SlowTests = repo.Files, repo.Tests, spec.SlowTests
	if err := measureTiers(ctx, repo, filepath.Join(root, "tiers"), f); err != nil {
		return err
	}

	url, stop, err := startLargeModel(o, repo)
	if err != nil {
		return err
	}
	defer stop()
	cfg, _, hash, err := roundConfig(base, root, []caseset.Case{{Name: largeRepoName}}, url)
	if err != nil {
		return err
	}
	rec.ConfigHash, rec.Workers = hash, cfg.Night.Workers
	rec.Timestamp = time.Now().UTC()

	f.AgentsMD = spec.AgentsMD
	ln := largeNights{o: o, cfg: cfg, root: root, pytest: pytest, log: log, rec: rec,
		firsts: map[string][]store.ModelCall{}}
	for night := 1; night <= 2; night++ {
		if err := ln.run(ctx, night, repo.Bugs[(night-1)*spec.Bugs:night*spec.Bugs]); err != nil {
			return err
		}
	}
	f.AttemptP50S, f.CheckTimeP50S = percentile(ln.attempts, 50), percentile(ln.checks, 50)
	over := make([]float64, len(ln.attempts))
	for i := range ln.attempts {
		over[i] = ln.attempts[i] - ln.checks[i]
	}
	f.OverheadP50S = percentile(over, 50)
	other := make([]float64, len(ln.attempts))
	for i := range ln.attempts {
		other[i] = max(ln.attempts[i]-ln.checks[i]-ln.models[i], 0)
	}
	f.ModelWaitP50S, f.OtherP50S = percentile(ln.models, 50), percentile(other, 50)
	f.Scale = max(o.largeScale, 1)
	f.LaterFirstRequestCachedShare = laterShares(ln.firsts)
	rec.Totals = totals(rec.Cases, time.Duration((f.Night1S+f.Night2S)*float64(time.Second)), nil)
	f.TimeP50 = rec.Totals.TimeP50
	return nil
}

// startLargeModel starts the scripted model (a test double) with one case per seeded bug,
// answering with the bug's fix as the scenario says.
func startLargeModel(o options, repo largeRepo) (string, func(), error) {
	var cases []scriptedmodel.Case
	for _, b := range repo.Bugs {
		cases = append(cases, scriptedmodel.Case{Match: b.Title, Patch: b.Patch, Behaviour: scriptedmodel.Behaviour(o.scenarioOr("solve"))})
	}
	srv, err := scriptedmodel.New(cases, scriptedmodel.Options{Seed: o.seed, Latency: o.latency})
	if err != nil {
		return "", nil, err
	}
	url, err := srv.Start()
	if err != nil {
		return "", nil, err
	}
	return url, func() { srv.Close() }, nil
}

// largeNights runs the large round's nights on one database and gathers what the round
// reports across them.
type largeNights struct {
	o      options
	cfg    config.Config
	root   string
	pytest []string
	log    *slog.Logger
	rec    *largeRecord

	attempts, checks, models []float64
	firsts                   map[string][]store.ModelCall // role -> each ticket's first request of it
}

// run writes the night's issues, runs the night and records its figures: night 1 its wall
// time, baseline and peak RSS; night 2 whether it reused the baseline.
func (ln *largeNights) run(ctx context.Context, night int, bugs []largeBug) error {
	f := &ln.rec.Large
	issues := filepath.Join(ln.root, "issues")
	if err := writeLargeIssues(issues, night, bugs); err != nil {
		return err
	}
	st, err := daemon.OpenStore(ctx, ln.cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	reset := resetPeakRSS()
	stopProfile := func() {}
	if night == 1 {
		stopProfile = startHeapProfile()
	}
	d := &daemon.Daemon{Config: ln.cfg, Store: st, Logger: ln.log}
	nightCtx, cancel := context.WithTimeout(ctx, ln.o.nightTimeout)
	rep, err := d.RunNight(nightCtx, benchTrigger)
	cancel()
	stopProfile()
	if err != nil {
		return fmt.Errorf("night %d: %w", night, err)
	}
	wall := rep.Finished.Sub(rep.Started).Seconds()
	computed, reused, baseline := baselineNotes(ctx, st, rep.Started)
	if night == 1 {
		f.Night1S, f.BaselineS = wall, baseline
		f.PeakRSSMB, f.PeakRSSReset = peakRSSMB(), reset
	} else {
		f.Night2S, f.Night2Reused, f.Night2Computed = wall, reused > 0 && computed == 0, computed
	}
	outs, a, c, caught, err := largeOutcomes(ctx, st, rep, ln.cfg, ln.root, ln.pytest)
	if err != nil {
		return err
	}
	if err := ln.nightFigures(ctx, st, outs, rep.Started); err != nil {
		return err
	}
	if err := collectFirstRequests(ctx, st, outs, ln.firsts); err != nil {
		return err
	}
	ln.rec.Cases = append(ln.rec.Cases, outs...)
	ln.attempts, ln.checks = append(ln.attempts, a...), append(ln.checks, c...)
	f.FirstTierCaught += caught
	for _, p := range must(filepath.Glob(filepath.Join(issues, "*.md"))) {
		os.Remove(p) // night 2 sees only its own issues (the done ones would be deduplicated anyway)
	}
	return nil
}

// writeLargeIssues writes one issue file per bug for the night.
func writeLargeIssues(issues string, night int, bugs []largeBug) error {
	if err := os.MkdirAll(issues, 0o755); err != nil {
		return err
	}
	for i, b := range bugs {
		text := fmt.Sprintf("---\ntitle: %s\nrepo: %s\nlabels: [bug]\n---\n%s\n", b.Title, largeRepoName, b.Body)
		if err := writeIssue(filepath.Join(issues, fmt.Sprintf("n%d-%d.md", night, i)), []byte(text)); err != nil {
			return err
		}
	}
	return nil
}

// collectFirstRequests adds each outcome's first successful request of every role to firsts.
func collectFirstRequests(ctx context.Context, st *store.Store, outs []Outcome, firsts map[string][]store.ModelCall) error {
	for _, o := range outs {
		if o.Ticket == 0 {
			continue
		}
		calls, err := st.ModelCalls(ctx, o.Ticket)
		if err != nil {
			return fmt.Errorf("read model calls of ticket %d: %w", o.Ticket, err)
		}
		seen := map[string]bool{}
		for _, c := range calls {
			if seen[c.Role] || c.ErrorClass != "" || c.PromptTokens == 0 {
				continue
			}
			seen[c.Role] = true
			firsts[c.Role] = append(firsts[c.Role], c)
		}
	}
	return nil
}

// laterShares is, per role, sum(cached)/sum(prompt) over the first requests after the
// earliest one (the request that writes the shared prefix to the cache).
func laterShares(firsts map[string][]store.ModelCall) map[string]float64 {
	out := map[string]float64{}
	for role, cs := range firsts {
		sort.Slice(cs, func(i, j int) bool { return cs[i].StartedAt.Before(cs[j].StartedAt) })
		var prompt, cached int64
		for _, c := range cs[1:] {
			prompt, cached = prompt+c.PromptTokens, cached+c.CachedTokens
		}
		if prompt > 0 {
			out[role] = float64(cached) / float64(prompt)
		}
	}
	return out
}

func must[T any](v T, _ error) T { return v }

func (o options) scenarioOr(def string) string {
	if o.scenario == "" || o.scenario == scenarioByDifficulty {
		return def
	}
	return o.scenario
}

// measureTiers clones the repository, applies the first bug's fix and times, one after the
// other with the same runner (the sandbox the daemon uses by default), the first tier as
// the pipeline runs it and the whole suite.
func measureTiers(ctx context.Context, repo largeRepo, dir string, f *LargeFigures) error {
	if out, err := exec.CommandContext(ctx, "git", "clone", "-q", repo.Dir, dir).CombinedOutput(); err != nil {
		return fmt.Errorf("clone large repository: %w: %s", err, out)
	}
	apply := exec.CommandContext(ctx, "git", "-C", dir, "apply", "-")
	apply.Stdin = strings.NewReader(repo.Bugs[0].Patch)
	if out, err := apply.CombinedOutput(); err != nil {
		return fmt.Errorf("apply fix to large repository: %w: %s", err, out)
	}
	runner := &validate.Runner{}
	check := validate.Check{Name: "tests", Kind: validate.KindPytest, Timeout: 2 * time.Minute}
	start := time.Now()
	graph, err := validate.ScanImports(dir)
	if err != nil {
		return err
	}
	selected := graph.TestsAffectedBy([]string{repo.Bugs[0].Module})
	f.ImportScanS = time.Since(start).Seconds()
	first := check
	first.Only = selected
	res := runner.Run(ctx, dir, []validate.Check{first})
	f.FirstTierS, f.FirstTierFiles = time.Since(start).Seconds(), len(selected)
	if len(res) != 1 || !res[0].Passed || res[0].Tests == 0 {
		return fmt.Errorf("first tier on the large repository did not pass: %+v", res)
	}
	start = time.Now()
	res = runner.Run(ctx, dir, []validate.Check{check})
	f.FullSuiteS = time.Since(start).Seconds()
	if len(res) != 1 || res[0].Tests < repo.Tests/2 {
		return fmt.Errorf("full suite on the large repository ran %v", res)
	}
	if f.FullSuiteS > 0 {
		f.FirstTierShare = f.FirstTierS / f.FullSuiteS
	}
	return nil
}

// baselineNotes counts the night's baseline notes (daemon/baseline.go noteBaseline) on the
// tickets: how many said computed, how many reused, and the computed one's time.
func baselineNotes(ctx context.Context, st *store.Store, since time.Time) (computed, reused int, took float64) {
	tickets, err := st.List(ctx, store.Filter{})
	if err != nil {
		return 0, 0, 0
	}
	seen := map[string]bool{}
	for _, t := range tickets {
		events, _ := st.Events(ctx, t.ID)
		for _, e := range events {
			if e.Kind != "note" || !strings.HasPrefix(e.Reason, "baseline of ") || e.At.Before(since.Add(-time.Second)) || seen[e.Reason] {
				continue
			}
			seen[e.Reason] = true
			switch {
			case strings.Contains(e.Reason, " reused "):
				reused++
			case strings.Contains(e.Reason, " computed: "):
				computed++
				if i := strings.LastIndex(e.Reason, " in "); i >= 0 {
					if d, err := time.ParseDuration(strings.TrimSpace(e.Reason[i+4:])); err == nil {
						took = d.Seconds()
					}
				}
			}
		}
	}
	return computed, reused, took
}

// largeOutcomes reads the night's tickets, judges each done branch by running its bug's test
// on a fresh clone (never the pipeline's verdict), and returns per ticket the attempt time
// (claim to finish) and the time spent in the checks (submit and run_checks tool calls).
func largeOutcomes(ctx context.Context, st *store.Store, rep daemon.NightReport, cfg config.Config, root string, pytest []string) ([]Outcome, []float64, []float64, int, error) {
	tickets, err := st.List(ctx, store.Filter{Since: rep.Started.Add(-time.Second)})
	if err != nil {
		return nil, nil, nil, 0, err
	}
	var outs []Outcome
	var attempts, checks []float64
	caught := 0
	for _, t := range tickets {
		o := Outcome{Name: t.Title, Difficulty: "large", Ticket: t.ID, State: string(t.State), Attempts: t.Attempts, Branch: t.Branch,
			ModelCalls: t.ModelCalls, PromptTokens: t.PromptTokens, CachedTokens: t.CachedTokens, CompletionTokens: t.CompletionTokens,
			CostUSD: t.CostUSD, CostUnknown: t.CostUnknown, Reason: t.Reason}
		events, err := st.Events(ctx, t.ID)
		if err != nil {
			return nil, nil, nil, 0, err
		}
		end := t.FinishedAt
		if end.IsZero() {
			end = rep.Finished
		}
		for _, ev := range events {
			if ev.Kind == "claimed" {
				o.DurationS = max(end.Sub(ev.At), 0).Seconds()
				break
			}
		}
		calls, err := st.ToolCalls(ctx, t.ID)
		if err != nil {
			return nil, nil, nil, 0, err
		}
		inChecks, firstTier := checkToolTime(calls)
		caught += firstTier
		if o.Time, err = attemptTimes(ctx, st, t.ID); err != nil {
			return nil, nil, nil, 0, err
		}
		if o.State == string(store.StateDone) && o.Branch != "" {
			o.Success, o.JudgeError = judgeLarge(ctx, cfg.Repos[largeRepoName].Path, o.Branch, filepath.Join(root, "judge", strconv.FormatInt(t.ID, 10)), t.Title, pytest)
		}
		attempts, checks = append(attempts, o.DurationS), append(checks, inChecks.Seconds())
		outs = append(outs, o)
	}
	return outs, attempts, checks, caught, nil
}

// checkToolTime is the time of a ticket's submit and run_checks tool calls, and how many of
// them the first tier refused.
func checkToolTime(calls []store.ToolCall) (time.Duration, int) {
	var in time.Duration
	caught := 0
	for _, c := range calls {
		if c.Tool == "submit" || c.Tool == "run_checks" {
			in += c.Duration
			if !c.OK && strings.Contains(c.Result, "First tier (") {
				caught++
			}
		}
	}
	return in, caught
}

// nightFigures adds the night's selection figures and each ticket's model wait: the fixes
// the whole suite refused (cumulative in the database, so the latest count), the whole-suite
// runs' time (from their notes) and the submits the selection decided.
func (ln *largeNights) nightFigures(ctx context.Context, st *store.Store, outs []Outcome, since time.Time) error {
	f := &ln.rec.Large
	missed, err := st.SelectionMissed(ctx)
	if err != nil {
		return err
	}
	f.SelectionMissed = int(missed[largeRepoName])
	seen := map[string]bool{}
	for _, o := range outs {
		calls, err := st.ModelCalls(ctx, o.Ticket)
		if err != nil {
			return err
		}
		var wait time.Duration
		for _, c := range calls {
			wait += c.Latency
		}
		ln.models = append(ln.models, wait.Seconds())
		events, err := st.Events(ctx, o.Ticket)
		if err != nil {
			return err
		}
		for _, e := range events {
			if e.At.Before(since.Add(-time.Second)) {
				continue
			}
			if strings.HasPrefix(e.Reason, daemon.HeldNote) {
				f.SelectedFixes++
			}
			if rest, ok := strings.CutPrefix(e.Reason, daemon.NightSuiteNote); ok && !seen[e.Reason] {
				seen[e.Reason] = true
				if s, _, ok := strings.Cut(rest, "s "); ok {
					if v, err := strconv.ParseFloat(s, 64); err == nil {
						f.NightSuiteS += v
					}
				}
			}
		}
	}
	return nil
}

// judgeLarge clones the branch and runs the ticket's surcharge test there.
func judgeLarge(ctx context.Context, repo, branch, dir, title string, pytest []string) (bool, string) {
	var n int
	if _, err := fmt.Sscanf(title, "Surcharge %d", &n); err != nil {
		return false, "title names no surcharge: " + title
	}
	cmd := exec.CommandContext(ctx, "git", "clone", "-q", "--single-branch", "--branch", branch, repo, dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return false, fmt.Sprintf("check out %s: %v: %s", branch, err, out)
	}
	args := append(append([]string{}, pytest[1:]...), "-q", "-p", "no:cacheprovider", fmt.Sprintf("tests/test_surcharge_%d.py", n))
	test := exec.CommandContext(ctx, pytest[0], args...)
	test.Dir = dir
	if out, err := test.CombinedOutput(); err != nil {
		return false, fmt.Sprintf("surcharge test fails on %s: %s", branch, lastLine(string(out)))
	}
	return true, ""
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// resetPeakRSS resets this process's peak resident set (VmHWM) so the next reading covers
// only what follows (Linux: "5" to /proc/self/clear_refs). It reports whether it could.
// The memory the round's generator and tier measurement left is returned to the system
// first (debug.FreeOSMemory): the peak is the night's, not what the bench held before it.
func resetPeakRSS() bool {
	debug.FreeOSMemory()
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// peakRSSMB is this process's VmHWM in MB (0 where /proc is missing).
func peakRSSMB() float64 { return procStatusMB("VmHWM:") }

// procStatusMB reads one kB field of /proc/self/status in MB (0 where /proc is missing).
func procStatusMB(field string) float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
