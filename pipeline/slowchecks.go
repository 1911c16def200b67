package pipeline

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ticketd/ticketd/pipeline/validate"
)

// A time-out is a fact about the machine until shown otherwise: a whole suite that took 45 s
// at the base and is killed at 2m16s tonight may be the change's infinite loop, or three
// workers and a neighbour's build on two cores. A check that times out on a candidate is run
// once more on its own, with the base's time as the reference and the load noted; only what
// that run finds (a test that fails on its own) is the change's. One that times out again is
// reported as such, never as a failure the change caused.

// retryTimeouts re-runs once each check of results that timed out (checks are the checks as
// they ran, matched by name), and returns the results with each re-run in its place and, for
// each that then finished, a line saying so.
func (c *checkRun) retryTimeouts(ctx context.Context, checks []validate.Check, results []validate.Result) ([]validate.Result, []string) {
	out := slices.Clone(results)
	var slow []string
	for i, r := range out {
		if !r.TimedOut || r.Cancelled || ctx.Err() != nil {
			continue
		}
		chk, ok := checkNamed(checks, r.Name)
		if !ok {
			continue
		}
		first := validate.LoadAverage()
		rerun := c.run.Run(ctx, c.tree.dir, []validate.Check{chk})
		if len(rerun) != 1 || rerun[0].Cancelled {
			continue
		}
		again := rerun[0]
		base := baseDuration(c.baseline, r.Name)
		if again.TimedOut {
			again.Summary = fmt.Sprintf("timed out twice (load %s, then %s; the base commit's run took %s): %s", loadText(first), loadText(validate.LoadAverage()), base, again.Summary)
			c.jr.note("check %s timed out twice (load %s; base %s)", r.Name, loadText(first), base)
		} else {
			line := fmt.Sprintf("%s timed out at first (load %s), then ran on its own in %s (the base commit's run took %s): %s",
				r.Name, loadText(first), again.Duration.Round(100*time.Millisecond), base, again.Summary)
			slow = append(slow, line)
			c.jr.note("slow check, not blamed on the change: %s", line)
		}
		out[i] = again
	}
	return out, slow
}

// baseDuration is how long the base commit's run of the named check took, or "unknown".
func baseDuration(baseline []validate.Result, name string) string {
	if r := resultNamed(baseline, name); r != nil && r.Duration > 0 {
		return r.Duration.Round(100 * time.Millisecond).String()
	}
	return "unknown"
}

func loadText(l float64) string {
	if l < 0 {
		return "unknown"
	}
	return fmt.Sprintf("%.1f", l)
}
