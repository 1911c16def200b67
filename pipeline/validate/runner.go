package validate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ticketd/ticketd/pipeline/discover"
	"github.com/ticketd/ticketd/pipeline/sandbox"
	"github.com/ticketd/ticketd/pipeline/secret"
	"github.com/ticketd/ticketd/pipeline/timing"
)

// Defaults of the Runner's options.
const (
	DefaultOutputCap = 64 << 10 // bytes of output kept in Result.Output (the tail)
	parseCap         = 1 << 20  // bytes of combined output the parsers see (the tail)
	stdoutCap        = 8 << 20  // bytes of stdout kept for JSON parsers (the head)
	drainTimeout     = 2 * time.Second
)

// DefaultMaxWorktreeSize bounds how large a worktree (with the check's private /tmp) may
// grow while a check runs: a test that fills the disk must not take the machine down.
const DefaultMaxWorktreeSize int64 = 1 << 30

// defaultSizePoll is how often the worktree's size is measured while a check runs.
const defaultSizePoll = time.Second

// Runner runs checks. The zero value is ready to use with the defaults — bubblewrap
// sandbox, allowlisted environment — and is safe for concurrent use by several workers.
type Runner struct {
	// OutputCap is how many bytes of each check's output are kept in
	// Result.Output, counted from the end; 0 means DefaultOutputCap.
	OutputCap int
	// Sandbox is how checks are isolated: sandbox.ModeBwrap (the zero value) or
	// sandbox.ModeNone, which isolates nothing.
	Sandbox sandbox.Mode
	// Bwrap is the bubblewrap binary; empty means bwrap on PATH.
	Bwrap string
	// Hide are directories a check must not see (the daemon's database, results, workspace,
	// config, home); the worktree itself shows through. See sandbox.Spec.
	Hide []string
	// ReadOnly are paths shown read-only through Hide (tools under the hidden home).
	ReadOnly []string
	// BaseEnv is the environment the allowlist picks from; nil means the
	// daemon's own environment.
	BaseEnv []string
	// PassEnv names variables passed to every check besides the allowlist
	// (sandbox.Env); a check adds its own in Check.PassEnv.
	PassEnv []string
	// DenyEnv names variables that never reach a check even when passed: the
	// model endpoints' api_key_env.
	DenyEnv []string
	// ExtraEnv is NAME=value pairs set for every check, last.
	ExtraEnv []string
	// ScratchRoot is where each check's private temporary directory is made; empty means
	// os.TempDir(). sandbox.RemoveLeftovers cleans it after a crash.
	ScratchRoot string
	// MaxWorktreeSize is how many bytes the worktree plus what the check stores elsewhere
	// (its /tmp and $HOME, /dev/shm, its reports, files it deleted but holds open) may hold
	// while the check runs; 0 means DefaultMaxWorktreeSize, negative no limit. It is also
	// the size of the check's private /tmp.
	MaxWorktreeSize int64
	// Limits bound each check's memory per process and its processes (sandbox.Limits; the
	// zero value means the defaults). Under sandbox.ModeNone there are none.
	Limits sandbox.Limits
	// SizePoll is how often the size is measured; 0 means every second.
	SizePoll time.Duration
	// Logger receives one record per check; nil discards.
	Logger *slog.Logger
	// User is the host identity checks run as when ticketd runs as root (zero: nobody);
	// see sandbox.Spec.User.
	User sandbox.Identity

	pythons pythonCache // system python3 per tool module, resolved once
	shims   shimMemo    // the interpreters pyenv shims run (pyenv.go)
	// timer replaces time.AfterFunc for a check's time-out in tests that must time a
	// check out at a moment of their choosing (nil: time.AfterFunc).
	timer func(timeout time.Duration, f func()) (stop func())
}

