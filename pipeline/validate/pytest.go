package validate

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ticketd/ticketd/pipeline/sandbox"
)

// ErrPytestNotFound is returned by ResolvePytest when no working pytest exists.
var ErrPytestNotFound = errors.New("pytest not found")

// pytestExitNoTests is pytest's exit status when it collected no tests.
const pytestExitNoTests = 5

// pytestExitInterrupted is pytest's exit status when the run was interrupted.
const pytestExitInterrupted = 2

// maxReportBytes caps the JUnit report read back from a check: a suite of tens of thousands
// of tests with tracebacks stays well under it.
const maxReportBytes = 64 << 20

// ResolvePytest returns the argv prefix of a pytest that actually runs:
// `<python> -m pytest` for the first python3 on PATH that imports pytest, else
// /usr/bin/python3 (a pyenv shim often lacks pytest while Debian's python has
// it). `python -m pytest` rather than the pytest script, because only it puts
// the repository root on sys.path, as a project that is not installed needs.
// Runner resolves per worktree (a .venv wins); this is the system fallback.
func ResolvePytest(ctx context.Context) ([]string, error) {
	py, err := findPython(ctx, "pytest")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPytestNotFound, err)
	}
	return []string{py, "-m", "pytest"}, nil
}

// maxProbeOutput bounds what a probe's stdout keeps: a version, a path.
const maxProbeOutput = 256

// probeOutput runs a candidate briefly: the start of what it printed, and why it did not
// work.
func probeOutput(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env, _ = sandbox.Env(sandbox.EnvRequest{Base: os.Environ()})
	var stderr bytes.Buffer
	stdout := newHeadBuffer(maxProbeOutput)
	cmd.Stdout, cmd.Stderr = stdout, &stderr
	if err := cmd.Run(); err != nil {
		if last := lastLines(stderr.String(), 1); len(last) == 1 {
			return "", fmt.Errorf("%w: %s", err, clip(last[0], 120))
		}
		return "", err
	}
	return stdout.String(), nil
}

// interpretPytest reads the JUnit report of a finished pytest run. Exit
// status 5 (no tests collected) passes with the summary "no tests
// collected": a repository without tests must not block every fix, and
// which tests must pass is the gate's decision, not this runner's.
func interpretPytest(junitPath, dir string, code int, output string) parsed {
	var report junitReport
	var parseErr error
	data, err := sandbox.ReadReport(junitPath, maxReportBytes)
	if err == nil && len(data) > 0 {
		report, parseErr = parseJUnit(data, dir)
	}
	if errors.Is(err, sandbox.ErrReportNotFile) || errors.Is(err, sandbox.ErrReportTooLarge) {
		// Something in the check replaced the report (a conftest swapping it for a FIFO or
		// a link to /dev/zero): the run cannot be read, so it does not pass.
		p := parsed{summary: fmt.Sprintf("pytest exited %d; %v", code, err), tests: -1}
		if tail := outputFinding(output); tail.Message != "" {
			p.findings = []Finding{tail}
		}
		return p
	}
	if code == pytestExitNoTests {
		// Nothing ran, and that is known: every test is missing from this run, never
		// unknown. Outcomes are therefore empty (or the report's skipped modules), not nil,
		// so the gate sees a base test that the change made go uncollected (code that skips
		// every test module importing it) as missing, as it would in a run that collected
		// something else.
		outcomes := map[string]Outcome{}
		if err == nil && parseErr == nil && report.outcomes != nil {
			outcomes = report.outcomes
		}
		return parsed{passed: true, summary: "no tests collected", tests: 0, outcomes: outcomes}
	}
	if err != nil || len(data) == 0 || parseErr != nil {
		// Usage errors, a broken conftest, a crash: no report, only output. pytest writes its
		// report whenever it ends by itself, so even exit status 0 without one is a run cut
		// short (os._exit(0) in a test or fixture, or in the code under test), which shows
		// nothing passing: it does not pass.
		p := parsed{summary: fmt.Sprintf("pytest exited %d without a test report", code), tests: -1}
		if code == 0 {
			p.summary += " (something ended it before it could write one, such as os._exit in a test, a fixture or the code under test)"
		}
		if parseErr != nil {
			p.summary = fmt.Sprintf("pytest exited %d; unreadable test report: %v", code, parseErr)
		}
		if tail := outputFinding(output); tail.Message != "" {
			p.findings = []Finding{tail}
		} else if code == 0 {
			// Exit 0 says nothing failed: the finding is that the run was cut short. A run
			// killed (a time-out, -1) keeps no finding of its own, so the time-out is judged
			// as one (slow machine or slow change), not as a failure the change caused.
			p.findings = []Finding{{Message: p.summary}}
		}
		return p
	}
	markXPassed(report.outcomes, output)
	p := parsed{passed: code == 0, summary: report.summary(), findings: report.findings,
		tests: report.tests, errored: report.errors, outcomes: report.outcomes, importSkips: report.importSkips, asyncSkips: report.asyncSkips}
	if code == pytestExitInterrupted {
		// The run stopped before every test ran (a KeyboardInterrupt, or pytest.exit, in a
		// test, a fixture or the code under test): the report holds only the tests before it,
		// and the tests after it must not look merely absent beside the base's failures.
		p.findings = append(p.findings, Finding{Message: "pytest was interrupted (exit 2): the run stopped before every test ran; the tests after the point where it stopped did not run (a KeyboardInterrupt or pytest.exit in a test, a fixture or the code under test)"})
	}
	if code != 0 && len(report.findings) == 0 {
		p.summary += fmt.Sprintf(" (pytest exited %d)", code)
	}
	return p
}

