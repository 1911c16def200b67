package validate

import (
	"slices"
	"testing"
)

// A unittest run's text is checked against what its result was told: a test the text calls
// passed that the result was told failed fails, a run whose text hides every failure fails
// with the recorded ones, and without a record, or where the text already says so, nothing
// changes.
func TestWithRecorded(t *testing.T) {
	passed := parsed{passed: true, summary: "ran 2 tests: OK", tests: 2,
		outcomes: map[string]Outcome{"m.C.test_a": OutcomePassed, "m.C.test_b": OutcomePassed}}
	failing := parsed{passed: false, summary: "ran 2 tests: FAILED (failures=1)", tests: 2,
		outcomes: map[string]Outcome{"m.C.test_a": OutcomeFailed, "m.C.test_b": OutcomePassed},
		findings: []Finding{{Test: "m.C.test_a", Message: "AssertionError"}}}
	for _, tt := range []struct {
		name     string
		p        parsed
		recorded map[string]Outcome
		code     int
		passed   bool
		failing  []string // the tests with a finding after
	}{
		{name: "no record", p: passed, passed: true},
		{name: "record agrees", p: passed, recorded: map[string]Outcome{"m.C.test_a": OutcomePassed, "m.C.test_b": OutcomePassed}, passed: true},
		{name: "text says passed, result was told failed", p: passed, recorded: map[string]Outcome{"m.C.test_a": OutcomeFailed, "m.C.test_b": OutcomePassed},
			failing: []string{"m.C.test_a"}},
		{name: "text hides a failure it never names", p: parsed{passed: true, summary: "ran 1 tests: OK", tests: 1}, recorded: map[string]Outcome{"m.C.test_x": OutcomeError},
			failing: []string{"m.C.test_x"}},
		{name: "text already says failed", p: failing, code: 1, recorded: map[string]Outcome{"m.C.test_a": OutcomeFailed, "m.C.test_b": OutcomePassed},
			failing: []string{"m.C.test_a"}},
		{name: "an error the text names under another id", p: failing, code: 1, recorded: map[string]Outcome{"setUpClass (m.D)": OutcomeError},
			failing: []string{"m.C.test_a"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.p.withRecorded(tt.recorded, tt.code)
			var failing []string
			for _, f := range got.findings {
				failing = append(failing, f.Test)
			}
			if got.passed != tt.passed || !slices.Equal(failing, tt.failing) {
				t.Errorf("passed %v, findings for %q; want %v, %q", got.passed, failing, tt.passed, tt.failing)
			}
			for _, id := range tt.failing {
				if !OutcomeOf(got.outcomes, id).Failing() {
					t.Errorf("outcome of %s %q; want failing", id, OutcomeOf(got.outcomes, id))
				}
			}
		})
	}
}
