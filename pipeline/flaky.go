package pipeline

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ticketd/ticketd/pipeline/validate"
)

// DefaultFlakeReruns is how many times a test that fails on a candidate, but did not fail at
// the base, is re-run alone before the failure is blamed on the fix.
const DefaultFlakeReruns = 2

// maxRerunTests bounds the re-runs of one check: more new failures than this is a real break,
// and re-running each would cost more than it could save.
const maxRerunTests = 10

// Rerun re-runs, alone and up to times each, the failing tests that suspect names (check name
// → pytest node ids), and returns results without those that passed on a re-run and then
// passed in one more run of the check as it ran (recorded as flaky, "check: test id"); a test
// whose finding (place and message) a re-run of another has already reproduced is not re-run,
// and one that fails again beside the others is the change's (againWithOthers). checks are
// the checks as they ran (their selection). A check left with no failure passes, its summary saying why.
// pytest and unittest checks are re-run: a node id, or unittest's -k with the dotted id,
// selects single tests.
func Rerun(ctx context.Context, runner CheckRunner, dir string, checks []validate.Check, results []validate.Result, suspect map[string][]string, times int) ([]validate.Result, []string) {
	return rerun(ctx, runner, dir, checks, results, suspect, times, false)
}

// RerunBase is Rerun once for the base commit's failing tests, all of a check's suspects in
// one run: a test that fails again beside the base's other failing tests fails again, and
// only one that passes there is looked at further (againWithOthers). Alone, a base with
// ten failing tests cost ten pytest starts on every baseline; together, one. A test the
// run reports no outcome for (or a run without outcomes per test) is re-run alone.
func RerunBase(ctx context.Context, runner CheckRunner, dir string, checks []validate.Check, results []validate.Result, suspect map[string][]string) ([]validate.Result, []string) {
	return rerun(ctx, runner, dir, checks, results, suspect, 1, true)
}

func rerun(ctx context.Context, runner CheckRunner, dir string, checks []validate.Check, results []validate.Result, suspect map[string][]string, times int, together bool) ([]validate.Result, []string) {
	if times <= 0 || len(suspect) == 0 {
		return results, nil
	}
	out := slices.Clone(results)
	var flaky []string
	for i, r := range out {
		ids := suspect[r.Name]
		if r.Kind != validate.KindPytest && r.Kind != validate.KindUnittest || len(ids) == 0 || len(ids) > maxRerunTests {
			continue
		}
		c, ok := checkNamed(checks, r.Name)
		if !ok {
			continue
		}
		passed := map[string]bool{}
		// Failures with one cause (every test module stopped by the same syntax error in the
		// package they import) share one finding: once a re-run reproduces it, the others
		// are not run again; only a failure that went away is looked at one by one.
		cause := map[string]string{}
		for _, f := range r.Findings {
			if _, seen := cause[f.Test]; !seen {
				cause[f.Test] = fmt.Sprintf("%s:%d: %s", f.File, f.Line, f.Message)
			}
		}
		reproduced := map[string]bool{}
		if together {
			ids = rerunTogether(ctx, runner, dir, c, r, ids, passed)
		}
		for _, id := range ids {
			why, known := cause[id]
			if known && reproduced[why] {
				continue
			}
			for range times {
				if ctx.Err() != nil {
					return out, flaky
				}
				alone := c
				alone.Only = []string{id}
				res := runner.Run(ctx, dir, []validate.Check{alone})
				if len(res) == 1 && res[0].Passed && res[0].Tests > 0 {
					passed[id] = true
					break
				}
			}
			if known && !passed[id] {
				reproduced[why] = true
			}
		}
		if len(passed) == 0 {
			continue
		}
		orderDependent := againWithOthers(ctx, runner, dir, c, passed, times)
		if len(orderDependent) > 0 {
			r.Findings = slices.Clone(r.Findings)
			for j, f := range r.Findings {
				if orderDependent[f.Test] {
					r.Findings[j].Message += " (it passes when run alone and fails again when run as before, with the tests before it: it depends on what they leave behind, not on chance)"
				}
			}
		}
		if len(passed) == 0 {
			out[i] = r
			continue
		}
		r.Findings = slices.DeleteFunc(slices.Clone(r.Findings), func(f validate.Finding) bool { return passed[f.Test] })
		if r.Outcomes != nil {
			r.Outcomes = maps.Clone(r.Outcomes)
			for id := range passed {
				r.Outcomes[id] = validate.OutcomePassed
			}
		}
		for _, id := range slices.Sorted(maps.Keys(passed)) {
			flaky = append(flaky, r.Name+": "+id)
		}
		if len(r.Findings) == 0 {
			r.Passed = true
			r.Summary += fmt.Sprintf("; %d flaky test(s) passed when re-run alone", len(passed))
		}
		out[i] = r
	}
	return out, flaky
}