// junitReport is what ticketd needs from a JUnit XML report.
type junitReport struct {
	tests, failed, errors, skipped int
	findings                       []Finding
	// outcomes is each test's outcome by node id; skipped counts xfailed tests too, which
	// outcomes tells apart (and xpassed ones, once markXPassed has read the summary).
	outcomes map[string]Outcome
	// importSkips counts the tests skipped because a module would not import
	// (pytest.importorskip), by the missing module.
	importSkips []ImportSkip
	// asyncSkips are the tests skipped as `async def` tests with no async plugin.
	asyncSkips []string
}

// errorCount is n errors as pytest and mypy write it: "1 error", "2 errors".
func errorCount(n int) string {
	if n == 1 {
		return "1 error"
	}
	return fmt.Sprintf("%d errors", n)
}

// summary counts the cases as pytest does, never a skip, an xfail or an xpass as passed.
func (r junitReport) summary() string {
	n := Counts(r.outcomes)
	xfailed, xpassed := n[OutcomeXFailed], n[OutcomeXPassed]
	passed := r.tests - r.failed - r.errors - r.skipped - xpassed
	var parts []string
	if r.failed > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", r.failed))
	}
	if r.errors > 0 {
		parts = append(parts, errorCount(r.errors))
	}
	parts = append(parts, fmt.Sprintf("%d passed", max(passed, 0)))
	if skipped := r.skipped - xfailed; skipped > 0 {
		parts = append(parts, fmt.Sprintf("%d skipped", skipped))
	}
	if xfailed > 0 {
		parts = append(parts, fmt.Sprintf("%d xfailed", xfailed))
	}
	if xpassed > 0 {
		parts = append(parts, fmt.Sprintf("%d xpassed (not counted as passing)", xpassed))
	}
	return strings.Join(parts, ", ")
}