// Run runs checks one after another in dir (a worktree) and returns one
// Result per check, in order. Checks run sequentially because they share
// the working copy. When ctx ends, the running check is killed and the
// remaining ones are reported as not run.
func (r *Runner) Run(ctx context.Context, dir string, checks []Check) []Result {
	results := make([]Result, 0, len(checks))
	for _, c := range checks {
		if ctx.Err() != nil {
			results = append(results, Result{Name: c.Name, Kind: c.Kind, ExitCode: -1, Cancelled: true,
				Summary: "not run: " + context.Cause(ctx).Error()})
			continue
		}
		start := time.Now()
		res := redactResult(r.runOne(ctx, dir, c))
		addCheckTime(ctx, time.Since(start), res.Duration)
		r.logger().LogAttrs(ctx, slog.LevelInfo, "check finished",
			slog.String("check", c.Name), slog.String("kind", c.Kind), slog.String("dir", dir),
			slog.Bool("passed", res.Passed), slog.Int("exit_code", res.ExitCode),
			slog.Bool("timed_out", res.TimedOut), slog.Float64("duration_s", float64(res.Duration.Milliseconds())/1000),
			slog.Int("findings", len(res.Findings)), slog.String("summary", res.Summary))
		results = append(results, res)
	}
	return results
}

// addCheckTime splits one check's time for the attempt (package timing): its process's run
// is Checks, the rest of it (scratch folder, git view, environment, finding the command,
// removing the scratch folder) SandboxStart. bwrap builds its namespaces inside the
// process's run, so that part of the sandbox's start counts in Checks.
func addCheckTime(ctx context.Context, total, process time.Duration) {
	process = min(process, total)
	timing.Add(ctx, timing.Checks, process)
	timing.Add(ctx, timing.SandboxStart, total-process)
}

func (r *Runner) logger() *slog.Logger {
	if r.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Logger
}

// runOne runs a single check and interprets its outcome.
func (r *Runner) runOne(ctx context.Context, dir string, c Check) Result {
	res := Result{Name: c.Name, Kind: c.Kind, ExitCode: -1}
	if err := c.Validate(); err != nil {
		res.Summary = err.Error()
		return res
	}
	scratch, err := sandbox.NewScratch(r.ScratchRoot)
	if err != nil {
		res.Summary = fmt.Sprintf("check %q: %v", c.Name, err)
		return res
	}
	defer func() {
		if err := scratch.Remove(); err != nil {
			r.logger().Warn("remove check scratch directory", "check", c.Name, "err", err)
		}
	}()
	spec, note := r.specWithGit(ctx, dir, scratch, c)
	if note != "" {
		res.Notes = append(res.Notes, note)
	}
	argv, junitPath, err := r.command(ctx, dir, c, spec, scratch)
	res.Command = argv
	if err != nil {
		res.Command = c.Command
		res.Summary = err.Error()
		res.NotStarted = errors.Is(err, ErrToolMissing)
		return notStarted(res)
	}

	// The interpreter a pyenv shim would pick, asked once instead of on every run.
	argv, spec.Env = r.unshim(ctx, spec, scratch, argv)

	remove, err := writeGenerated(dir, c.Generated)
	defer remove()
	if err != nil {
		res.Summary, res.NotStarted = err.Error(), true
		return notStarted(res)
	}
	records := c.Kind == KindPytest || c.Kind == KindUnittest
	if records {
		// Which data files the tests read themselves (see reads.go).
		if !recordsReads(argv) {
			res.Notes = append(res.Notes, "the tests' reads of data files are not recorded: the check's Python runs with -I or -E, which ignores PYTHONPATH, so ticketd's recording cannot load; a data file the tests read is not kept in its base version")
		}
		argv, spec.Env = withReadsPlugin(argv, spec.Env, scratch.Dir, spec.InnerReports(), c.Kind == KindPytest)
	}
	timeout := cmp.Or(c.Timeout, DefaultTimeout)
	out, err := r.exec(ctx, spec, scratch, argv, timeout, c.Kind == KindRuff)
	res.Duration = out.duration
	res.ExitCode = out.exitCode
	res.TimedOut = out.timedOut
	res.Output = out.combined.tail(cmp.Or(r.OutputCap, DefaultOutputCap))
	if err != nil {
		res.Summary = err.Error()
		res.NotStarted = out.exitCode == -1 && !out.timedOut && ctx.Err() == nil
		res.Cancelled = ctx.Err() != nil
		return notStarted(res)
	}
	if out.oversize != "" {
		res.Passed, res.Abort, res.Summary = false, out.oversize, out.oversize
		return res
	}

	combined := out.combined.tail(parseCap)
	var rec runRecord
	if records {
		rec = collectReads(scratch.Dir)
		res.Reads, res.Lists, res.Modules = ownOutput(rec.reads, rec.writes), rec.lists, rec.modules
		res.Rewrites = rewrittenTests(dir, c, rec.writes)
	}
	p := interpret(c.Kind, junitPath, dir, out, combined)
	if c.Kind == KindUnittest {
		p = p.withRecorded(rec.unittest, out.exitCode)
	}
	res.Passed, res.Summary, res.Findings = p.passed, p.summary, p.findings
	res.Tests, res.Errored = p.tests, p.errored
	if len(p.outcomes) > 0 {
		res.Outcomes = p.outcomes
	}
	res.ImportSkips = p.importSkips
	res.AsyncSkips = p.asyncSkips
	if !res.Passed && !res.NotStarted && toolAbsent(out.exitCode, combined) {
		res.NotStarted = true
		res.Summary = fmt.Sprintf("the tool did not start (exit %d): %s", out.exitCode, res.Summary)
	}
	where := ""
	if out.timedOut {
		where = stoppedAt(combined, dir)
	}
	res = r.interrupted(ctx, notStarted(res), c, timeout, where)
	if note := limitNote(r.Limits, res, combined); note != "" && r.Sandbox != sandbox.ModeNone {
		res.Summary = note + ". " + res.Summary
	}
	if out.stopped != "" && !res.Cancelled {
		res.Passed = false
		res.Summary = out.stopped + ". " + res.Summary
	}
	return res
}

