package validate

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// unittestExitNoTests is the status of `python -m unittest` (3.12+) when it
// ran no tests; 3.11 and earlier exit 0 with "Ran 0 tests".
const unittestExitNoTests = 5

var (
	// unittestHeader matches "FAIL: test_x (pkg.mod.Class.test_x) (i=1)";
	// before 3.11 the parenthesis holds only "pkg.mod.Class".
	unittestHeader = regexp.MustCompile(`^(FAIL|ERROR|UNEXPECTED SUCCESS): (\S+) \(([^)]*)\)(.*)$`)
	unittestFrame  = regexp.MustCompile(`^\s+File "([^"]+)", line (\d+)`)
	unittestRan    = regexp.MustCompile(`^Ran (\d+) tests? in `)
)

// unittestReport is what parseUnittest reads from unittest's text output.
type unittestReport struct {
	ran      int    // -1 when no "Ran N tests" line was seen
	status   string // final line: "OK", "OK (skipped=1)", "FAILED (failures=1)", "NO TESTS RAN"
	findings []Finding
	errored  int // ERROR: blocks (a test that raised, or a module that failed to import)
	// outcomes is each test's outcome from the verbose lines ("test_x (m.C.test_x) ... ok")
	// and the FAIL:/ERROR: blocks; empty without -v.
	outcomes map[string]Outcome
}

// parseUnittest reads the FAIL:/ERROR: blocks, "Ran N tests" and the final
// status of `python -m unittest` output. Each block's file and line are its
// traceback's deepest frame; its message is the exception text after it.
func parseUnittest(output, dir string) unittestReport {
	r := unittestReport{ran: -1, outcomes: verboseOutcomes(output)}
	lines := strings.Split(strings.ReplaceAll(output, "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if m := unittestRan.FindStringSubmatch(line); m != nil {
			r.ran, _ = strconv.Atoi(m[1])
			if s := nextNonBlank(lines[i+1:]); s != "" {
				r.status = s
			}
			continue
		}
		// A block header counts only right under a "====" rule: a test may print lines
		// that look like headers.
		m := unittestHeader.FindStringSubmatch(line)
		if m == nil || i == 0 || !isRule(lines[i-1], '=') {
			continue
		}
		body, next := unittestBlock(lines, i+1)
		i = next - 1
		r.addBlock(m[1], unittestBlockFinding(m, body, dir))
	}
	return r
}

// nextNonBlank returns the first line of lines with text, trimmed, or "".
func nextNonBlank(lines []string) string {
	for _, l := range lines {
		if s := strings.TrimSpace(l); s != "" {
			return s
		}
	}
	return ""
}

// unittestBlock returns a FAIL:/ERROR: block's body, which runs from the dashed rule after
// the header (at lines[start]) to the next "====" or "----" rule, and the index it ends at.
func unittestBlock(lines []string, start int) (body []string, end int) {
	j := start
	if j < len(lines) && isRule(lines[j], '-') {
		j++
	}
	for ; j < len(lines) && !isRule(lines[j], '=') && !isRule(lines[j], '-'); j++ {
		body = append(body, lines[j])
	}
	return body, j
}

// unittestBlockFinding makes the finding of one block: m is its header's match, body its
// traceback and message.
func unittestBlockFinding(m, body []string, dir string) Finding {
	f := Finding{Test: unittestID(m[2], m[3], m[4])}
	lastFrame := -1
	for k, b := range body {
		if fm := unittestFrame.FindStringSubmatch(b); fm != nil {
			f.File = relPath(dir, fm[1])
			f.Line, _ = strconv.Atoi(fm[2])
			lastFrame = k
		}
	}
	f.Message = exceptionText(body[lastFrame+1:])
	switch {
	case f.Message != "":
	case m[1] == "UNEXPECTED SUCCESS":
		f.Message = "unexpected success of a test marked expectedFailure"
	default:
		f.Message = strings.ToLower(m[1])
	}
	return f
}

// exceptionText is the exception's text after a traceback's last frame, without the
// indented source lines, caret markers and blank separators.
func exceptionText(after []string) string {
	var msg []string
	for _, b := range after {
		if b == "" || strings.HasPrefix(b, " ") || strings.HasPrefix(b, "\t") {
			continue
		}
		msg = append(msg, b)
	}
	if len(msg) == 0 {
		return ""
	}
	return clip(limitLines(strings.Join(msg, "\n"), 8), 600)
}

// addBlock records one FAIL:/ERROR:/UNEXPECTED SUCCESS: block: its finding and its test's
// outcome, which a failing subTest passes on to its test.
func (r *unittestReport) addBlock(kind string, f Finding) {
	o := OutcomeFailed
	switch kind {
	case "ERROR":
		r.errored++
		o = OutcomeError
	case "UNEXPECTED SUCCESS":
		o = OutcomeXPassed
	}
	r.findings = append(r.findings, f)
	setOutcome(r.outcomes, f.Test, o)
	if parent, _, sub := strings.Cut(f.Test, " "); sub {
		setOutcome(r.outcomes, parent, o) // a failing subTest fails its test
	}
}

var (
	// unittestVerbose matches a verbose line's test, "test_x (pkg.mod.Class.test_x)", and
	// what follows it: " ... ok", or nothing when a docstring line comes next, or a
	// subTest's " (i=1) ... FAIL".
	unittestVerbose = regexp.MustCompile(`^\s*(\w+) \(([\w.]+)\)(.*)$`)
	unittestStatus  = regexp.MustCompile(`(?:^|\.\.\. )(ok|FAIL|ERROR|skipped.*|expected failure|unexpected success)$`)
)

