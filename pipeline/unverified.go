package pipeline

import (
	"fmt"
	"strings"
)

// An unverified attempt is not repeated blind: the next attempt is told what was missing (see
// TicketContext), a submit of it that changes no test is refused before any check runs, and
// an attempt that ends unverified with the same patch again says so (RepeatsUnverified), so
// that the ticket escalates at once instead of paying for a third identical attempt.

// refusedNoTestFirst answers a submit without a test after an unverified attempt.
const refusedNoTestFirst = "Not accepted: the previous attempt's change passed the checks, but nothing showed that it fixes the bug, and this change adds or changes no test either. The change was not checked.\n\n"

// needsTestFirst refuses a submit that changes no test module when the previous attempt
// ended unverified and the repository has tests to add one to, at most MaxEvidenceRefusals
// times; after that the submit is judged as any other (and ends unverified).
func (a *attempt) needsTestFirst(changed []string) (string, bool) {
	prior := a.job.Ticket.Unverified
	if prior == nil || !hasTestSuite(a.job.Baseline) || a.evidenceRefusals >= MaxEvidenceRefusals {
		return "", false
	}
	if len(a.tree.changedTestModules(changed)) > 0 {
		return "", false
	}
	a.evidenceRefusals++
	a.jr.note("submit %d refused before the checks: attempt %d ended unverified and this change adds no test (%d of %d)", a.submits, prior.Attempt, a.evidenceRefusals, MaxEvidenceRefusals)
	return refusedNoTestFirst + fmt.Sprintf("Add a regression test beside the existing tests, in their style, that fails without your fix (attempt %d's reason: %s), name it in submit's \"tests\", and submit again.",
		prior.Attempt, clip(strings.Join(strings.Fields(prior.Reason), " "), 300)), true
}

// samePatch reports whether two diffs make the same change (whitespace at their ends aside).
func samePatch(a, b string) bool {
	return strings.TrimSpace(a) != "" && strings.TrimSpace(a) == strings.TrimSpace(b)
}
