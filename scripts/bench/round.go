package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ticketd/ticketd/daemon"
	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/pipeline/tools"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/scripts/bench/caseset"
	"github.com/ticketd/ticketd/store"
)

// Offline night and budget knobs, used when --config is not given. They are the product's
// defaults except where a default only makes sense for a real night: a retry waits 1 s,
// not 30 s, and an idle worker polls every 100 ms, so a round measures the pipeline rather
// than the sleeps between attempts.
const (
	benchWorkers      = 3
	benchMaxAttempts  = 3
	benchRetryBackoff = time.Second
	benchPoll         = 100 * time.Millisecond
	benchLease        = 30 * time.Second
	benchHeartbeat    = 5 * time.Second
	benchMaxSteps     = 20
	benchWallClock    = 10 * time.Minute
	scriptedEndpoint  = "scripted"
	benchTrigger      = "bench"
)

// baseConfig is the configuration a round starts from: the --config file, or the offline
// defaults pointing every role at the scripted model.
func baseConfig(o options) (config.Config, error) {
	if o.configFile != "" {
		cfg, err := config.Load(o.configFile)
		if err != nil {
			return config.Config{}, fmt.Errorf("--config: %w", err)
		}
		if o.workers > 0 {
			cfg.Night.Workers = o.workers
		}
		cfg.Review = benchReview(o, cfg.Review)
		return cfg, nil
	}
	cfg := config.Default()
	cfg.Night.Workers = benchWorkers
	if o.workers > 0 {
		cfg.Night.Workers = o.workers
	}
	cfg.Night.MaxAttempts = benchMaxAttempts
	cfg.Night.RetryBackoff = benchRetryBackoff
	cfg.Night.Poll = benchPoll
	cfg.Night.Lease = benchLease
	cfg.Night.Heartbeat = benchHeartbeat
	cfg.Budget.MaxSteps = benchMaxSteps
	cfg.Budget.WallClock = benchWallClock
	cfg.Review = benchReview(o, cfg.Review)
	cfg.Models = model.Config{
		Endpoints: map[string]model.Endpoint{scriptedEndpoint: {BaseURL: "http://127.0.0.1:1/v1"}},
		Roles: map[model.Role]model.RoleConfig{
			model.RoleTriage:  {Endpoint: scriptedEndpoint, Model: "gpt-4.1-mini"},
			model.RoleMaker:   {Endpoint: scriptedEndpoint, Model: "gpt-4.1"},
			model.RoleChecker: {Endpoint: scriptedEndpoint, Model: "gpt-4.1-mini"},
			model.RoleJudge:   {Endpoint: scriptedEndpoint, Model: "gpt-4.1-mini"},
		},
	}
	return cfg, nil
}

// benchReview is review with --reviewers applied: each angle with its defaults.
func benchReview(o options, r config.Review) config.Review {
	if len(o.reviewers) == 0 {
		return r
	}
	out := config.Review{}
	for _, a := range o.reviewers {
		out.Reviewers = append(out.Reviewers, config.Reviewer{Angle: a})
	}
	return out
}

// usesRealEndpoint says whether the configured models are a real endpoint: only a --config
// file can name one, and only an endpoint off loopback counts (an empty base_url is
// api.openai.com). Otherwise the bench starts the scripted model and points every
// endpoint at it.
func usesRealEndpoint(o options, cfg config.Config) bool {
	if o.configFile == "" {
		return false
	}
	for _, ep := range cfg.Models.Endpoints {
		if !isLoopback(ep.BaseURL) {
			return true
		}
	}
	return false
}

