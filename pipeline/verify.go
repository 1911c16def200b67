package pipeline

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ticketd/ticketd/pipeline/validate"
)

// The triage's verification commands: each pairs an acceptance criterion with a command that
// shows it. The evidence stage runs them at the base commit and with the change; the judge
// reads what they did.

// Bounds of the judge's verification commands.
const (
	maxVerifications    = 5
	verificationTimeout = 2 * time.Minute
)

// criteriaEvidence renders, for the judge, the triage's verification commands run on the
// candidate through the check runner (the same sandbox and environment as the checks) and,
// when the evidence step ran them on this diff, at the base commit too; "" when triage gave
// none.
func criteriaEvidence(ctx context.Context, c *checkRun, runs *verificationRuns, verify []verifyCheck, diff string) (string, *verificationRuns) {
	if runs == nil || runs.diff != diff {
		runs = verifiedAfter(ctx, c, diff, verify, nil)
	}
	if len(runs.items) == 0 {
		return "", runs
	}
	var b strings.Builder
	b.WriteString("\n# Verification of the criteria\n\nticketd ran these commands on the fixed code")
	if runs.items[0].base != nil {
		b.WriteString(" and at the base commit (before the change)")
	}
	b.WriteString(":\n")
	for i, vr := range runs.items {
		if vr.after == nil {
			continue
		}
		r := *vr.after
		verdict := "FAILED"
		if r.Passed {
			verdict = "passed"
		}
		fmt.Fprintf(&b, "\n- criterion: %s\n  command: %s\n  result: %s (%s)\n", vr.v.Criterion, vr.what, verdict, r.Summary)
		if !r.Passed {
			for _, l := range lastLinesOf(r.Output, 6) {
				fmt.Fprintf(&b, "    %s\n", clip(l, 200))
			}
		}
		atBase := ""
		if vr.base != nil {
			atBase = "passed"
			if !vr.base.Passed {
				atBase = "FAILED"
			}
			fmt.Fprintf(&b, "  at the base commit: %s (%s)\n", atBase, vr.base.Summary)
			atBase = ", at the base commit " + atBase
		}
		c.jr.note("verification %d (%s): %s%s", i+1, vr.what, verdict, atBase)
	}
	return b.String(), runs
}

// verifyCheck is one verification of the triage as a check the runner can run.
type verifyCheck struct {
	v     Verification
	what  string
	check validate.Check
}

// verificationChecks are the triage's verifications the runner can run, at most
// maxVerifications.
func verificationChecks(tri *Triage, checks []validate.Check) []verifyCheck {
	if tri == nil {
		return nil
	}
	var out []verifyCheck
	for i, v := range tri.Verifications {
		if i == maxVerifications {
			break
		}
		if c, what, ok := verificationCheck(checks, i, v); ok {
			out = append(out, verifyCheck{v: v, what: what, check: c})
		}
	}
	return out
}

// verificationCheck turns a verification into a check the runner can run.
func verificationCheck(checks []validate.Check, i int, v Verification) (validate.Check, string, bool) {
	name := fmt.Sprintf("verify-%d", i+1)
	switch {
	case v.Test != "" && !strings.HasPrefix(v.Test, "-"):
		for _, c := range checks {
			if c.Kind == validate.KindPytest {
				c.Name, c.Only, c.Timeout = name, []string{v.Test}, verificationTimeout
				return c, "pytest " + v.Test, true
			}
		}
	case v.Python != "":
		python := ""
		for _, c := range checks {
			if c.Python != "" {
				python = c.Python
				break
			}
		}
		return validate.Check{Name: name, Kind: validate.KindPython, Command: []string{"-c", v.Python},
			Timeout: verificationTimeout, Python: python}, "python -c " + strconv.Quote(clip(v.Python, 200)), true
	}
	return validate.Check{}, "", false
}

func lastLinesOf(s string, n int) []string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

// verificationRuns are the triage's verification commands run on one diff, at the base
// commit and with the change.
type verificationRuns struct {
	diff  string
	items []verificationRun
}

type verificationRun struct {
	v           Verification
	what        string
	base, after *validate.Result // nil when it did not run there
}