// interpret reads a finished command's result by its kind's report.
func interpret(kind, junitPath, dir string, out execOutput, combined string) parsed {
	switch kind {
	case KindPytest:
		return interpretPytest(junitPath, dir, out.exitCode, combined)
	case KindUnittest:
		return interpretUnittest(dir, out.exitCode, combined)
	case KindRuff:
		return interpretRuff(dir, out.exitCode, out.stdout.String(), combined)
	case KindMypy:
		return interpretMypy(dir, out.exitCode, combined)
	}
	return parsed{passed: out.exitCode == 0, summary: exitSummary(out.exitCode, combined)}
}

// interrupted fails a check that timed out or was cancelled, whatever its output said:
// a cut-short run judges nothing. A time-out's summary says where the check's Python
// processes were when they were stopped (where, from stoppedAt), when it is known.
func (r *Runner) interrupted(ctx context.Context, res Result, c Check, timeout time.Duration, where string) Result {
	switch {
	case res.TimedOut:
		res.Passed = false
		killed := "the sandbox and every process in it killed"
		if r.Sandbox == sandbox.ModeNone {
			killed = "process group killed"
		}
		why := ""
		if c.TimeoutNote != "" {
			why = c.TimeoutNote + "; "
		}
		res.Summary = fmt.Sprintf("timed out after %s (%s%s)", timeout, why, killed)
		if where != "" {
			res.Summary += stoppedAtNote + where
		}
	case ctx.Err() != nil:
		res.Passed, res.Cancelled = false, true
		res.Summary = "cancelled: " + context.Cause(ctx).Error()
	}
	return res
}

// specWithGit is spec plus, in a sandbox, a read-only view of the worktree's git state
// (tests that call git need one); without it the check still runs.
func (r *Runner) specWithGit(ctx context.Context, dir string, scratch *sandbox.Scratch, c Check) (sandbox.Spec, string) {
	spec, note := r.spec(ctx, dir, scratch, c)
	if r.Sandbox != sandbox.ModeNone {
		view, err := scratch.GitView(dir)
		if err != nil {
			r.logger().Debug("check runs without git: no view of the worktree's git state", "check", c.Name, "err", err)
		}
		spec.GitView = view
	}
	return spec, note
}

// notStarted sets Abort on a result whose tool could not start. Such a check gates nothing:
// comparing "failed here" with "failed at the base too" would pass any change, so the
// attempt must stop with the reason instead.
func notStarted(res Result) Result {
	if res.NotStarted && res.Abort == "" {
		res.Abort = fmt.Sprintf("check %q could not start, so it cannot judge the change (an environment problem, not the fix): %s", res.Name, res.Summary)
	}
	return res
}