func isLoopback(baseURL string) bool {
	if baseURL == "" {
		return false
	}
	u, err := url.Parse(baseURL)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// roundConfig replaces everything a round owns (store, intake, repositories, workspace,
// output and, offline, the endpoints' URL) and returns the parsed configuration, its YAML
// and the hash of that YAML with the round's folder and the scripted model's port masked,
// so that two rounds of the same configuration hash alike.
func roundConfig(base config.Config, root string, cases []caseset.Case, scriptedURL string) (config.Config, []byte, string, error) {
	c := base
	c.File, c.BaseDir = "", "" // every path below is absolute; the round owns its folder
	c.Store = config.Store{Path: filepath.Join(root, "ticketd.db"), Synchronous: base.Store.Synchronous}
	c.Intake = []config.Source{{Kind: "dir", Path: filepath.Join(root, "issues")}}
	c.Priorities = nil
	c.Workspace = filepath.Join(root, "work")
	c.Output = filepath.Join(root, "results")
	c.Repos = map[string]config.Repo{}
	for _, k := range cases {
		// The default gate, as a new user configures it: the time-out comes from the baseline.
		checks := []validate.Check{{Name: "tests", Kind: validate.KindPytest}}
		if len(k.Checks) > 0 {
			checks = k.Checks // the case's own gate
		}
		c.Repos[k.Name] = config.Repo{
			Path:    filepath.Join(root, "repos", k.Name),
			BaseRef: "main",
			Checks:  checks,
			Setup:   k.Setup,
		}
	}
	c.Models.Endpoints = map[string]model.Endpoint{}
	for name, ep := range base.Models.Endpoints {
		if scriptedURL != "" {
			ep.BaseURL, ep.APIKeyEnv = scriptedURL, ""
		}
		c.Models.Endpoints[name] = ep
	}
	data, err := yaml.Marshal(c)
	if err != nil {
		return config.Config{}, nil, "", fmt.Errorf("write round config: %w", err)
	}
	file := filepath.Join(root, "config.yaml")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		return config.Config{}, nil, "", fmt.Errorf("write round config: %w", err)
	}
	cfg, err := config.Parse(file, data)
	if err != nil {
		return config.Config{}, nil, "", fmt.Errorf("round config: %w", err)
	}
	masked := strings.ReplaceAll(string(data), root, "$ROUND")
	if scriptedURL != "" {
		masked = strings.ReplaceAll(masked, scriptedURL, "$SCRIPTED")
	}
	sum := sha256.Sum256([]byte(masked))
	return cfg, data, "sha256:" + hex.EncodeToString(sum[:]), nil
}

// scriptedCases are the scripted model's cases: one per bench case, matched by the issue
// title, answering with the case's scripted patch (the golden patch with its regression
// test, see caseset.Case.ScriptedPatch) in the scenario's behaviour.
func scriptedCases(cases []caseset.Case, scenario string) ([]scriptedmodel.Case, error) {
	out := make([]scriptedmodel.Case, 0, len(cases))
	for i, k := range cases {
		patch, err := k.ScriptedPatch()
		if err != nil {
			return nil, err
		}
		b := scriptedmodel.Behaviour(scenario)
		realistic := false
		switch scenario {
		case scenarioByDifficulty:
			// The mix: tickets a model fixes make its slips on the way; the loop, never
			// and late-fix cases stay exact, as they measure the guards and budgets.
			b = scriptedmodel.Behaviour(k.Scripted)
			realistic = b == scriptedmodel.BehaviourSolve || b == scriptedmodel.BehaviourWrongThenRight
		case scenarioPlain:
			b = scriptedmodel.Behaviour(k.Scripted)
		case scenarioRealistic:
			b, realistic = scriptedmodel.Behaviour(k.Scripted), true
		}
		c := scriptedmodel.Case{Match: k.Title, Patch: patch, Behaviour: b, Realistic: realistic}
		if b == scriptedmodel.BehaviourTamper {
			// Each case gets one cheat, dealt in turn, so a round tries every move.
			c.Tamper = scriptedmodel.TamperMoves[i%len(scriptedmodel.TamperMoves)]
		}
		out = append(out, c)
		for _, comp := range k.Companions {
			// A companion is solved at once: what it measures is the night, not the maker.
			out = append(out, scriptedmodel.Case{Match: comp.Title, Patch: comp.Patch, Behaviour: scriptedmodel.BehaviourSolve})
		}
	}
	return out, nil
}

// scenarioBehaviour is the scripted behaviour a case has under scenario: its own for the
// mixes, else the scenario's.
func scenarioBehaviour(k caseset.Case, scenario string) string {
	switch scenario {
	case scenarioByDifficulty, scenarioPlain, scenarioRealistic:
		return k.Scripted
	}
	return scenario
}

// issueFile is the intake file for a case: its issue with `repo: <case name>` in the front
// matter, so every case goes to its own repository.
func issueFile(k caseset.Case) string {
	var b strings.Builder
	b.WriteString("---\n")
	fmt.Fprintf(&b, "title: %s\n", k.Title)
	fmt.Fprintf(&b, "repo: %s\n", k.Name)
	if len(k.Labels) > 0 {
		fmt.Fprintf(&b, "labels: [%s]\n", strings.Join(k.Labels, ", "))
	}
	b.WriteString("---\n")
	b.WriteString(k.Body)
	b.WriteString("\n")
	return b.String()
}

// env is what every round shares.
type env struct {
	o       options
	cases   []caseset.Case
	base    config.Config
	real    bool
	pytest  []string
	log     *slog.Logger
	stderr  io.Writer
	commit  string
	machine Machine
}

