package pipeline

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ticketd/ticketd/pipeline/validate"
)

// Gate is the validator verdict on a worktree compared with the base commit.
//
// The rule: no failure that the baseline did not have, and, where the baseline had failing
// tests, at least one of them now passes (the ticket's target). A fix may not break anything
// that worked; lint and type debt already at the base neither blocks a fix nor counts as one.
type Gate struct {
	Passed    bool
	New       []string // failures the baseline did not have
	Fixed     []string // baseline failures that now pass
	Remaining []string // baseline failures still failing
	Flaky     []string // tests that failed, then passed when re-run alone ("check: id")
	Targets   []string // tests the fix was required to make pass, when any were named
	Results   []validate.Result
	Text      string // for the model and the report
	// Tier says which tier of the checks gave the verdict: TierFirst when the tests the
	// change can affect failed and the whole suite was not run, TierFull otherwise.
	Tier string
	// FirstTier is the first tier's run, nil when none was chosen (no pytest check, or the
	// change affects no test file by the import scan).
	FirstTier *TierRun

	// newTests names the new failures that are single tests (check → node ids): what a
	// flake re-run can retry.
	newTests map[string][]string
}

// failureKeys names each failure of a run so that runs can be compared: a test id where the
// parser gives one, otherwise file and message, otherwise the whole check.
func failureKeys(results []validate.Result) map[string]string {
	keys := map[string]string{}
	for _, r := range results {
		if r.Passed {
			continue
		}
		if len(r.Findings) == 0 {
			what := "failed"
			if r.TimedOut {
				what = "timed out"
			}
			keys[r.Name+": "+what] = fmt.Sprintf("%s %s (exit %d): %s", r.Name, what, r.ExitCode, lastLines(r.Output, 15))
			continue
		}
		for _, f := range r.Findings {
			// Tests are known by their id; lint and type findings by file, rule and message
			// (not line: an edit above them moves them without making them new).
			id := f.Test
			if id == "" || (r.Kind != validate.KindPytest && r.Kind != validate.KindUnittest) {
				id = f.File + ": " + f.Test + ": " + f.Message
			}
			detail := f.Message
			if f.File != "" {
				detail = fmt.Sprintf("%s:%d: %s", f.File, f.Line, f.Message)
			}
			keys[r.Name+": "+id] = fmt.Sprintf("%s: %s: %s", r.Name, orDash(f.Test), clip(detail, 800))
		}
	}
	return keys
}

// isTestKey reports whether a failure key belongs to a test check (pytest or unittest).
func isTestKey(results []validate.Result, key string) bool {
	for _, r := range results {
		if r.Kind == validate.KindPytest || r.Kind == validate.KindUnittest {
			if strings.HasPrefix(key, r.Name+": ") {
				return true
			}
		}
	}
	return false
}

// Compare applies the gate rule to the current results against the baseline.
func Compare(baseline, current []validate.Result) Gate {
	base, cur := failureKeys(baseline), failureKeys(current)
	g := Gate{Results: current, newTests: map[string][]string{}}
	for check, ids := range FailingTests(current) {
		for _, id := range ids {
			if _, ok := base[check+": "+id]; !ok {
				g.newTests[check] = append(g.newTests[check], id)
			}
		}
	}
	baseTests, fixedTests := 0, 0
	for k, d := range cur {
		if _, ok := base[k]; ok {
			g.Remaining = append(g.Remaining, d)
		} else {
			g.New = append(g.New, d)
		}
	}
	for k, d := range base {
		_, still := cur[k]
		if !still {
			g.Fixed = append(g.Fixed, d)
		}
		if isTestKey(baseline, k) {
			baseTests++
			if !still {
				fixedTests++
			}
		}
	}
	sort.Strings(g.New)
	sort.Strings(g.Fixed)
	sort.Strings(g.Remaining)
	g.Passed = len(g.New) == 0 && (baseTests == 0 || fixedTests > 0)

	var b strings.Builder
	for _, r := range current {
		fmt.Fprintf(&b, "%s: %s. ", r.Name, orDash(r.Summary))
	}
	b.WriteString("\n")
	switch {
	case len(g.New) > 0:
		fmt.Fprintf(&b, "\n%d failure(s) that the base commit did not have (you caused these):\n- %s\n", len(g.New), strings.Join(g.New, "\n- "))
	case !g.Passed:
		b.WriteString("\nNo failing test was fixed: the tests failing at the base commit all still fail.\n")
	}
	if len(g.Remaining) > 0 {
		fmt.Fprintf(&b, "\n%d failure(s) already present at the base commit, still failing:\n- %s\n", len(g.Remaining), strings.Join(g.Remaining, "\n- "))
	}
	// With new failures (a collection error, say) a run may stop early, so baseline failures
	// that did not run would look fixed: only claim fixes for a clean run.
	if len(g.Fixed) > 0 && len(g.New) == 0 {
		fmt.Fprintf(&b, "\n%d failure(s) of the base commit now pass.\n", len(g.Fixed))
	}
	g.Text = clip(b.String(), 12_000)
	return g
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