// spec is the sandbox of one check in dir, and the note saying what ticketd added to its
// environment ("" when nothing): src/ on PYTHONPATH for a src/ layout nothing configures.
func (r *Runner) spec(ctx context.Context, dir string, scratch *sandbox.Scratch, c Check) (sandbox.Spec, string) {
	base := r.BaseEnv
	if base == nil {
		base = os.Environ()
	}
	pass := append(slices.Clone(r.PassEnv), c.PassEnv...)
	// The PYTHONPATH the sandbox would pass on: what src/ is prepended to.
	passed, _ := sandbox.Env(sandbox.EnvRequest{Base: base, Pass: pass, Deny: r.DenyEnv, Set: r.ExtraEnv})
	srcPath, note := withSrcPath(dir, c, passed)
	set := append(noBytecode(), r.ExtraEnv...)
	env, dropped := sandbox.Env(sandbox.EnvRequest{
		Base: base,
		Pass: pass,
		Deny: r.DenyEnv,
		Set:  append(append(append(set, srcPath...), envActivation(c, passed)...), c.envPairs()...),
	})
	if len(dropped) > 0 {
		r.logger().LogAttrs(ctx, slog.LevelWarn, "passed variables withheld from the check: they are an endpoint's key or their value looks like a credential",
			slog.String("check", c.Name), slog.Any("names", dropped))
	}
	return sandbox.Spec{
		Mode:     r.Sandbox,
		Bwrap:    r.Bwrap,
		Dir:      dir,
		Reports:  scratch.Dir,
		TmpSize:  cmp.Or(r.MaxWorktreeSize, DefaultMaxWorktreeSize),
		Hide:     r.Hide,
		ReadOnly: r.ReadOnly,
		Env:      env,
		User:     r.User,
		Limits:   r.Limits,
	}, note
}

// noBytecode keeps Python from writing bytecode into the worktree, so what one check
// compiled can never be loaded by the next; bytecode that code under test writes on purpose
// (a planted pytest.pyc) is removed by the worktree guard before the next check. The cache
// is not moved out of the worktree (PYTHONPYCACHEPREFIX): a prefix is where Python looks for
// every module's bytecode, so the system's own compiled standard library and tools would be
// compiled again by every check (measured: pytest's start 0.23 s of CPU without, 1.0 s with).
func noBytecode() []string {
	return []string{"PYTHONDONTWRITEBYTECODE=1"}
}

// redactResult cuts credentials out of what a check printed (secret.Redact) before the
// result leaves the runner for the model, the database, reports and logs: a test can print
// whatever it can read. Test ids and file paths stay as they are, for the gate.
func redactResult(res Result) Result {
	res.Summary = secret.Redact(res.Summary)
	res.Output = secret.Redact(res.Output)
	res.Abort = secret.Redact(res.Abort)
	if len(res.Findings) > 0 {
		res.Findings = slices.Clone(res.Findings)
		for i := range res.Findings {
			res.Findings[i].Message = secret.Redact(res.Findings[i].Message)
		}
	}
	return res
}

// parsed is what a kind's interpreter makes of a finished command.
type parsed struct {
	passed   bool
	summary  string
	findings []Finding
	// tests and errored count a test report's cases; tests is -1 without a report.
	tests, errored int
	// outcomes is each test's outcome by id, nil when the report names none.
	outcomes map[string]Outcome
	// importSkips are the tests skipped for a module that would not import.
	importSkips []ImportSkip
	// asyncSkips are the `async def` tests skipped for want of an async plugin.
	asyncSkips []string
}

// toolAbsent recognises a tool that never ran: the shell's "command not found"
// status, or a Python without the module (`python -m mypy` where mypy is not
// installed), whose output is one line, not a run.
func toolAbsent(code int, output string) bool {
	if code == 126 || code == 127 {
		return true
	}
	out := strings.TrimSpace(output)
	if strings.HasPrefix(out, "bwrap: execvp ") { // the sandbox could not find or run it
		return true
	}
	return code == 1 && strings.Count(out, "\n") < 2 && strings.Contains(out, ": No module named ")
}

