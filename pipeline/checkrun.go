package pipeline

import (
	"context"
	"fmt"
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
	// sel is the tests that decide when the selection does (chooseTests), nil when the
	// whole suite does.
	sel *Selection
}

// gate runs the checks and reports, for the model, the comparison with the baseline. The
// tests the change can affect run first (see firstTier); their failures come back at once,
// and the whole suite, on which the verdict is made, runs only when they pass.
func (c *checkRun) gate(ctx context.Context) (string, Gate) {
	sel, _ := chooseTests(c.tree.dir, c.tree.tests(), c.tree.imports, c.checks, c.baseline, c.changed, c.targets)
	if sel.Whole == "" {
		return c.selectedGate(ctx, &sel)
	}
	first, failed := c.firstTier(ctx)
	if failed != nil {
		c.jr.note("first tier failed in %s (%d test file(s), %d target(s)); whole suite not run", first.Duration.Round(time.Millisecond), len(first.Files), len(first.Targets))
		return "The checks fail (compared with the base commit): " + failed.Text, *failed
	}
	if first != nil {
		c.jr.note("first tier passed in %s (%d test file(s), %d target(s)); running the whole suite", first.Duration.Round(time.Millisecond), len(first.Files), len(first.Targets))
	}
	g := c.fullChecks(ctx)
	g.Tier, g.FirstTier, g.Selection = TierFull, first, &sel
	if g.Cancelled {
		return "The checks were cut short (" + context.Cause(ctx).Error() + "); they judged nothing.", g
	}
	if g.Passed {
		return "The checks pass (compared with the base commit): " + g.Text, g
	}
	return "The checks fail (compared with the base commit): " + g.Text, g
}

// selectedGate is the gate decided by the tests the change reaches (sel), the base's results
// standing for the rest: the full gate's rules (tests in their base versions, the change's
// own test files as it left them, flakes, targets, weakened tests) on a narrower run.
func (c *checkRun) selectedGate(ctx context.Context, sel *Selection) (string, Gate) {
	c.sel = sel
	g := c.fullChecks(ctx)
	g.Tier, g.Selection = TierSelected, sel
	c.jr.note("selected %d test file(s) and %d target(s) the change reaches; the base's results stand for the rest", len(sel.Files), len(sel.Targets))
	note := fmt.Sprintf("\nOnly the tests your change can reach ran (%d test file(s)%s); the others stand at the base commit's results. The whole suite runs over the night's fixes before any is published.\n", len(sel.Files), targetsPhrase(sel.Targets))
	g.Text = clip(g.Text+note, 12_000)
	switch {
	case g.Cancelled:
		return "The checks were cut short (" + context.Cause(ctx).Error() + "); they judged nothing.", g
	case g.Passed:
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
