package daemon

import (
	"fmt"
	"strings"
	"time"

	"github.com/ticketd/ticketd/daemon/record"
	"github.com/ticketd/ticketd/pipeline"
)

// A report says exactly what happened: which gate ran on the last submitted change and
// whether it passed, what the change is (the fix, a complete but unverified patch, or the
// partial work an attempt left), and what a human can do next. Each ending's report is pinned
// by a golden file (report_test.go).

// unverified reports whether the attempt ended with a change that passes the checks but that
// nothing showed fixes the bug.
func unverified(out pipeline.Outcome) bool { return out.Status == pipeline.StatusUnverified }

// changeLabel names the diff the report shows, per ending.
func changeLabel(in reportInput) string {
	switch {
	case in.Ending == record.Done:
		return "The change"
	case unverified(in.Outcome):
		return "The complete change (it passes the checks, but nothing showed it fixes the bug: not committed to the ticket's branch; saved as `patch` beside this report)"
	}
	return "The partial change this attempt left (not committed; saved as `patch` beside this report)"
}

// maxRemainingListed bounds the base's failures a report lists one by one: platformdirs'
// 670 tests that error at the base (pytest-mock missing) made a 200 KB report; the baseline
// note says why they fail, and the attempt's checks.json keeps them all.
const maxRemainingListed = 20

// writeChecks writes what the gate did on the last submitted change.
func writeChecks(b *strings.Builder, in reportInput) {
	out := in.Outcome
	g := out.Gate
	switch {
	case g == nil && out.Submits == 0:
		b.WriteString("No change was submitted in this attempt, so no gate ran.\n")
	case g == nil:
		b.WriteString("No submitted change reached the end of the checks in this attempt.\n")
	case g.Cancelled:
		fmt.Fprintf(b, "The checks on the last submitted change were cut short (%s): they judged nothing, and nothing of it counts against the change.\n\n", oneLine(out.Reason))
	case g.Passed:
		fmt.Fprintf(b, "Gate passed (%s): no failure that the base commit did not have; %d failure(s) of the base commit fixed, %d already at the base and unrelated still failing.\n\n",
			tierName(g), len(g.Fixed), len(g.Remaining))
		if len(g.Targets) > 0 {
			fmt.Fprintf(b, "Target tests (they pass): %s\n\n", strings.Join(g.Targets, ", "))
		}
	default:
		fmt.Fprintf(b, "Gate failed (%s) on the last submitted change:\n\n", tierName(g))
		for _, n := range g.New {
			fmt.Fprintf(b, "- new failure (the base commit did not have it): %s\n", oneLine(n))
		}
		for _, w := range g.Weakened {
			fmt.Fprintf(b, "- changes a test the base passed (never shipped by itself; it ran in its base version and in the change's): %s\n", oneLine(w))
		}
		for _, tl := range g.TimedOut {
			fmt.Fprintf(b, "- timed out, and timed out again when re-run on its own (not shown to be the change's): %s\n", oneLine(tl))
		}
		if len(g.TargetsFailing) > 0 {
			fmt.Fprintf(b, "- target tests (%s) do not pass:\n", strings.Join(g.Targets, ", "))
			for _, f := range g.TargetsFailing {
				fmt.Fprintf(b, "  - %s\n", oneLine(f))
			}
		}
		if g.FirstTier != nil && g.Tier == pipeline.TierFirst {
			for _, f := range g.FirstTier.Failures {
				if !contains(g.New, f) {
					fmt.Fprintf(b, "- %s\n", oneLine(f))
				}
			}
		}
		b.WriteString("\n")
	}
	if g != nil && g.Passed {
		if ev := out.Evidence; ev != nil {
			if ev.Found() {
				b.WriteString("Evidence that the change fixes the bug:\n\n")
			} else {
				b.WriteString("**Unverified**: nothing shows that the change fixes the bug; it was not shipped.\n\n")
			}
			for _, l := range strings.Split(strings.TrimSpace(ev.Text()), "\n") {
				if l != "" {
					fmt.Fprintf(b, "- %s\n", l)
				}
			}
			b.WriteString("\n")
		}
	}
	if d := pipeline.TestChangesDiff(in.Diff, out.Evidence); g != nil && d != "" {
		fmt.Fprintf(b, "Test changes (an edit to a test is never evidence: the checks ran the base's versions; the test configuration was the base's):\n\n%s\n\n", pipeline.Fence("diff", clipLines(d, 200)))
	}
	if g != nil {
		for _, c := range out.Checks {
			fmt.Fprintf(b, "- %s (%s): %s, %s\n", c.Name, c.Kind, c.Summary, c.Duration.Round(time.Millisecond))
		}
		for i, r := range g.Remaining {
			if i == maxRemainingListed {
				fmt.Fprintf(b, "  - and %d more failing at the base too (`attempt-%d/checks.json` lists them all)\n", len(g.Remaining)-i, in.Attempt)
				break
			}
			fmt.Fprintf(b, "  - failing at the base too: %s\n", strings.SplitN(r, "\n", 2)[0])
		}
		for _, s := range g.Slow {
			fmt.Fprintf(b, "- slow, not blamed on the change: %s\n", oneLine(s))
		}
	}
}