// runRound resets everything, runs one night and judges its branches.
func (e *env) runRound(ctx context.Context, n int) (Record, error) {
	rec := Record{
		Round: n, Rounds: e.o.rounds, Scenario: e.scenarioName(), Endpoint: "scripted",
		Latency: e.o.latency.Seconds(), Seed: e.o.seed, Commit: e.commit, Machine: e.machine,
		CasesDir: e.casesDir(), Filter: e.filterString(),
	}
	if e.real {
		rec.Endpoint, rec.Latency = "real", 0
	}
	rec.Machine.Load1 = load1()
	root, err := os.MkdirTemp("", "ticketd-bench-")
	if err != nil {
		return rec, fmt.Errorf("round %d: create round folder: %w", n, err)
	}
	if e.o.keep {
		fmt.Fprintf(e.stderr, "round %d folder: %s\n", n, root)
	} else {
		defer os.RemoveAll(root)
	}

	if err := e.materialize(ctx, root); err != nil {
		return rec, fmt.Errorf("round %d: %w", n, err)
	}
	scriptedURL, stop, err := e.startModel()
	if err != nil {
		return rec, fmt.Errorf("round %d: %w", n, err)
	}
	defer stop()
	cfg, _, hash, err := roundConfig(e.base, root, e.cases, scriptedURL)
	if err != nil {
		return rec, fmt.Errorf("round %d: %w", n, err)
	}
	rec.ConfigHash, rec.Workers = hash, cfg.Night.Workers

	st, err := daemon.OpenStore(ctx, cfg)
	if err != nil {
		return rec, fmt.Errorf("round %d: %w", n, err)
	}
	defer st.Close()
	nightCtx, cancel := context.WithTimeout(ctx, e.o.nightTimeout)
	defer cancel()
	d := &daemon.Daemon{Config: cfg, Store: st, Logger: e.log}
	rec.Timestamp = time.Now().UTC()
	night, err := d.RunNight(nightCtx, benchTrigger)
	if err != nil {
		return rec, fmt.Errorf("round %d: night: %w", n, err)
	}
	if ctx.Err() != nil {
		return rec, fmt.Errorf("round %d: %w", n, context.Cause(ctx))
	}
	if night.Stopped != nil {
		rec.Stopped = night.Stopped.Error()
		fmt.Fprintf(e.stderr, "round %d: the night stopped early: %v\n", n, night.Stopped)
	}
	nightWall := night.Finished.Sub(night.Started)

	outcomes, err := e.outcomes(ctx, st, night)
	if err != nil {
		return rec, fmt.Errorf("round %d: %w", n, err)
	}
	e.judgeAll(ctx, root, cfg, outcomes)
	stats, err := st.Stats(ctx, night.RunID)
	if err != nil {
		return rec, fmt.Errorf("round %d: %w", n, err)
	}
	rec.Cases = outcomes
	rec.Totals = totals(outcomes, nightWall, stats.FirstRequestCachedShare)
	if err := e.addNightFigures(ctx, st, cfg, root, night.Started, &rec.Totals); err != nil {
		return rec, fmt.Errorf("round %d: %w", n, err)
	}
	for _, r := range cfg.Review.PipelineReviewers() {
		rec.Totals.Reviewers = append(rec.Totals.Reviewers, r.Angle)
	}
	return rec, nil
}

// startModel starts the scripted model (a test double) for the round's cases and returns
// its URL; none (an empty URL) when the round runs against a real endpoint.
func (e *env) startModel() (string, func(), error) {
	if e.real {
		return "", func() {}, nil
	}
	sc, err := scriptedCases(e.cases, e.o.scenario)
	if err != nil {
		return "", nil, err
	}
	srv, err := scriptedmodel.New(sc, scriptedmodel.Options{Seed: e.o.seed, Latency: e.o.latency})
	if err != nil {
		return "", nil, err
	}
	url, err := srv.Start()
	if err != nil {
		return "", nil, err
	}
	return url, func() { srv.Close() }, nil
}

func (e *env) scenarioName() string {
	if e.real {
		return "real"
	}
	return e.o.scenario
}

func (e *env) casesDir() string {
	if len(e.cases) > 0 {
		return filepath.Dir(e.cases[0].Dir)
	}
	return e.o.casesDir
}

func (e *env) filterString() string {
	if e.o.filter == nil {
		return ""
	}
	return e.o.filter.String()
}