// command completes a check's argv for its kind. An empty command gets the
// kind's default, run by the interpreter the project uses (see Interpreter).
// For pytest it adds a JUnit report in the check's reports directory, outside
// the worktree, and returns the report's path on the host.
func (r *Runner) command(ctx context.Context, dir string, c Check, spec sandbox.Spec, scratch *sandbox.Scratch) (argv []string, junitPath string, err error) {
	argv, err = r.baseArgv(ctx, dir, c)
	if err != nil {
		return nil, "", err
	}
	switch c.Kind {
	case KindPytest:
		const report = "ticketd-junit.xml"
		junitPath = filepath.Join(scratch.Dir, report)
		argv = pytestArgs(argv, c, dir, spec.InnerReports()+"/"+report)
	case KindUnittest:
		argv = unittestArgs(argv, c)
	case KindRuff:
		if !hasFlag(argv, "format") {
			if !hasFlag(argv, "--output-format") {
				argv = append(argv, "--output-format=json")
			}
			if !hasFlag(argv, "--no-cache", "--cache-dir") {
				argv = append(argv, "--no-cache") // no .ruff_cache in the worktree
			}
			// A project's `fix = true` makes ruff rewrite what it can and report only the
			// rest: a fixable violation the change brings in would pass, and fail the
			// project's own lint. The operator's --fix stays theirs.
			if !hasFlag(argv, "--fix", "--no-fix", "--fix-only") {
				argv = append(argv, "--no-fix")
			}
		}
	case KindMypy:
		if !hasFlag(argv, "--cache-dir") {
			argv = append(argv, "--cache-dir=/dev/null") // no .mypy_cache in the worktree
		}
		// A configuration's pretty = true wraps messages and moves the error code to a line
		// of its own: the findings are read from mypy's plain one-line form.
		if !hasFlag(argv, "--pretty", "--no-pretty") {
			argv = append(argv, "--no-pretty")
		}
	}
	return argv, junitPath, nil
}

// baseArgv is the check's command before the kind's own arguments: a python one-liner
// gets an interpreter, an empty command the kind's default, and a given one its tool
// looked up.
func (r *Runner) baseArgv(ctx context.Context, dir string, c Check) ([]string, error) {
	argv := slices.Clone(c.Command)
	switch {
	case c.Kind == KindPython:
		py, err := r.Interpreter(ctx, dir, c, "pytest")
		if err != nil {
			// Any python3 will do for a one-liner when none has pytest.
			py = debianPython
		}
		return append([]string{py}, argv...), nil
	case len(argv) == 0:
		return r.defaultCommand(ctx, dir, c)
	default:
		return r.lookTool(ctx, dir, c, argv)
	}
}

// pytestArgs adds what the gate needs from pytest: a JUnit report at inner (the path
// inside the sandbox), the short summary, every module's result and only the named tests.
func pytestArgs(argv []string, c Check, dir, inner string) []string {
	if len(c.Only) > 0 {
		argv = withoutPathArgs(pinConfig(argv, c, dir), dir)
	}
	argv = append(argv, c.ExtraArgs...)
	// xunit1 keeps the file and line attributes that xunit2 drops;
	// the cache provider would write .pytest_cache into the worktree.
	// A repository's --junit-prefix would rename every test id (no target or baseline would
	// match), and its junit_logging copies each passing test's output into the report,
	// which a chatty suite grows past maxReportBytes: the gate reads neither.
	argv = append(argv, "--junitxml="+inner, "-o", "junit_family=xunit1", "--junit-prefix=", "-o", "junit_logging=no",
		"-p", "no:cacheprovider")
	if !hasFlag(argv, "-q", "--quiet", "-v", "--verbose") {
		argv = append(argv, "-q")
	}
	// -rX lists non-strict xpasses, which the JUnit report writes as plain passes (the
	// last -r wins over the repository's addopts).
	argv = append(argv, "-rfEX")
	// One module that fails to import must not hide every other test's result: the gate
	// compares test by test, and a base that ran nothing cannot gate a fix.
	argv = append(argv, "--continue-on-collection-errors")
	// Nor may the first failure end the run: -x or --maxfail=N in addopts (or the command)
	// would stop at a failure the base already has, and every test after it would run neither
	// at the base nor in the change, so a regression there would never show. The last
	// --maxfail wins; 0 is pytest's "no limit".
	argv = append(argv, "--maxfail=0")
	if !hasFlag(argv, "--rootdir", "-c", "--config-file") && !hasPytestConfig(dir, c.PytestVersion) {
		argv = append(argv, "--rootdir="+dir)
	}
	for _, id := range c.Only {
		if id != "" && !strings.HasPrefix(id, "-") { // a node id, never an option
			argv = append(argv, nodeArg(id))
		}
	}
	return argv
}