// verboseOutcomes reads `python -m unittest -v` lines: each test's header, then its status
// at the end of the same line (after " ... ") or of a later one (after a docstring line, or
// output the test printed), up to the next test. The FAIL:/ERROR: blocks confirm failures;
// a test's printed noise can make a pass look worse, never a failure, skip or expected
// failure look like a pass (the worst report stands).
func verboseOutcomes(output string) map[string]Outcome {
	out := map[string]Outcome{}
	pending := ""
	for _, line := range strings.Split(strings.ReplaceAll(output, "\r\n", "\n"), "\n") {
		line = strings.TrimRight(line, " ")
		if isRule(line, '=') || isRule(line, '-') {
			pending = "" // the failure blocks and the totals follow
			continue
		}
		if m := unittestVerbose.FindStringSubmatch(line); m != nil {
			paren, rest := m[2], m[3]
			params := ""
			if strings.HasPrefix(rest, " (") {
				if end := strings.Index(rest, ")"); end > 0 {
					params, rest = rest[1:end+1], rest[end+1:]
				}
			}
			id := unittestID(m[1], paren, params)
			pending = id
			if !strings.Contains(rest, " ... ") && !strings.HasSuffix(rest, " ...") {
				continue // a docstring line follows
			}
			line = rest
		}
		if pending == "" {
			continue
		}
		sm := unittestStatus.FindStringSubmatch(strings.TrimSpace(line))
		if sm == nil {
			continue
		}
		// Every status seen until the next test counts, the worst standing: a test that
		// prints "... ok" before its real "skipped" is still skipped.
		setOutcome(out, pending, statusOutcome(sm[1]))
		if parent, _, sub := strings.Cut(pending, " "); sub && statusOutcome(sm[1]).Failing() {
			setOutcome(out, parent, statusOutcome(sm[1]))
		}
	}
	return out
}

func statusOutcome(status string) Outcome {
	switch {
	case status == "ok":
		return OutcomePassed
	case status == "FAIL":
		return OutcomeFailed
	case status == "expected failure":
		return OutcomeXFailed
	case status == "unexpected success":
		return OutcomeXPassed
	case strings.HasPrefix(status, "skipped"):
		return OutcomeSkipped
	}
	return OutcomeError
}

// unittestID is the dotted id of a test ("pkg.mod.Class.test_x") plus any
// subTest parameters. Python 3.11 puts the method in the parenthesis,
// earlier versions only the class.
func unittestID(method, paren, rest string) string {
	id := paren
	if !strings.HasSuffix(paren, "."+method) {
		id = paren + "." + method
	}
	if s := strings.TrimSpace(rest); s != "" {
		id += " " + s
	}
	return id
}

// isRule reports a unittest separator line: 70 '=' or '-' characters.
func isRule(line string, c byte) bool {
	line = strings.TrimRight(line, "\r ")
	if len(line) < 20 {
		return false
	}
	for i := range len(line) {
		if line[i] != c {
			return false
		}
	}
	return true
}

// interpretUnittest decides a unittest run: exit 0 passes; "no tests ran"
// (exit 5 on 3.12+, "Ran 0 tests" before) passes as "no tests collected",
// like pytest's exit 5.
func interpretUnittest(dir string, code int, output string) parsed {
	r := parseUnittest(output, dir)
	if code == unittestExitNoTests || (code == 0 && r.ran == 0) {
		return parsed{passed: true, summary: "no tests collected"}
	}
	// tests is what the evidence step and the health check count on, as for pytest's report:
	// the tests that ran, or -1 when the output never said.
	p := parsed{passed: code == 0, findings: r.findings, tests: r.ran, errored: min(r.errored, max(r.ran, 0))}
	if len(r.outcomes) > 0 {
		p.outcomes = r.outcomes
	}
	switch {
	case r.ran >= 0 && r.status != "":
		p.summary = fmt.Sprintf("ran %d tests: %s", r.ran, r.status)
	case r.ran >= 0:
		p.summary = fmt.Sprintf("ran %d tests, exit status %d", r.ran, code)
	default:
		p.summary = exitSummary(code, output)
	}
	if code != 0 && len(p.findings) == 0 {
		if tail := outputFinding(output); tail.Message != "" {
			p.findings = []Finding{tail}
		}
	}
	return p
}

// withRecorded sets p, read from a unittest run's text, beside what the run's result was
// given (recorded, by test id; see readsAuditSource): a test the text calls passed that the
// result was told failed or errored fails, and a run whose text shows no failure (and that
// exited with code, 0) fails with each test the result was told failed. Code under test can
// rewrite what unittest prints (a stream of its own in place of stderr) and the exit status
// (os._exit at exit) without naming anything of the runner; it cannot, so plainly, change
// what the runner's own result saw. Without a record (a Python without audit hooks, a run
// that ignores PYTHONPATH) p stands as read.
func (p parsed) withRecorded(recorded map[string]Outcome, code int) parsed {
	if len(recorded) == 0 {
		return p
	}
	hidden := code == 0 && !slices.ContainsFunc(p.findings, func(f Finding) bool { return f.Test != "" })
	var ids []string
	for id, o := range recorded {
		if o.Failing() && (OutcomeOf(p.outcomes, id) == OutcomePassed || hidden) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return p
	}
	slices.Sort(ids)
	p.outcomes = maps.Clone(p.outcomes)
	if p.outcomes == nil {
		p.outcomes = map[string]Outcome{}
	}
	p.findings = slices.Clone(p.findings)
	for _, id := range ids {
		p.outcomes[id] = recorded[id]
		p.findings = append(p.findings, Finding{Test: id, Message: fmt.Sprintf("unittest's result was told this test %s, though the run's output says otherwise: something in the run (the code under test) rewrote what unittest printed", recorded[id])})
	}
	p.passed = false
	p.summary = fmt.Sprintf("%d test(s) recorded as failing that the output hid; %s", len(ids), p.summary)
	return p
}
