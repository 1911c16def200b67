package pipeline

import (
	"context"

	"github.com/ticketd/ticketd/pipeline/validate"
)

// NightSuite runs the whole test suite — every pytest and unittest check, whatever its
// full_suite — on dir, a tree at the base commit holding the night's fixes of one
// repository together, and judges it against the base commit's results as the gate does: a
// failure the base did not have refuses. It is the other half of test selection
// (TierSelected): a fix the tests its change reaches passed is published only once this run
// passes with it. New failures are re-run once alone first (flakes are not refusals).
func NightSuite(ctx context.Context, run CheckRunner, dir string, checks []validate.Check, baseline []validate.Result) Gate {
	tests := testChecks(checks)
	var base []validate.Result
	for _, t := range tests {
		if b := resultNamed(baseline, t.Name); b != nil {
			base = append(base, *b)
		}
	}
	if len(tests) == 0 {
		return Gate{Passed: true, Tier: TierFull, Text: "no test check: nothing to run"}
	}
	res := run.Run(ctx, dir, tests)
	g := Compare(base, res)
	if len(g.newTests) > 0 && !g.Cancelled {
		if rerun, flaky := Rerun(ctx, run, dir, tests, res, g.newTests, 1); len(flaky) > 0 {
			g = Compare(base, rerun)
			g.Flaky = flaky
		}
	}
	g.Tier = TierFull
	return g
}