// materialize writes every case's repository at the bug and its issue file.
func (e *env) materialize(ctx context.Context, root string) error {
	issues := filepath.Join(root, "issues")
	if err := os.MkdirAll(issues, 0o755); err != nil {
		return fmt.Errorf("create issue folder: %w", err)
	}
	for _, k := range e.cases {
		repo := filepath.Join(root, "repos", k.Name)
		if err := k.Materialize(ctx, repo); err != nil {
			return err
		}
		if e.o.agentsMD {
			if err := commitAgentsMD(ctx, repo); err != nil {
				return fmt.Errorf("case %q: %w", k.Name, err)
			}
		}
		if err := writeIssue(filepath.Join(issues, k.Name+".md"), []byte(issueFile(k))); err != nil {
			return fmt.Errorf("write issue of case %q: %w", k.Name, err)
		}
		for _, c := range k.Companions {
			name := k.Name + "~" + c.File // after the case's own issue, so enqueued after it
			if err := writeIssue(filepath.Join(issues, name), []byte(companionIssueFile(k, c))); err != nil {
				return fmt.Errorf("write companion issue %s of case %q: %w", c.File, k.Name, err)
			}
		}
	}
	return nil
}

// outcomes reads each case's ticket back from the store: state, attempts, spend and its
// duration as ticketctl stats defines it (store.TicketDurations).
func (e *env) outcomes(ctx context.Context, st *store.Store, night daemon.NightReport) ([]Outcome, error) {
	tickets, err := st.List(ctx, store.Filter{})
	if err != nil {
		return nil, err
	}
	durations, err := st.TicketDurations(ctx, night.RunID)
	if err != nil {
		return nil, err
	}
	// A case's ticket is the one of its repository with its title: companions share it.
	byRepo := map[string]store.Summary{}
	for _, t := range tickets {
		byRepo[t.Repo+"\x00"+t.Title] = t
	}
	out := make([]Outcome, 0, len(e.cases))
	for _, k := range e.cases {
		o := Outcome{Name: k.Name, Difficulty: k.Difficulty, Scripted: k.Scripted, State: "not_enqueued"}
		if e.real {
			o.Scripted = ""
		} else {
			o.Scripted = scenarioBehaviour(k, e.o.scenario)
		}
		t, ok := byRepo[k.Name+"\x00"+k.Title]
		if !ok {
			out = append(out, o)
			continue
		}
		o.Ticket, o.State, o.Attempts, o.Branch = t.ID, string(t.State), t.Attempts, t.Branch
		o.ModelCalls, o.PromptTokens, o.CachedTokens, o.CompletionTokens = t.ModelCalls, t.PromptTokens, t.CachedTokens, t.CompletionTokens
		o.CostUSD, o.CostUnknown, o.Reason = t.CostUSD, t.CostUnknown, t.Reason
		if d, ok := durations[t.ID]; ok {
			o.DurationS, o.Claimed = d.Seconds(), true
		}
		if err := toolFigures(ctx, st, &o); err != nil {
			return nil, err
		}
		if err := reviewFigures(ctx, st, &o); err != nil {
			return nil, err
		}
		if o.Time, err = attemptTimes(ctx, st, t.ID); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

// toolFigures reads a ticket's maker calls, compactions and tool calls back from the store:
// how the maker worked, beside what it cost.
func toolFigures(ctx context.Context, st *store.Store, o *Outcome) error {
	calls, err := st.ModelCalls(ctx, o.Ticket)
	if err != nil {
		return fmt.Errorf("read model calls of ticket %d: %w", o.Ticket, err)
	}
	for _, c := range calls {
		if c.Role == string(model.RoleMaker) {
			o.MakerCalls++
		}
		o.Compactions += c.Compactions
	}
	tcs, err := st.ToolCalls(ctx, o.Ticket)
	if err != nil {
		return fmt.Errorf("read tool calls of ticket %d: %w", o.Ticket, err)
	}
	for _, c := range tcs {
		o.ToolCalls++
		if !c.OK {
			o.FailedToolCalls++
		}
		if c.Tool != tools.EditFile {
			continue
		}
		if !c.OK {
			o.FailedEdits++
			continue
		}
		if c.Rung != "" {
			if o.EditRungs == nil {
				o.EditRungs = map[string]int{}
			}
			o.EditRungs[c.Rung]++
		}
	}
	return nil
}

// reviewFigures reads a ticket's reviewer calls and findings back from the store: the
// findings are those the reviewers' first rounds kept (a second round only confirms).
func reviewFigures(ctx context.Context, st *store.Store, o *Outcome) error {
	reviews, err := st.Reviews(ctx, o.Ticket)
	if err != nil {
		return fmt.Errorf("read reviews of ticket %d: %w", o.Ticket, err)
	}
	for _, r := range reviews {
		o.ReviewerCalls++
		if r.Round == 1 {
			o.Findings += r.Kept
			if o.FindingsBy == nil {
				o.FindingsBy = map[string]int{}
			}
			o.FindingsBy[r.Reviewer] += r.Kept
		}
	}
	calls, err := st.ModelCalls(ctx, o.Ticket)
	if err != nil {
		return fmt.Errorf("read model calls of ticket %d: %w", o.Ticket, err)
	}
	for _, c := range calls {
		if c.Role == string(model.RoleArbiter) {
			o.ArbiterCalls++
		}
	}
	return nil
}

// judgeAll judges every done ticket's branch with the case's hidden tests, a few at a
// time. A ticket that is not done is a failure whatever else happened.
func (e *env) judgeAll(ctx context.Context, root string, cfg config.Config, outs []Outcome) {
	byName := map[string]caseset.Case{}
	for _, k := range e.cases {
		byName[k.Name] = k
	}
	sem := make(chan struct{}, max(runtime.NumCPU(), 1))
	var wg sync.WaitGroup
	for i := range outs {
		o := &outs[i]
		if o.State != string(store.StateDone) {
			continue
		}
		if o.Branch == "" {
			o.JudgeError = "ticket is done but names no branch"
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			k := byName[o.Name]
			passed, err := judge(ctx, k, cfg.Repos[k.Name].Path, o.Branch, filepath.Join(root, "judge", k.Name), e.pytest)
			o.Success = passed
			if err != nil {
				o.JudgeError = err.Error()
				fmt.Fprintf(e.stderr, "judge %s: %v\n", k.Name, err)
			}
		}()
	}
	wg.Wait()
}

// judge checks the branch out of repo into a fresh folder, never the pipeline's worktree,
// and runs the case's hidden tests there.
func judge(ctx context.Context, k caseset.Case, repo, branch, dir string, pytest []string) (bool, error) {
	cmd := exec.CommandContext(ctx, "git", "clone", "-q", "--no-hardlinks", "--single-branch", "--branch", branch, repo, dir)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return false, fmt.Errorf("check out branch %s of %s: %w: %s", branch, repo, err, strings.TrimSpace(string(out)))
	}
	passed, _, err := k.Judge(ctx, dir, pytest)
	return passed, err
}

// load1 is the one-minute load average, recorded so a slow round on a busy machine can be
// told apart from a slow ticketd (-1 where /proc/loadavg is missing).
func load1() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	var v float64
	if _, err := fmt.Sscanf(string(data), "%f", &v); err != nil {
		return -1
	}
	return v
}