type junitCase struct {
	Classname string         `xml:"classname,attr"`
	Name      string         `xml:"name,attr"`
	File      string         `xml:"file,attr"`
	Line      string         `xml:"line,attr"`
	Failures  []junitProblem `xml:"failure"`
	Errors    []junitProblem `xml:"error"`
	Skipped   []junitProblem `xml:"skipped"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// crashLine matches pytest's "path.py:12: ExceptionType" traceback lines.
var crashLine = regexp.MustCompile(`(?m)^([^\s:][^:\n]*\.py):(\d+):`)

// parseJUnit reads every <testcase> anywhere in a JUnit XML document (pytest
// nests them in <testsuites><testsuite>; other tools in a bare <testsuite>).
// A failure's file and line are the deepest frame of its traceback — where
// the exception was raised — falling back to the test's own location.
func parseJUnit(data []byte, dir string) (junitReport, error) {
	r := junitReport{outcomes: map[string]Outcome{}}
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return r, fmt.Errorf("parse JUnit XML: %w", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok || se.Name.Local != "testcase" {
			continue
		}
		var tc junitCase
		if err := dec.DecodeElement(&tc, &se); err != nil {
			return r, fmt.Errorf("parse JUnit XML testcase: %w", err)
		}
		r.addCase(tc, dir)
	}
	if r.tests == 0 && !bytes.Contains(data, []byte("<testsuite")) {
		return r, errors.New("parse JUnit XML: no <testsuite> element")
	}
	return r, nil
}

// addCase counts one <testcase>, records its outcome and makes a finding of each of its
// failures and errors. A case with both (a failing call and a failing tear-down) is an error;
// an empty one is not a test.
func (r *junitReport) addCase(tc junitCase, dir string) {
	if tc.Name == "" && tc.Classname == "" && tc.File == "" && len(tc.Failures)+len(tc.Errors) == 0 {
		// pytest writes an empty <testcase/> for the test a KeyboardInterrupt or pytest.exit
		// cut short: it names no test and never ran to a pass.
		return
	}
	r.tests++
	id := junitCaseID(tc)
	switch {
	case len(tc.Failures) > 0:
		r.failed++
		setOutcome(r.outcomes, id, OutcomeFailed)
	case len(tc.Errors) > 0:
		r.errors++
		setOutcome(r.outcomes, id, OutcomeError)
	case len(tc.Skipped) > 0:
		r.skipped++
		if tc.Skipped[0].Type == "pytest.xfail" {
			setOutcome(r.outcomes, id, OutcomeXFailed)
		} else {
			setOutcome(r.outcomes, id, OutcomeSkipped)
			r.addImportSkip(tc, tc.Skipped[0])
			if strings.HasPrefix(strings.TrimSpace(tc.Skipped[0].Message), asyncSkipped) && !slices.Contains(r.asyncSkips, id) {
				r.asyncSkips = append(r.asyncSkips, id)
			}
		}
	default:
		setOutcome(r.outcomes, id, OutcomePassed)
	}
	if len(tc.Failures) > 0 && len(tc.Errors) > 0 {
		setOutcome(r.outcomes, id, OutcomeError) // a failing call and a failing tear-down
	}
	for _, p := range append(tc.Failures, tc.Errors...) {
		r.findings = append(r.findings, junitFinding(tc, p, dir))
	}
}

// asyncSkipped opens pytest's skip reason for an `async def` test that no installed plugin
// runs (pytest 7 and 8: "async def function and no async plugin installed (see warnings)").
const asyncSkipped = "async def function and no async plugin installed"

// importSkipped is pytest.importorskip's skip reason: "could not import 'pvectorc': No module
// named 'pvectorc'" (the module asked for, then the one that was missing).
var importSkipped = regexp.MustCompile(`^(?:Skipped: )?could not import '[^']+': No module named '([^']+)'`)

// addImportSkip counts a skipped case whose reason is an importorskip of a missing module:
// a test's (the skip's message), or a whole module's, skipped at collection (the message
// says "collection skipped", the text holds the reason).
func (r *junitReport) addImportSkip(tc junitCase, skip junitProblem) {
	m := importSkipped.FindStringSubmatch(strings.TrimSpace(skip.Message))
	if m == nil && skip.Message == "collection skipped" {
		if _, reason, ok := strings.Cut(skip.Text, `"Skipped: `); ok {
			m = importSkipped.FindStringSubmatch(reason)
		}
	}
	if m == nil {
		return
	}
	i := slices.IndexFunc(r.importSkips, func(s ImportSkip) bool { return s.Module == m[1] })
	if i < 0 {
		r.importSkips = append(r.importSkips, ImportSkip{Module: m[1]})
		i = len(r.importSkips) - 1
	}
	r.importSkips[i].Tests++
	if file := tc.File; file != "" && !slices.Contains(r.importSkips[i].Files, file) {
		r.importSkips[i].Files = append(r.importSkips[i].Files, file)
	}
}

