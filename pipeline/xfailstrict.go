package pipeline

import (
	"maps"
	"slices"
	"strings"

	"github.com/ticketd/ticketd/pipeline/discover"
	"github.com/ticketd/ticketd/pipeline/validate"
)

// A project with xfail_strict = true marks a known bug's test @pytest.mark.xfail: it xfails
// at the base commit, and the fix makes it pass and takes the mark away. Run in its base
// version (marked) with the fix, the test is a strict XPASS, which pytest reports as a
// failure; yet it is the fix's best evidence, not a failure the change caused. The base
// version passing shows the change's code does what the test (its base body) asks; the
// mark's removal makes the test stricter, never weaker.

// strictXPass is how pytest's report names a marked test that passed under xfail_strict.
const strictXPass = "[XPASS(strict)]"

// unmarkedXfails returns the test view (the base versions' run) without the strict XPASS
// failures of tests that xfailed at the base commit, that the change touched (files, the
// test modules it changed) and whose change's version passes (own: each check's run of
// those modules as the change left them); such a test counts as passing. It also returns
// those tests ("check: id").
func unmarkedXfails(view, own, baseline []validate.Result, files []string, tests *discover.Tests) ([]validate.Result, []string) {
	var fixed []string
	out := slices.Clone(view)
	for i, r := range out {
		base, mine := resultNamed(baseline, r.Name), resultNamed(own, r.Name)
		if r.Kind != validate.KindPytest || base == nil || mine == nil {
			continue
		}
		var kept []validate.Finding
		var now map[string]validate.Outcome
		for _, f := range r.Findings {
			if f.Test == "" || !strings.Contains(f.Message, strictXPass) ||
				validate.OutcomeOf(base.Outcomes, f.Test) != validate.OutcomeXFailed ||
				validate.OutcomeOf(mine.Outcomes, f.Test) != validate.OutcomePassed || !touches(files, f.Test, tests) {
				kept = append(kept, f)
				continue
			}
			if now == nil {
				now = maps.Clone(r.Outcomes)
			}
			now[f.Test] = validate.OutcomePassed
			fixed = append(fixed, r.Name+": "+f.Test)
		}
		if now == nil {
			continue
		}
		r.Findings, r.Outcomes = kept, now
		if len(kept) == 0 && r.ExitCode == 1 && !r.TimedOut && !r.NotStarted && r.Abort == "" {
			r.Passed, r.ExitCode = true, 0 // its only failures were these
		}
		out[i] = r
	}
	return out, fixed
}
