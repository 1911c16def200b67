package pipeline

import (
	"slices"
	"testing"

	"github.com/ticketd/ticketd/pipeline/validate"
)

// A strict XPASS of a test's base version counts as passing only where the test xfailed at
// the base, the change touched its file and the change's version passes.
func TestUnmarkedXfails(t *testing.T) {
	const id = "tests/test_calc.py::test_high"
	xpass := validate.Finding{Test: id, Message: "[XPASS(strict)] clamp ignores hi"}
	view := func(fs ...validate.Finding) []validate.Result {
		return []validate.Result{{Name: "tests", Kind: validate.KindPytest, ExitCode: 1, Findings: fs,
			Outcomes: map[string]validate.Outcome{id: validate.OutcomeFailed, "tests/test_calc.py::test_low": validate.OutcomePassed}}}
	}
	base := func(o validate.Outcome) []validate.Result {
		return []validate.Result{{Name: "tests", Kind: validate.KindPytest, Passed: true, Outcomes: map[string]validate.Outcome{id: o}}}
	}
	own := func(o validate.Outcome) []validate.Result {
		return []validate.Result{{Name: "tests", Kind: validate.KindPytest, Outcomes: map[string]validate.Outcome{id: o}}}
	}
	touched := []string{"tests/test_calc.py"}
	for _, tt := range []struct {
		name      string
		view      []validate.Result
		base, own validate.Outcome
		touched   []string
		want      bool
	}{
		{"the fix took the mark away", view(xpass), validate.OutcomeXFailed, validate.OutcomePassed, touched, true},
		{"the mark is still there", view(xpass), validate.OutcomeXFailed, validate.OutcomeFailed, touched, false},
		{"the file is not the change's", view(xpass), validate.OutcomeXFailed, validate.OutcomePassed, nil, false},
		{"it did not xfail at the base", view(xpass), validate.OutcomePassed, validate.OutcomePassed, touched, false},
		{"a plain failure", view(validate.Finding{Test: id, Message: "assert 5 == 3"}), validate.OutcomeXFailed, validate.OutcomePassed, touched, false},
	} {
		got, ids := unmarkedXfails(tt.view, own(tt.own), base(tt.base), tt.touched, nil)
		passed := got[0].Passed && len(got[0].Findings) == 0 && got[0].Outcomes[id] == validate.OutcomePassed
		if passed != tt.want || slices.Equal(ids, []string{"tests: " + id}) != tt.want {
			t.Errorf("%s: result %+v, unmarked %q; want it counted as passing: %v", tt.name, got[0], ids, tt.want)
		}
		if tt.view[0].Outcomes[id] != validate.OutcomeFailed {
			t.Errorf("%s: the view given was changed", tt.name)
		}
	}
}
