package pipeline

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ticketd/ticketd/pipeline/validate"
)

// Gate is the validator verdict on a worktree compared with the base commit.
//
// The rule: no failure that the baseline did not have, and, where the ticket has target
// tests (named by the issue, by triage, or added by the maker), every target passes. A
// failure the base already had is carried and shown, never a reason to refuse: real
// repositories fail at their base for reasons that have nothing to do with the ticket (a
// test that needs the installed package's metadata, a doctest in the docs, a module whose
// optional dependency is missing). Whether the change fixes the reported bug is shown by
// the evidence step after the gate (evidence.go), not by which base failures turned green.
type Gate struct {
	Passed    bool
	New       []string // failures the baseline did not have
	Fixed     []string // baseline failures that now pass
	Remaining []string // baseline failures still failing
	Flaky     []string // tests that failed, then passed when re-run alone ("check: id")
	Targets   []string // tests the fix was required to make pass, when any were named
	// TargetsFailing says, per check, how the targets failed when run alone; empty when they
	// passed (or were not run).
	TargetsFailing []string
	Results        []validate.Result
	Text           string // for the model and the report
	// Tier says which tier of the checks gave the verdict: TierFirst when the tests the
	// change can affect failed and the whole suite was not run, TierFull otherwise.
	Tier string
	// FirstTier is the first tier's run, nil when none was chosen (no pytest check, or the
	// change affects no test file by the import scan).
	FirstTier *TierRun
	// Selection is which tests decided: with Tier TierSelected the ones the change reaches
	// (the base's results standing for the rest), else why the whole suite ran.
	Selection *Selection
	// TimedOut are the checks that timed out and timed out again when re-run on their own
	// (one line each, with the time-out, the base's time and the load): the gate cannot
	// judge them, and nothing shows the change made them slow.
	TimedOut []string
	// Slow are the checks that timed out, then finished when re-run on their own: a fact
	// about the machine, not the change (one line each).
	Slow []string
	// Cancelled says the checks were cut short from outside (the attempt's budget, a
	// shutdown): the gate judged nothing, and the attempt ends as what stopped it.
	Cancelled bool
	// Weakened names the tests that pass at the base commit and, where the change touched
	// them, do not pass in their base version with it ("check: id: what"): a change that
	// removes, renames, skips, xfails or rewrites a test the base passed. Such a change is
	// never shipped by itself (StatusTestsChanged).
	Weakened []string

	// editedDoctests are the entries of Weakened that are doctests in the code the change
	// edits (doctests.go): the one weakening a maker may have made in good faith, writing
	// its regression test as a doctest line as many projects do.
	editedDoctests []string

	// own is each test check's run of the change's own test modules as the change left them
	// (check → outcomes), nil for a check that did not run them.
	own map[string]map[string]validate.Outcome

	// unmarked are the tests ("check: id") that xfailed at the base commit and pass with
	// the change, which took their xfail mark away (see unmarkedXfails): evidence in the
	// base's own words.
	unmarked []string

	// newTests names the new failures that are single tests (check → node ids): what a
	// flake re-run can retry.
	newTests map[string][]string
	// failedKeys name what made the gate fail (new failures' keys, "target: id" for a
	// target that does not pass), sorted: two refusals with the same keys are the same.
	failedKeys []string
}

// failureKeys names each failure of a run so that runs can be compared: a test id where the
// parser gives one, otherwise file and message, otherwise the whole check.
//
// groups gives, for each key of a counted finding whose file has more than one of it, the
// note that names them all ("(2 of this in a.py, at lines 5, 25)"): added where such a
// finding is new, since which of them the change added is not known.
func failureKeys(results []validate.Result) (keys, groups map[string]string) {
	keys, groups = map[string]string{}, map[string]string{}
	for _, r := range results {
		if r.Passed || r.Cancelled || r.TimedOut && len(r.Findings) == 0 {
			continue // not a failure of the code: a cut-short run, or a time-out (see Compare)
		}
		if len(r.Findings) == 0 {
			what := "failed"
			if r.TimedOut {
				what = "timed out"
			}
			keys[r.Name+": "+what] = fmt.Sprintf("%s %s (exit %d): %s", r.Name, what, r.ExitCode, lastLines(r.Output, 15))
			continue
		}
		// Tests are known by their id; lint and type findings by file, rule and message (not
		// line: an edit above them moves them without making them new), and by how many of
		// them the file has: a second unused loop variable in a file that had one is new.
		lines := map[string][]int{}
		for _, f := range r.Findings {
			if id, counted := findingID(r, f); counted {
				lines[id] = append(lines[id], f.Line)
			}
		}
		seen := map[string]int{}
		for _, f := range r.Findings {
			id, counted := findingID(r, f)
			key := id
			detail := f.Message
			if f.File != "" {
				detail = fmt.Sprintf("%s:%d: %s", f.File, f.Line, f.Message)
			}
			if counted && len(lines[id]) > 1 {
				seen[id]++
				if seen[id] > 1 {
					key += fmt.Sprintf(" #%d", seen[id])
				}
				groups[r.Name+": "+key] = fmt.Sprintf(" (%d of this in %s, at lines %s)", len(lines[id]), f.File, lineList(lines[id]))
			}
			keys[r.Name+": "+key] = fmt.Sprintf("%s: %s: %s", r.Name, orDash(shownID(f.Test)), clip(detail, 800))
		}
	}
	return keys, groups
}

