package validate

import (
	"regexp"
	"strings"
)

// Outcome is how one test ended, in the runner's own words. Only OutcomePassed is a pass:
// a skipped, xfailed or xpassed test did not show that the code does what it tests, and
// the gate never counts it as evidence or as a test that still passes.
type Outcome string

const (
	OutcomePassed  Outcome = "passed"
	OutcomeFailed  Outcome = "failed"
	OutcomeError   Outcome = "error"   // set-up, tear-down or collection error
	OutcomeSkipped Outcome = "skipped" // skip marker, skipTest, skipif
	OutcomeXFailed Outcome = "xfailed" // expected failure that failed
	OutcomeXPassed Outcome = "xpassed" // expected failure that passed (pytest non-strict, unittest's "unexpected success")
	// OutcomeMissing is not reported by a runner: it is what OutcomeOf answers for a test the
	// run did not report at all (deleted, renamed, deselected, never collected).
	OutcomeMissing Outcome = "missing"
)

// severity orders outcomes: when a test is reported twice (a failing call and an erroring
// tear-down, parameter instances read under one id), the worst one stands.
func (o Outcome) severity() int {
	switch o {
	case OutcomePassed:
		return 0
	case OutcomeSkipped:
		return 1
	case OutcomeXFailed:
		return 2
	case OutcomeXPassed:
		return 3
	case OutcomeMissing:
		return 4
	case OutcomeFailed:
		return 5
	}
	return 6 // error, or anything unknown
}

// Failing reports an outcome the gate counts as a failure of the test (a test that ran and
// did not pass, or could not run).
func (o Outcome) Failing() bool { return o == OutcomeFailed || o == OutcomeError }

// setOutcome records o for id in m, keeping the worse of two reports.
func setOutcome(m map[string]Outcome, id string, o Outcome) {
	if id == "" {
		return
	}
	if old, ok := m[id]; ok && old.severity() >= o.severity() {
		return
	}
	m[id] = o
}

// OutcomeOf is how test id ended in outcomes: its own entry, or for a pytest id named
// without parameters ("f.py::test_x") the worst of its instances ("f.py::test_x[1]", …);
// OutcomeMissing when the run reported neither.
func OutcomeOf(outcomes map[string]Outcome, id string) Outcome {
	if o, ok := outcomes[id]; ok {
		return o
	}
	worst, found := OutcomePassed, false
	for k, o := range outcomes {
		if strings.HasPrefix(k, id+"[") {
			found = true
			if o.severity() > worst.severity() {
				worst = o
			}
		}
	}
	if !found {
		return OutcomeMissing
	}
	return worst
}

// xpassLine matches pytest's short summary line of a non-strict xpass ("XPASS id reason"
// in pytest 7, "XPASS id - reason" in 8), which its JUnit report writes as a plain pass.
var xpassLine = regexp.MustCompile(`(?m)^XPASS (.+)$`)

// markXPassed turns the passes that pytest's summary (-rX) names as XPASS into
// OutcomeXPassed. A line names a test when it is the test's id, alone or followed by a
// space; the longest id wins, since node ids may hold spaces in their parameters.
func markXPassed(outcomes map[string]Outcome, output string) {
	for _, m := range xpassLine.FindAllStringSubmatch(output, -1) {
		rest := strings.TrimRight(m[1], "\r")
		best := ""
		for id, o := range outcomes {
			if o != OutcomePassed || len(id) <= len(best) {
				continue
			}
			if rest == id || strings.HasPrefix(rest, id+" ") {
				best = id
			}
		}
		if best != "" {
			outcomes[best] = OutcomeXPassed
		}
	}
}

// Counts tallies outcomes, for summaries that never call a skip a pass.
func Counts(outcomes map[string]Outcome) map[Outcome]int {
	out := map[Outcome]int{}
	for _, o := range outcomes {
		out[o]++
	}
	return out
}