// gitCommit is the commit the running bench was built from: the VCS stamp of a binary
// made with go build, else (go run and go test stamp none) `git rev-parse HEAD` of the
// ticketd checkout, with "-dirty" when it has uncommitted changes, or "unknown" outside a
// checkout. The stamp comes first because the checkout may have moved on since the build.
func gitCommit(ctx context.Context, dir string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev string
		var modified bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if rev != "" {
			if modified {
				rev += "-dirty"
			}
			return rev
		}
	}
	if dir == "" {
		return "unknown"
	}
	out, err := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	commit := strings.TrimSpace(string(out))
	status, err := exec.CommandContext(ctx, "git", "-C", dir, "status", "--porcelain", "--untracked-files=all").Output()
	if err != nil || dirty(string(status)) {
		commit += "-dirty"
	}
	return commit
}

// dirty says whether `git status --porcelain` output shows a change that can alter the
// build: any tracked change, or an untracked Go file (results.jsonl and the like are not).
// The bench's own record, scripts/bench/results.jsonl, is not: a second bench run the same
// day must not call the first one's appended lines a change to the code.
func dirty(status string) bool {
	for _, line := range strings.Split(status, "\n") {
		if line == "" || strings.HasSuffix(line, " scripts/bench/results.jsonl") {
			continue
		}
		if !strings.HasPrefix(line, "??") || strings.HasSuffix(line, ".go") {
			return true
		}
	}
	return false
}

// errNoCaseMatches is returned when --filter leaves no case to run.
var errNoCaseMatches = errors.New("no case matches --filter")

// writeIssue writes an issue file as users file them: before the night. Its time is set an
// hour back, so the night's scan does not wait out the settle time (intake.DefaultSettle)
// for a file the harness wrote a moment before starting it, which no operator's night
// meets and which every night's figures would otherwise carry.
func writeIssue(path string, data []byte) error {
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return err
	}
	past := time.Now().Add(-time.Hour)
	return os.Chtimes(path, past, past)
}