// shownID is a finding's test id as a reader knows it. A test module pytest could not
// collect (an import error) comes from its JUnit report as "file::dotted.module"
// ("test.py::test", "tests/test_x.py::tests.test_x"), which reads as a test function of that
// name: it is shown by its path, as pytest's own summary names it. Only the text changes;
// the id stays the finding's key (re-runs and evidence name the module by it).
func shownID(id string) string {
	file, name, ok := strings.Cut(id, "::")
	if ok && strings.HasSuffix(file, ".py") && name == strings.ReplaceAll(strings.TrimSuffix(file, ".py"), "/", ".") {
		return file
	}
	return id
}

// findingID is what a finding of r is known by across runs, and whether its occurrences in
// one file are counted (lint and type findings, which have no test id).
func findingID(r validate.Result, f validate.Finding) (string, bool) {
	if f.Test != "" && (r.Kind == validate.KindPytest || r.Kind == validate.KindUnittest) {
		return f.Test, false
	}
	return f.File + ": " + f.Test + ": " + f.Message, true
}

// maxLinesListed bounds the lines lineList names.
const maxLinesListed = 10

// lineList names lines, sorted: "10, 50", or the first maxLinesListed and how many more.
func lineList(lines []int) string {
	sorted := slices.Sorted(slices.Values(lines))
	var parts []string
	for _, l := range sorted[:min(len(sorted), maxLinesListed)] {
		parts = append(parts, strconv.Itoa(l))
	}
	if len(sorted) > maxLinesListed {
		parts = append(parts, fmt.Sprintf("and %d more", len(sorted)-maxLinesListed))
	}
	return strings.Join(parts, ", ")
}

// Compare applies the gate rule to the current results against the baseline.
func Compare(baseline, current []validate.Result) Gate {
	base, _ := failureKeys(baseline)
	cur, groups := failureKeys(current)
	g := Gate{Results: current, newTests: map[string][]string{}}
	for check, ids := range FailingTests(current) {
		for _, id := range ids {
			if _, ok := base[check+": "+id]; !ok {
				g.newTests[check] = append(g.newTests[check], id)
			}
		}
	}
	for k, d := range cur {
		if _, ok := base[k]; ok {
			g.Remaining = append(g.Remaining, d)
		} else {
			g.New = append(g.New, d+groups[k])
			g.failedKeys = append(g.failedKeys, k)
		}
	}
	for k, d := range base {
		if _, still := cur[k]; !still {
			g.Fixed = append(g.Fixed, d)
		}
	}
	for _, r := range current {
		switch {
		case r.Cancelled:
			g.Cancelled = true
		case r.TimedOut && len(r.Findings) == 0:
			g.TimedOut = append(g.TimedOut, r.Name+": "+r.Summary)
			g.failedKeys = append(g.failedKeys, r.Name+": timed out")
		}
	}
	sort.Strings(g.New)
	sort.Strings(g.Fixed)
	sort.Strings(g.Remaining)
	sort.Strings(g.failedKeys)
	g.Passed = len(g.New) == 0 && len(g.TimedOut) == 0 && !g.Cancelled

	var b strings.Builder
	for _, r := range current {
		fmt.Fprintf(&b, "%s: %s. ", r.Name, orDash(r.Summary))
	}
	b.WriteString("\n")
	if len(g.New) > 0 {
		fmt.Fprintf(&b, "\n%d failure(s) that the base commit did not have (you caused these):\n- %s\n", len(g.New), strings.Join(g.New, "\n- "))
	}
	if len(g.TimedOut) > 0 {
		fmt.Fprintf(&b, "\n%d check(s) timed out, and timed out again when re-run on their own; no test failed, so nothing shows whether your change made them slow or the machine is busy:\n- %s\nIf your change can loop, wait or do much more work, look there; otherwise submit again.\n",
			len(g.TimedOut), strings.Join(g.TimedOut, "\n- "))
	}
	if len(g.Remaining) > 0 {
		// A target test failing at the base is in this list too, and requireTargets refuses
		// the change while it still fails: the text may not call it no reason to refuse.
		fmt.Fprintf(&b, "\n%d failure(s) already present at the base commit, still failing (not yours, and no reason to refuse the change unless one is a target test the fix must make pass; leave them unless the ticket is about them):\n- %s\n",
			len(g.Remaining), strings.Join(clipList(g.Remaining, maxRemainingShown), "\n- "))
	}
	// With new failures (a collection error, say) a run may stop early, so baseline failures
	// that did not run would look fixed: only claim fixes for a clean run.
	if len(g.Fixed) > 0 && len(g.New) == 0 {
		fmt.Fprintf(&b, "\n%d failure(s) of the base commit now pass.\n", len(g.Fixed))
	}
	g.Text = clip(b.String(), 12_000)
	return g
}

// maxRemainingShown bounds the base failures listed to the maker: a src/ package nobody
// installed can fail hundreds of tests at the base, and the list must not bury what the
// maker caused.
const maxRemainingShown = 20

// clipList keeps the first n items, and says how many it left out.
func clipList(items []string, n int) []string {
	if len(items) <= n {
		return items
	}
	return append(slices.Clone(items[:n]), fmt.Sprintf("… and %d more", len(items)-n))
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
