package validate

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// A test counts as passing only when the runner says it ran and passed: pytest's skips,
// xfails and (non-strict, which its JUnit report writes as a pass) xpasses, and unittest's
// skips, expected failures and unexpected successes are each named for what they are.
func TestOutcomes(t *testing.T) {
	p := interpretPytest("", "/w", 1, "")
	if p.outcomes != nil {
		t.Errorf("no report: outcomes %v, want none", p.outcomes)
	}
	r, err := parseJUnit(readTestdata(t, "junit/outcomes.xml"), "/w")
	if err != nil {
		t.Fatal(err)
	}
	markXPassed(r.outcomes, string(readTestdata(t, "pytest-outcomes.txt")))
	wantPytest := map[string]Outcome{
		"test_a.py::test_pass": OutcomePassed, "test_a.py::test_skip": OutcomeSkipped,
		"test_a.py::test_xfail": OutcomeXFailed, "test_a.py::test_xpass": OutcomeXPassed,
		"test_a.py::test_fail": OutcomeFailed, "test_a.py::test_err": OutcomeError,
		"test_a.py::TestK::test_p[1]": OutcomePassed, "test_a.py::TestK::test_p[2]": OutcomeFailed,
	}
	if !maps.Equal(r.outcomes, wantPytest) {
		t.Errorf("pytest outcomes:\n got %v\nwant %v", r.outcomes, wantPytest)
	}
	// A module that fails to collect is its own id, its path, not a test of the same name.
	col, err := parseJUnit([]byte(`<testsuites><testsuite><testcase classname="" name="tests.test_c" file="tests/test_c.py"><error message="collection failure">E ImportError</error></testcase><testcase classname="test_c" name="test_c" file="test_c.py"/></testsuite></testsuites>`), "/w")
	if err != nil || !maps.Equal(col.outcomes, map[string]Outcome{"tests/test_c.py": OutcomeError, "test_c.py::test_c": OutcomePassed}) {
		t.Errorf("collection error: %v %v", col.outcomes, err)
	}
	// A run a KeyboardInterrupt cut short writes an empty case for the test it stopped in: no
	// test, and never a pass.
	cut, err := parseJUnit([]byte(`<testsuites><testsuite tests="2"><testcase classname="test_c" name="test_a" file="test_c.py"/><testcase time="0.000" /></testsuite></testsuites>`), "/w")
	if err != nil || !maps.Equal(cut.outcomes, map[string]Outcome{"test_c.py::test_a": OutcomePassed}) || cut.summary() != "1 passed" {
		t.Errorf("interrupted run: %v %q %v", cut.outcomes, cut.summary(), err)
	}
	if got, want := r.summary(), "2 failed, 1 error, 2 passed, 1 skipped, 1 xfailed, 1 xpassed (not counted as passing)"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}

	u := parseUnittest(string(readTestdata(t, "unittest/verbose.txt")), "/w")
	wantUnit := map[string]Outcome{
		"test_u.T.test_ok": OutcomePassed, "test_u.T.test_doc": OutcomePassed, "test_u.T.test_skip": OutcomeSkipped,
		"test_u.T.test_xf": OutcomeXFailed, "test_u.T.test_xp": OutcomeXPassed, "test_u.T.test_fail": OutcomeFailed,
		"test_u.T.test_err": OutcomeError, "test_u.T.test_sub": OutcomeFailed, "test_u.T.test_sub (i=1)": OutcomeFailed,
	}
	if !maps.Equal(u.outcomes, wantUnit) {
		t.Errorf("unittest outcomes:\n got %v\nwant %v", u.outcomes, wantUnit)
	}

	// A test that prints a fake "... ok" before it skips itself is still skipped.
	noisy := "test_s (m.T.test_s) ... noise ... ok\nskipped 'later'\ntest_o (m.T.test_o) ... ok\n" + strings.Repeat("-", 70) + "\nRan 2 tests in 0.001s\n\nOK (skipped=1)\n"
	if got := verboseOutcomes(noisy); got["m.T.test_s"] != OutcomeSkipped || got["m.T.test_o"] != OutcomePassed {
		t.Errorf("noisy output: %v", got)
	}
}

func TestOutcomeOf(t *testing.T) {
	outcomes := map[string]Outcome{"f.py::a": OutcomePassed, "f.py::p[1]": OutcomePassed, "f.py::p[2]": OutcomeSkipped, "f.py::q[1]": OutcomePassed}
	for id, want := range map[string]Outcome{"f.py::a": OutcomePassed, "f.py::p": OutcomeSkipped, "f.py::q": OutcomePassed, "f.py::gone": OutcomeMissing, "f.py::p[2]": OutcomeSkipped} {
		if got := OutcomeOf(outcomes, id); got != want {
			t.Errorf("OutcomeOf(%q) = %s, want %s", id, got, want)
		}
	}
	if got := slices.Sorted(maps.Keys(Counts(outcomes))); !slices.Equal(got, []Outcome{OutcomePassed, OutcomeSkipped}) {
		t.Errorf("counts keys %v", got)
	}
}
