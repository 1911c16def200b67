// Package validate runs a repository's configured checks (pytest, unittest,
// ruff, mypy or any command) in a worktree, safely — inside the sandbox
// (pipeline/sandbox), with a time-out that kills everything the check
// started, an allowlisted environment, capped output and a size limit —
// and turns their output into short structured findings the maker model can
// act on: which test failed, at which file and line, with what message.
//
// A test run that collects no tests (pytest exit 5, unittest "Ran 0 tests"
// or exit 5) passes with the summary "no tests collected": a repository
// without tests must not block every fix; deciding which tests a fix must
// make pass belongs to the gate that compares against the baseline.
package validate

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"time"

	"github.com/ticketd/ticketd/pipeline/discover"
)

// Check kinds. The kind decides how a command is completed (pytest gets a
// JUnit report, ruff JSON output) and how its output is parsed.
const (
	KindPytest   = "pytest"
	KindUnittest = "unittest"
	KindRuff     = "ruff"
	KindMypy     = "mypy"
	KindCommand  = "command"
	// KindPython runs Command as the arguments of the project's interpreter (see
	// Runner.Interpreter), e.g. ["-c", "from calc import double; assert double(2) == 4"]:
	// how the judge's criteria are verified in the same environment as the tests.
	KindPython = "python"
)

// Check.FullSuite's values.
const (
	FullSuiteNightly     = "nightly"
	FullSuiteEverySubmit = "every_submit"
)

// FullSuiteModes lists the accepted Check.FullSuite values ("" is FullSuiteNightly).
var FullSuiteModes = []string{"", FullSuiteNightly, FullSuiteEverySubmit}

// Kinds lists the accepted Check.Kind values.
var Kinds = []string{KindPytest, KindUnittest, KindRuff, KindMypy, KindCommand, KindPython}

// DefaultTimeout bounds a check whose Timeout is zero: long enough for a real
// test suite, short enough that a hung test cannot eat the night.
const DefaultTimeout = 10 * time.Minute

// ErrInvalidCheck is returned by Check.Validate.
var ErrInvalidCheck = errors.New("invalid check")

// Check is one validator from the configuration.
type Check struct {
	Name    string        `yaml:"name"`
	Kind    string        `yaml:"kind"`    // one of Kinds
	Command []string      `yaml:"command"` // argv; empty means the kind's default (pytest: `<python> -m pytest`, mypy: `<python> -m mypy` when its configuration names files, else `<python> -m mypy .`, ruff: `ruff check .`, unittest: `<python> -m unittest discover`)
	Timeout time.Duration `yaml:"timeout"` // e.g. "5m"; zero means DefaultTimeout
	// PassEnv names variables of the daemon's environment this check may see besides the
	// sandbox's allowlist; the config fills it from the repository's pass_env.
	PassEnv []string `yaml:"-"`
	// Python is the interpreter of pytest, mypy and unittest checks; empty means the
	// worktree's .venv/bin/python when present, else the first python3 that imports the
	// tool. The repository's `python:` key fills it for every check of the repository.
	Python string `yaml:"python"`
	// Env is NAME: value pairs set for this check, after everything else. Setting
	// PYTHONPATH here (even to "") replaces the src/ layout's automatic PYTHONPATH (see
	// SrcLayout).
	Env map[string]string `yaml:"env,omitempty"`
	// FullSuite says when the whole test suite decides a submit (pytest checks): "" or
	// FullSuiteNightly, the tests the change can reach decide each submit, the base's results
	// standing for the rest, and the whole suite runs once a night over the night's fixes
	// before they are published; FullSuiteEverySubmit, every accepted submit runs it all.
	FullSuite string `yaml:"full_suite,omitempty"`
	// Only names tests to run instead of the whole suite (targets, suspected flaky tests):
	// pytest node ids, which replace the command's path arguments, or unittest's dotted ids,
	// each selected with -k. Not configurable.
	Only []string `yaml:"-"`
	// ExtraArgs are options added to the command, and PythonPath folders (relative to the
	// worktree) put first on PYTHONPATH: a Condition found at the base commit (see Adapt).
	// Not configurable.
	ExtraArgs  []string `yaml:"-" json:"-"`
	PythonPath []string `yaml:"-" json:"-"`
	// Generated are files written into the worktree for each run of the check and removed
	// after it: a Condition's Files. Not configurable.
	Generated []GeneratedFile `yaml:"-" json:"-"`
	// EnvDir is the repository's environment (pipeline/envsetup) the check runs in: its bin/
	// first on PATH, VIRTUAL_ENV set, and the worktree (with its src/ when that holds
	// packages) first on PYTHONPATH, so that an editable install, whose path hooks point at
	// the checkout the environment was built from, never replaces the code under test. Set
	// by the daemon for the night; not configurable.
	EnvDir string `yaml:"-" json:",omitempty"`
	// PytestVersion is the version of the pytest a pytest check runs with ("7.2.1"), found
	// by the night (Runner.PytestVersion) for discovery: pytest < 9 reads other
	// configuration than pytest 9. "" when not known. Not configurable.
	PytestVersion string `yaml:"-" json:"-"`
	// TimeoutNote says where Timeout came from when it was derived rather than configured
	// (see BaselineTimeouts); the time-out's summary repeats it. Not configurable.
	TimeoutNote string `yaml:"-" json:"-"`
}