// tierName says which tier of the checks gave the gate's verdict.
func tierName(g *pipeline.Gate) string {
	if g.Tier == pipeline.TierFirst {
		return "first tier: the tests that import the change; the whole suite was not run"
	}
	return "the whole suite"
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// writeNextStep writes what a human can do, for the endings that wait on one.
func writeNextStep(b *strings.Builder, in reportInput) {
	t, out := in.Ticket, in.Outcome
	switch {
	case unverified(out) && (in.Ending == record.Escalated || in.Ending == record.Retry):
		b.WriteString("\n## For the human\n\n")
		b.WriteString("The change above is complete and passes the checks, but nothing showed that it fixes the reported bug: no test fails at the base commit and passes with it.")
		if in.Ending == record.Retry {
			// The ticket is back in the queue: accept takes an escalated ticket's kept change
			// only (a queued one may be claimed meanwhile), so the step is for its escalation.
			b.WriteString(" The next attempt is told so and must add a test that reproduces the bug first.")
			fmt.Fprintf(b, "\n\nNext step, if the ticket escalates with this patch kept: add a test that reproduces the bug, or accept the patch: `ticketctl accept %d`\n", t.ID)
			return
		}
		fmt.Fprintf(b, "\n\nNext step: add a test that reproduces the bug, or accept the patch: `ticketctl accept %d`\n", t.ID)
	case in.Ending == record.Escalated:
		b.WriteString("\n## For the human\n\n")
		b.WriteString(escalationWhy(out))
		b.WriteString(" Start from the reason above and the partial patch; when the ticket is ready for another try, run:\n\n")
		fmt.Fprintf(b, "    ticketctl requeue %d\n", t.ID)
		if out.Status == pipeline.StatusTestsChanged && in.Branch != "" {
			b.WriteString("\nThe gate refused this change by rule: it changes tests the base passed or the checks themselves, or it is more than the reviewers read whole. When it is right (a fix that changes behaviour a test pins, a fixture the fix needs, a large data file you have read), publish the kept branch as the ticket's fix (branch, patch, report, push and draft pull request as for a done ticket) with:\n\n")
			fmt.Fprintf(b, "    ticketctl accept %d\n", t.ID)
		}
	}
}

// escalationWhy says in one sentence why the last attempt of an escalated ticket stopped.
func escalationWhy(out pipeline.Outcome) string {
	g := out.Gate
	switch {
	case out.Status == pipeline.StatusTestsChanged:
		return "The gate refused the last change by rule (it changes tests the base passed or the checks themselves, or it would hide part of itself from the reviewers: the reason above says which): another attempt would only pay for the same answer."
	case out.Status == pipeline.StatusBudget:
		return "ticketd stopped the attempt at its budget (" + oneLine(out.Reason) + ") before a change passed the checks and the review."
	case g != nil && !g.Passed && !g.Cancelled:
		return "ticketd could not produce a change that passes the checks within its budgets."
	case g != nil && g.Passed && (len(out.Findings) > 0 || out.Verdict != nil):
		return "The last change passes the checks, but the review did not accept it."
	case out.Submits == 0:
		return "The maker never submitted a change."
	}
	return "ticketd could not produce a change that passes the checks and the review within its budgets."
}