// junitCaseID is the id a case's outcome is recorded under: its node id, or for a module
// that failed to collect, its path (pytest's own id for it).
func junitCaseID(tc junitCase) string {
	if tc.Classname == "" && tc.File != "" && tc.Name == strings.ReplaceAll(strings.TrimSuffix(tc.File, ".py"), "/", ".") {
		return tc.File
	}
	return junitTestID(tc)
}

func junitFinding(tc junitCase, p junitProblem, dir string) Finding {
	f := Finding{Test: junitTestID(tc), File: relPath(dir, tc.File)}
	if n, err := strconv.Atoi(tc.Line); err == nil && n >= 0 {
		f.Line = n + 1 // pytest writes the 0-based line of the test function
	}
	if m := crashLine.FindAllStringSubmatch(p.Text, -1); len(m) > 0 {
		last := m[len(m)-1]
		if n, err := strconv.Atoi(last[2]); err == nil {
			f.File, f.Line = relPath(dir, last[1]), n
		}
	}
	msg := strings.TrimSpace(p.Message)
	// The message of an error is often generic ("collection failure");
	// the last "E   " line of the traceback names the real exception.
	var eLast string
	for _, line := range strings.Split(p.Text, "\n") {
		if rest, ok := strings.CutPrefix(line, "E "); ok {
			eLast = strings.TrimSpace(rest)
		}
	}
	if eLast == "" && msg == "collection failure" {
		// An error pytest raised itself while collecting (a conftest.py hook written for
		// another pytest) has no "E " line: its text is the message.
		eLast = firstLine(p.Text)
	}
	if eLast != "" && !strings.Contains(msg, eLast) {
		switch msg {
		case "":
			msg = eLast
		case "collection failure":
			// The exception first: reports and feedback show a finding's first line.
			msg = eLast + " (collection failure)"
		default:
			msg += "\n" + eLast
		}
	}
	if when, ok := setupPhase(msg); ok && eLast != "" && !strings.Contains(firstLine(msg), eLast) {
		// pytest's message of a fixture lookup error is the test's source from its
		// decorators on, so the cause would be cut off: "fixture 'mocker' not found" first.
		msg = "failed on " + when + ": " + eLast
	}
	if msg == "" {
		msg = strings.TrimSpace(p.Type)
	}
	f.Message = clip(limitLines(msg, 8), 600)
	return f
}

// setupPhase is "setup" or "teardown" for the message pytest's JUnit report gives an error
// outside the test's call (`failed on setup with "..."`).
func setupPhase(msg string) (string, bool) {
	for _, when := range []string{"setup", "teardown"} {
		if strings.HasPrefix(msg, "failed on "+when+" with ") {
			return when, true
		}
	}
	return "", false
}

// junitTestID rebuilds pytest's node id (tests/test_x.py::TestC::test_y)
// from xunit1 attributes, or classname::name without a file.
func junitTestID(tc junitCase) string {
	if tc.File == "" {
		if tc.Classname == "" {
			return tc.Name
		}
		return tc.Classname + "::" + tc.Name
	}
	module := strings.ReplaceAll(strings.TrimSuffix(tc.File, ".py"), "/", ".")
	switch {
	case tc.Classname == module:
		return tc.File + "::" + tc.Name
	case strings.HasPrefix(tc.Classname, module+"."):
		classes := strings.ReplaceAll(strings.TrimPrefix(tc.Classname, module+"."), ".", "::")
		return tc.File + "::" + classes + "::" + tc.Name
	case tc.Classname == "":
		return tc.File + "::" + tc.Name
	}
	return tc.Classname + "::" + tc.Name
}

// limitLines keeps the first n lines of s.
func limitLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		return strings.Join(lines[:n], "\n") + "\n…"
	}
	return s
}