// Validate reports a check the Runner could not run, naming the field and
// the bad value, so that config loading can reject it up front.
func (c Check) Validate() error {
	if c.Name == "" {
		return fmt.Errorf("%w: name is empty (kind %q)", ErrInvalidCheck, c.Kind)
	}
	if !slices.Contains(Kinds, c.Kind) {
		return fmt.Errorf("%w %q: kind %q is not one of %v", ErrInvalidCheck, c.Name, c.Kind, Kinds)
	}
	if len(c.Command) == 0 && (c.Kind == KindCommand || c.Kind == KindPython) {
		return fmt.Errorf("%w %q: command is empty; give the argv, e.g. [%q, \"check\", \".\"]", ErrInvalidCheck, c.Name, c.Kind)
	}
	if !slices.Contains(FullSuiteModes, c.FullSuite) {
		return fmt.Errorf("%w %q: full_suite %q is not one of %q (empty means %q)", ErrInvalidCheck, c.Name, c.FullSuite, FullSuiteModes[1:], FullSuiteNightly)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("%w %q: timeout %s is negative", ErrInvalidCheck, c.Name, c.Timeout)
	}
	for _, name := range slices.Sorted(maps.Keys(c.Env)) {
		if !envName.MatchString(name) {
			return fmt.Errorf("%w %q: env: %q is not an environment variable name (letters, digits and _, not starting with a digit)", ErrInvalidCheck, c.Name, name)
		}
	}
	return nil
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// envPairs is Env as NAME=value pairs, sorted by name.
func (c Check) envPairs() []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(c.Env)) {
		out = append(out, name+"="+c.Env[name])
	}
	return out
}

// Finding is one problem a check reported: a failing test, a lint or type
// error. File is relative to the worktree when it lies inside it; Line is
// 1-based, 0 when unknown; Test names the test (pytest node id, unittest
// id) or the rule code (ruff, mypy).
type Finding struct {
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Test    string `json:"test,omitempty"`
	Message string `json:"message"`
}