// rerunTogether runs the tests of ids again in one run of c, marks in passed those that
// pass there, and returns the ids still to be re-run alone: those the run reports nothing
// on, and those of a module that failed to collect (its id, given as an argument, stops
// pytest's whole session). A run of one test, or without outcomes per test, decides
// nothing: all are left for alone.
func rerunTogether(ctx context.Context, runner CheckRunner, dir string, c validate.Check, r validate.Result, ids []string, passed map[string]bool) []string {
	var group, alone []string
	for _, id := range ids {
		if slices.ContainsFunc(r.Findings, func(f validate.Finding) bool {
			return f.Test == id && strings.HasSuffix(f.Message, "collection failure)")
		}) {
			alone = append(alone, id)
		} else {
			group = append(group, id)
		}
	}
	if len(group) < 2 {
		return ids
	}
	c.Only = group
	res := runner.Run(ctx, dir, []validate.Check{c})
	if len(res) != 1 || res[0].Outcomes == nil || res[0].Cancelled || res[0].TimedOut {
		return ids
	}
	for _, id := range group {
		switch o := validate.OutcomeOf(res[0].Outcomes, id); {
		case o == validate.OutcomeMissing:
			alone = append(alone, id)
		case o == validate.OutcomePassed && !slices.ContainsFunc(res[0].Findings, func(f validate.Finding) bool { return f.Test == id }):
			passed[id] = true
		}
	}
	return alone
}

// againWithOthers runs c as it ran (the tests beside and before them) up to times more, at
// least twice, and takes out of passed, and returns, the tests that fail in every one of those
// runs: a test that passes alone but fails whenever the tests before it run first fails for
// what they leave behind (state the change keeps between calls), not by chance, and is the
// change's failure, never a flake. A flake fails such a run only as often as it fails at all,
// so one that fails every time is blamed on the change with its rate to the power of the runs.
// A run cut short or without a report ends the look, blaming nothing more.
func againWithOthers(ctx context.Context, runner CheckRunner, dir string, c validate.Check, passed map[string]bool, times int) map[string]bool {
	again := maps.Clone(passed)
	for range max(times, 2) {
		if ctx.Err() != nil || len(again) == 0 {
			return nil
		}
		res := runner.Run(ctx, dir, []validate.Check{c})
		if len(res) != 1 || res[0].Cancelled || res[0].TimedOut || res[0].Tests < 0 {
			return nil
		}
		for id := range again {
			if !validate.OutcomeOf(res[0].Outcomes, id).Failing() && !slices.ContainsFunc(res[0].Findings, func(f validate.Finding) bool { return f.Test == id }) {
				delete(again, id) // it passed beside the others too: a flake
			}
		}
	}
	for id := range again {
		delete(passed, id)
	}
	return again
}

func checkNamed(checks []validate.Check, name string) (validate.Check, bool) {
	for _, c := range checks {
		if c.Name == name {
			return c, true
		}
	}
	return validate.Check{}, false
}

// FailingTests names each test check's failing tests (check name → pytest node ids or
// unittest's dotted ids), what Rerun and the evidence step take.
func FailingTests(results []validate.Result) map[string][]string {
	out := map[string][]string{}
	for _, r := range results {
		if r.Passed || (r.Kind != validate.KindPytest && r.Kind != validate.KindUnittest) {
			continue
		}
		for _, f := range r.Findings {
			// A pytest finding names a test by node id ("file::test"); one without is the
			// file or the session. unittest names each failing test by its dotted id.
			if f.Test != "" && (strings.Contains(f.Test, "::") || r.Kind == validate.KindUnittest) {
				out[r.Name] = append(out[r.Name], f.Test)
			}
		}
	}
	return out
}