// pinConfig makes a run that names its own tests (c.Only) read the configuration file, and
// have the rootdir, that the check's own command has: pytest finds its configuration from
// the paths it is given, so a bare `pytest` at a root whose setup.cfg has no pytest section
// reads none, while `pytest tests/test_x.py::test_y` reads a tests/pytest.ini (its
// filterwarnings, markers, addopts): the selected run and the whole suite would judge one
// test by different settings. When the two differ, -c names the whole run's file
// (/dev/null for none, with the conftest cut-off pytest then takes: the rootdir).
func pinConfig(argv []string, c Check, dir string) []string {
	if hasFlag(argv, "-c", "--config-file") || hasFlag(c.ExtraArgs, "-c", "--config-file") {
		return argv // the command or the check's condition names its file: both runs read it
	}
	stat := func(p string) (bool, bool) {
		if filepath.IsAbs(p) {
			return false, false
		}
		fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(p)))
		return err == nil, err == nil && fi.IsDir()
	}
	exists := func(p string) bool { ok, _ := stat(p); return ok }
	var paths []string
	for _, i := range discover.PathArgs(argv, exists) {
		paths = append(paths, argv[i])
	}
	read := discover.DirReader(dir)
	whole := discover.ConfigFor(read, c.PytestVersion, paths, stat)
	if whole == discover.ConfigFor(read, c.PytestVersion, c.Only, stat) {
		return argv
	}
	// The whole run's rootdir: its file's folder, or the root when pytestArgs gives it
	// --rootdir (no configuration at the root).
	rootdir := dir
	if whole != "" && hasPytestConfig(dir, c.PytestVersion) {
		rootdir = filepath.Join(dir, filepath.FromSlash(path.Dir(whole)))
	}
	argv = slices.Clone(argv)
	if whole == "" {
		argv = append(argv, "-c", os.DevNull)
		if !hasFlag(argv, "--confcutdir") {
			argv = append(argv, "--confcutdir="+rootdir)
		}
	} else {
		argv = append(argv, "-c", filepath.Join(dir, filepath.FromSlash(whole)))
	}
	if !hasFlag(argv, "--rootdir") {
		argv = append(argv, "--rootdir="+rootdir)
	}
	return argv
}

// nodeArg is the argument that runs the test id names: its node id, or for a module that
// failed to collect (reported as file::dotted.module, which pytest knows no node by) its
// file, which pytest imports again.
func nodeArg(id string) string {
	file, rest, ok := strings.Cut(id, "::")
	if ok && strings.HasSuffix(file, ".py") && rest == strings.ReplaceAll(strings.TrimSuffix(file, ".py"), "/", ".") {
		return file
	}
	return id
}

// unittestArgs adds -v and the named tests to a unittest command.
func unittestArgs(argv []string, c Check) []string {
	argv = append(argv, c.ExtraArgs...) // a Condition's (-s src -t src)
	// -v names every test with its outcome, so a skip or an expected failure is never
	// read as a pass; only `-m unittest` is known to take it.
	if isModuleRun(argv, "unittest") && !hasFlag(argv, "-v", "--verbose") {
		argv = append(argv, "-v")
	}
	// unittest's -k selects by the test's dotted id within the configured discovery (its
	// start folder and pattern kept), so the named tests run alone.
	for _, id := range c.Only {
		if id, _, _ = strings.Cut(id, " "); id != "" && !strings.HasPrefix(id, "-") {
			argv = append(argv, "-k", id)
		}
	}
	return argv
}

// defaultCommand is the argv of a check configured without a command.
func (r *Runner) defaultCommand(ctx context.Context, dir string, c Check) ([]string, error) {
	switch c.Kind {
	case KindPytest, KindMypy, KindUnittest:
		module := map[string]string{KindPytest: "pytest", KindMypy: "mypy", KindUnittest: "unittest"}[c.Kind]
		py, err := r.Interpreter(ctx, dir, c, module)
		if err != nil {
			return nil, fmt.Errorf("check %q: %w", c.Name, err)
		}
		switch c.Kind {
		case KindMypy:
			// The project's files setting is what its CI types; `.` would replace it.
			if _, ok := discover.MypyTargets(discover.DirReader(dir)); ok {
				return []string{py, "-m", "mypy"}, nil
			}
			return []string{py, "-m", "mypy", "."}, nil
		case KindUnittest:
			return []string{py, "-m", "unittest", "discover"}, nil
		}
		return []string{py, "-m", "pytest"}, nil
	case KindRuff:
		return r.lookTool(ctx, dir, c, []string{"ruff", "check", "."})
	}
	return nil, fmt.Errorf("%w %q: command is empty", ErrInvalidCheck, c.Name)
}