// Result is the outcome of one check. Output is the tail of the combined
// stdout and stderr, capped by the Runner.
type Result struct {
	Name     string        `json:"name"`
	Kind     string        `json:"kind"`
	Passed   bool          `json:"passed"`
	ExitCode int           `json:"exit_code"` // -1 when killed or not started
	TimedOut bool          `json:"timed_out"`
	Duration time.Duration `json:"duration"`
	Summary  string        `json:"summary"` // one line, e.g. "2 failed, 5 passed"
	// Command is the argv that ran (or was to run), for messages to a human.
	Command []string `json:"command,omitempty"`
	// NotStarted is set when the tool could not start or is not installed: the
	// environment is broken, not the code under test.
	NotStarted bool `json:"not_started,omitempty"`
	// Tests and Errored count the test cases a test check's report holds and those
	// that errored (collection or set-up errors); -1 Tests means no report was read.
	Tests    int       `json:"tests"`
	Errored  int       `json:"errored,omitempty"`
	Findings []Finding `json:"findings,omitempty"`
	// Outcomes is each test's outcome by id (pytest node id, unittest dotted id) as the
	// runner reported it: a test counts as passing only when it is OutcomePassed here.
	Outcomes map[string]Outcome `json:"outcomes,omitempty"`
	Output   string             `json:"output,omitempty"`
	// Abort is set when the check broke a limit that makes the attempt unsafe to continue
	// (the worktree outgrew MaxWorktreeSize): the attempt must stop with this reason.
	Abort string `json:"abort,omitempty"`
	// Notes say what ticketd changed about how the check ran, for the baseline note and
	// the report (e.g. src/ put on PYTHONPATH).
	Notes []string `json:"notes,omitempty"`
	// Condition is how the check had to run at the base commit to gate fixes (see Adapt);
	// nil when as configured.
	Condition *Condition `json:"condition,omitempty"`
	// Hang says what never ended at the base commit where no condition can leave it out
	// (a unittest test, a pytest fixture), and what the operator can do; set by Adapt.
	Hang string `json:"hang,omitempty"`
	// ImportSkips are the tests pytest skipped because a module would not import
	// (pytest.importorskip), by the missing module: an optional dependency, or the
	// repository's own compiled extension that nothing builds into the worktree.
	ImportSkips []ImportSkip `json:"import_skips,omitempty"`
	// AsyncSkips are the tests pytest skipped because they are `async def` and no async
	// plugin (pytest-asyncio, anyio, ...) is installed: they never ran, whatever the code.
	AsyncSkips []string `json:"async_skips,omitempty"`
	// Cancelled is set when the run was cut short from outside (the attempt's budget, a
	// shutdown): it says nothing about the code under test.
	Cancelled bool `json:"cancelled,omitempty"`
	// Reads are the worktree's files (not Python source) a pytest or unittest run's Python
	// code, its started processes' included, opened for reading, each with the worktree file
	// that opened it (see FileRead): at the base commit, which data files the base's tests
	// read themselves.
	Reads []FileRead `json:"reads,omitempty"`
	// Lists are the worktree's folders (not its root) such a run's Python code listed, each
	// with the worktree file that did, leaving out those it made files in: at the base
	// commit, the folders whose files the base's tests find themselves (golden/*.json).
	Lists []FileRead `json:"lists,omitempty"`
	// Modules are the top-level modules such a run's Python imported from outside the
	// worktree, the standard library's aside (installed libraries: yaml, six): at the base commit,
	// the names a new module on the worktree's import path would stand in for, inside the
	// checks.
	Modules []string `json:"modules,omitempty"`
	// Rewrites say which of the tests' own Python files a pytest run wrote over, renamed over
	// or removed, and which test did ("test tests/test_a.py::test_x rewrote or removed
	// tests/test_b.py"): at the base commit, a suite that cannot judge a change (Health).
	Rewrites []string `json:"rewrites,omitempty"`
}

// Aborted returns the first result's Abort reason, "" when none broke a limit.
func Aborted(results []Result) string {
	for _, r := range results {
		if r.Abort != "" {
			return r.Abort
		}
	}
	return ""
}

// Passed reports whether every result passed. No results pass: a repository
// without configured checks is gated by the later review steps alone.
func Passed(results []Result) bool {
	for _, r := range results {
		if !r.Passed {
			return false
		}
	}
	return true
}

// DiscoverOptions are the test checks' commands as discover.Read takes them: where the
// repository's test runners look for tests depends on which runners its checks use.
func DiscoverOptions(checks []Check) discover.Options {
	var o discover.Options
	for _, c := range checks {
		switch c.Kind {
		case KindPytest:
			argv := c.Command
			if len(c.ExtraArgs) > 0 {
				// A Condition's options (-o python_files=... for a tests.py) after the
				// kind's default command: discovery reads the -o overrides among them.
				argv = slices.Clone(c.Command)
				if len(argv) == 0 {
					argv = []string{"python3", "-m", "pytest"}
				}
				argv = append(argv, c.ExtraArgs...)
			}
			o.Pytest = append(o.Pytest, argv)
			o.PytestVersion = cmp.Or(o.PytestVersion, c.PytestVersion)
		case KindUnittest:
			argv := c.Command
			if len(c.ExtraArgs) > 0 {
				// A Condition's start folder (-s src -t src) after the kind's default command.
				argv = slices.Clone(c.Command)
				if len(argv) == 0 {
					argv = []string{"python3", "-m", "unittest", "discover"}
				}
				argv = append(argv, c.ExtraArgs...)
			}
			o.Unittest = append(o.Unittest, argv)
		}
	}
	return o
}