// targetTests are the tests a fix must make pass: those the maker named on submit (named),
// those the issue names (IssueTests: they exist in the repository), and those triage named
// that fail at the base (a triage guess that names no failing test binds nothing).
func targetTests(named, issueTests []string, tri *Triage, baseline []validate.Result) []string {
	out := slices.Clone(named)
	for _, id := range issueTests {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	if tri != nil {
		base := FailingTests(baseline)
		for _, id := range tri.TargetTests {
			for _, ids := range base {
				if slices.Contains(ids, id) && !slices.Contains(out, id) {
					out = append(out, id)
				}
			}
		}
	}
	return out
}

// requireTargets applies the target tests to a gate: with targets named, the fix must add no
// failure and every target must have run and passed — a target that exists at the base
// commit in its base version (the test view), a target the change adds as the change left it;
// the rule "one of the base's failing tests now passes" gives way to them, so in a repository
// whose base has only unrelated failures a fix that adds a passing test for the bug is
// accepted. A skipped or xfailed target does not pass.
func (c *checkRun) requireTargets(ctx context.Context, g Gate) Gate {
	targets := c.targets
	if len(targets) == 0 || len(g.New) > 0 || len(g.TimedOut) > 0 || g.Cancelled {
		return g
	}
	var failed []string
	ran := false
	for _, t := range c.checks {
		if t.Kind != validate.KindPytest {
			continue
		}
		ran = true
		var bad []string
		for _, id := range targets {
			if o := c.targetOutcome(g, t.Name, id); o != validate.OutcomePassed {
				what := fmt.Sprintf("%s %s", id, outcomeWords(o))
				if file, _, _ := strings.Cut(id, "::"); o.Failing() && file != id {
					// A target whose file did not collect never ran: say why, not only
					// "errored" (a test file that imports what the interpreter lacks).
					if why := collectionError(resultNamed(g.Results, t.Name), file); why != "" {
						what = fmt.Sprintf("%s did not run: %s did not collect (%s)", id, file, why)
					}
				}
				bad = append(bad, what)
			}
		}
		if len(bad) > 0 {
			failed = append(failed, fmt.Sprintf("%s: %s", t.Name, strings.Join(bad, "; ")))
			g.failedKeys = append(g.failedKeys, "targets: "+t.Name+": "+strings.Join(targets, " "))
		}
	}
	if !ran {
		return g
	}
	g.Targets, g.TargetsFailing = targets, failed
	g.Passed = g.Passed && len(failed) == 0 && len(g.Weakened) == 0
	if len(failed) == 0 {
		g.Text += fmt.Sprintf("\nThe target tests pass: %s\n", strings.Join(targets, ", "))
	} else {
		g.Passed = false
		g.Text += fmt.Sprintf("\nThe target tests (%s) must run and pass (in its base version a test the base commit has, as you left it a test you add), and do not:\n- %s\n", strings.Join(targets, ", "), strings.Join(failed, "\n- "))
	}
	return g
}

// targetOutcome is how target id ended in gate g's runs of check: in its base version when
// the base commit has it, else as the change left it.
func (c *checkRun) targetOutcome(g Gate, check, id string) validate.Outcome {
	view := resultNamed(g.Results, check)
	base := resultNamed(c.baseline, check)
	atBase := base != nil && base.Outcomes != nil && outcomeAt(base.Outcomes, id) != validate.OutcomeMissing
	if own, ok := g.own[check]; ok && own != nil && !atBase {
		if o := targetOutcomeAt(own, id); o != validate.OutcomeMissing {
			return o
		}
	}
	if view == nil {
		return validate.OutcomeMissing
	}
	return targetOutcomeAt(view.Outcomes, id)
}

// targetOutcomeAt is outcomeAt for a target: a target named without parameters whose
// instances passed where they ran and were skipped where they did not passed. An autouse
// fixture over implementations runs each test once per implementation, and skips the ones
// the machine lacks (markupsafe's C speedups, anyio's trio backend); a target none of whose
// instances passed still does not pass, and evidence still needs a test that failed at the
// base and passes.
func targetOutcomeAt(outcomes map[string]validate.Outcome, id string) validate.Outcome {
	o := outcomeAt(outcomes, id)
	if _, exact := outcomes[id]; exact || o != validate.OutcomeSkipped {
		return o
	}
	for k, v := range outcomes {
		if v == validate.OutcomePassed && strings.HasPrefix(k, id+"[") {
			return validate.OutcomePassed // the worst of them is a skip: none failed
		}
	}
	return o
}