// isModuleRun reports whether argv runs `python -m module`.
func isModuleRun(argv []string, module string) bool {
	for i := 1; i+1 < len(argv); i++ {
		if argv[i] == "-m" {
			return argv[i+1] == module
		}
	}
	return false
}

// withoutPathArgs drops the path arguments of a pytest command (pkg/test, tests/test_x.py)
// for a run that names its own tests: "alone" must not mean "with the whole folder".
func withoutPathArgs(argv []string, dir string) []string {
	drop := discover.PathArgs(argv, func(p string) bool {
		_, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p)))
		return err == nil && !filepath.IsAbs(p)
	})
	if len(drop) == 0 {
		return argv
	}
	out := make([]string, 0, len(argv))
	for i, a := range argv {
		if !slices.Contains(drop, i) {
			out = append(out, a)
		}
	}
	return out
}

// hasFlag reports whether argv has one of flags, alone or as flag=value.
func hasFlag(argv []string, flags ...string) bool {
	for _, a := range argv {
		for _, f := range flags {
			if a == f || strings.HasPrefix(a, f+"=") {
				return true
			}
		}
	}
	return false
}

// execOutput is what a finished process left behind.
type execOutput struct {
	combined *tailBuffer
	stdout   *headBuffer
	exitCode int
	timedOut bool
	oversize string // why the size limit stopped the check; "" when it did not
	stopped  string // why the sandbox stopped it (sandbox.Stopped: its memory as a whole)
	duration time.Duration
}

// errOversize is the cancellation cause when the worktree outgrew its limit.
var errOversize = errors.New("worktree outgrew its size limit")

// errTimedOut is the cancellation cause when the check ran out of time.
var errTimedOut = errors.New("the check ran out of time")

// afterTimeout calls f once timeout has passed, unless the returned stop is called first:
// time.AfterFunc, or the test's own (Runner.timer).
func (r *Runner) afterTimeout(timeout time.Duration, f func()) (stop func()) {
	if r.timer != nil {
		return r.timer(timeout, f)
	}
	t := time.AfterFunc(timeout, f)
	return func() { t.Stop() }
}

// exec runs argv under spec in its own process group. Under bwrap the group's
// leader is bwrap: killing it kills the namespace's init, and with it every
// process of the check, setsid or not. On time-out, cancellation or an
// oversize worktree the group is killed with SIGKILL; after a normal exit the
// group is killed too, so a stray background child cannot outlive the check.
// The leader is always reaped by Wait. Output goes through pipes we own, so
// Wait never blocks on a grandchild holding them. With splitStdout, stdout is
// also kept apart (from its start) for parsers of a JSON document.
func (r *Runner) exec(ctx context.Context, spec sandbox.Spec, scratch *sandbox.Scratch, argv []string, timeout time.Duration, splitStdout bool) (execOutput, error) {
	out := execOutput{combined: newTailBuffer(parseCap), stdout: newHeadBuffer(stdoutCap), exitCode: -1}
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	cmd, err := spec.Command(cctx, argv)
	if err != nil {
		return out, fmt.Errorf("could not start %q in %s: %w", strings.Join(argv, " "), spec.Dir, err)
	}
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	p, err := newOutputPipes(cmd, splitStdout)
	if err != nil {
		return out, fmt.Errorf("run %s: create pipe: %w", argv[0], err)
	}
	defer p.closeRead()

	start := time.Now()
	err = cmd.Start()
	p.closeWrite() // the child holds its own copies; ours would keep the reads from ending
	if err != nil {
		out.duration = time.Since(start)
		return out, fmt.Errorf("could not start %q in %s: %w; check the command in the config", strings.Join(argv, " "), spec.Dir, err)
	}
	copying := p.copyTo(out)
	watch := r.startSizeWatch(ctx, cctx, cancel, []string{spec.Dir, scratch.Dir}, cmd.Process.Pid)
	exited := make(chan struct{})
	var timedOut atomic.Bool
	stopTimer := r.afterTimeout(timeout, func() {
		// Out of time: Python's processes write where they are (stackdump.go), then the
		// sandbox is killed.
		timedOut.Store(true)
		if abortPythons(cmd.Process.Pid) > 0 {
			select {
			case <-exited:
			case <-time.After(dumpGrace):
			}
		}
		cancel(errTimedOut)
	})
	defer stopTimer()

	waitErr := cmd.Wait()
	close(exited)
	out.duration = time.Since(start)
	out.stopped = sandbox.Stopped(cmd)
	_ = killGroup(cmd.Process.Pid) // stragglers; ESRCH when none
	cancel(nil)
	out.oversize = watch.wait()
	p.drain(copying)

	if cmd.ProcessState != nil {
		out.exitCode = cmd.ProcessState.ExitCode()
	}
	out.timedOut = timedOut.Load() && ctx.Err() == nil && out.oversize == ""
	var ee *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &ee) && !out.timedOut && ctx.Err() == nil && out.oversize == "" {
		return out, fmt.Errorf("wait for %q: %w", strings.Join(argv, " "), waitErr)
	}
	return out, nil
}

