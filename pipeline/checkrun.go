package pipeline

import (
	"context"
	"log/slog"
	"time"

	"github.com/ticketd/ticketd/pipeline/validate"
)

// checkRun is the checks stage over one change: the gate's runs of the job's checks on the
// worktree as the change left it, compared with the base commit (first tier, then the whole
// suite; see tier.go and fullgate.go).
type checkRun struct {
	tree     *testTree
	run      CheckRunner // with the base commit's test infrastructure (baseInfraRunner)
	checks   []validate.Check
	baseline []validate.Result
	changed  []string // the paths the change touches
	targets  []string // the tests it must make pass (targetTests)
	reruns   int      // Runner.flakeReruns
	now      func() time.Time
	log      *slog.Logger
	jr       *journal
}

// gate runs the checks and reports, for the model, the comparison with the baseline. The
// tests the change can affect run first (see firstTier); their failures come back at once,
// and the whole suite, on which the verdict is made, runs only when they pass.
func (c *checkRun) gate(ctx context.Context) (string, Gate) {
	first, failed := c.firstTier(ctx)
	if failed != nil {
		c.jr.note("first tier failed in %s (%d test file(s), %d target(s)); whole suite not run", first.Duration.Round(time.Millisecond), len(first.Files), len(first.Targets))
		return "The checks fail (compared with the base commit): " + failed.Text, *failed
	}
	if first != nil {
		c.jr.note("first tier passed in %s (%d test file(s), %d target(s)); running the whole suite", first.Duration.Round(time.Millisecond), len(first.Files), len(first.Targets))
	}
	g := c.fullChecks(ctx)
	g.Tier, g.FirstTier = TierFull, first
	if g.Cancelled {
		return "The checks were cut short (" + context.Cause(ctx).Error() + "); they judged nothing.", g
	}
	if g.Passed {
		return "The checks pass (compared with the base commit): " + g.Text, g
	}
	return "The checks fail (compared with the base commit): " + g.Text, g
}

// testChecks are the pytest and unittest checks of checks.
func testChecks(checks []validate.Check) []validate.Check {
	tests, _ := testCheckSplit(checks)
	return tests
}

// hasTestSuite reports whether the repository has tests the maker can add to: a test check
// whose base run collected at least one test.
func hasTestSuite(baseline []validate.Result) bool {
	for _, r := range baseline {
		if (r.Kind == validate.KindPytest || r.Kind == validate.KindUnittest) && r.Tests > 0 {
			return true
		}
	}
	return false
}