// outputPipes are the pipes a check writes to. One pipe for both streams keeps their
// order as a terminal would show it (2>&1); only a JSON-on-stdout kind gets stdout apart
// (errR, errW nil otherwise).
type outputPipes struct {
	outR, outW, errR, errW *os.File
}

func newOutputPipes(cmd *exec.Cmd, splitStdout bool) (*outputPipes, error) {
	var p outputPipes
	var err error
	if p.outR, p.outW, err = os.Pipe(); err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = p.outW, p.outW
	if !splitStdout {
		return &p, nil
	}
	if p.errR, p.errW, err = os.Pipe(); err != nil {
		p.outW.Close()
		p.outR.Close()
		return nil, err
	}
	cmd.Stderr = p.errW
	return &p, nil
}

func (p *outputPipes) closeWrite() {
	p.outW.Close()
	if p.errW != nil {
		p.errW.Close()
	}
}

func (p *outputPipes) closeRead() {
	p.outR.Close()
	if p.errR != nil {
		p.errR.Close()
	}
}

// copyTo copies the pipes into out's buffers until they close.
func (p *outputPipes) copyTo(out execOutput) *sync.WaitGroup {
	var wg sync.WaitGroup
	if p.errR != nil {
		wg.Go(func() { io.Copy(io.MultiWriter(out.combined, out.stdout), p.outR) })
		wg.Go(func() { io.Copy(out.combined, p.errR) })
	} else {
		wg.Go(func() { io.Copy(out.combined, p.outR) })
	}
	return &wg
}

// drain waits for the copies to end. A process that left the group (setsid, without the
// sandbox) still holds a pipe: after drainTimeout the read ends are closed under it.
func (p *outputPipes) drain(copying *sync.WaitGroup) {
	drained := make(chan struct{})
	go func() { copying.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(drainTimeout):
		p.closeRead()
		<-drained
	}
}

// sizeWatch watches the size of a running check's worktree and scratch folder.
type sizeWatch struct {
	wg       sync.WaitGroup
	oversize string // why the limit stopped the check; read after wait
}

// startSizeWatch cancels the check (errOversize) once dirs outgrow the size limit, and looks
// once more when the check has ended (ctx, the check's own, is done) unless parent, the
// attempt's, is done too; no watch runs without a limit.
func (r *Runner) startSizeWatch(parent, ctx context.Context, cancel context.CancelCauseFunc, dirs []string, pid int) *sizeWatch {
	w := &sizeWatch{}
	limit := cmp.Or(r.MaxWorktreeSize, DefaultMaxWorktreeSize)
	if limit <= 0 {
		return w
	}
	w.wg.Go(func() {
		w.oversize = watchSize(ctx, cmp.Or(r.SizePoll, defaultSizePoll), limit, usage{dirs: dirs, pid: pid})
		if w.oversize != "" {
			cancel(errOversize)
			return
		}
		if parent.Err() != nil {
			return // the attempt was cancelled: nothing to judge
		}
		// The check has ended: one last look at what it left, so that nothing it wrote after
		// the last look during its run (a burst before it exits, a path git cannot see)
		// escapes the watch.
		total, deep := usage{dirs: dirs}.measure(parent, limit)
		w.oversize = sizeVerdict(total, deep, limit)
	})
	return w
}

// wait ends with the watch (its context is cancelled when the check ends) and says why
// the size limit stopped the check, "" when it did not.
func (w *sizeWatch) wait() string {
	w.wg.Wait()
	return w.oversize
}

// killGroup sends SIGKILL to the process group led by pid.
func killGroup(pid int) error {
	err := syscall.Kill(-pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}
