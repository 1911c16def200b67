package pipeline

import (
	"context"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/ticketd/ticketd/pipeline/discover"
	"github.com/ticketd/ticketd/pipeline/validate"
)

// fullChecks runs every configured check and applies the gate. Lint, type and command checks
// run on the change as the maker left it. The test checks run twice where the change touches
// tests: the whole suite as the base commit has its tests (inTestView: the base's own words,
// which nothing the change did to a test can soften), and the test modules the change touched
// as it left them (the new tests must pass too). Failures of either count against the
// baseline; flakes are re-run where they failed; the target tests must pass; and a test that
// passed at the base and does not pass in its base version, where the change touched it,
// is named in Gate.Weakened.
func (c *checkRun) fullChecks(ctx context.Context) Gate {
	tests, others := testCheckSplit(c.checks)
	var results, view []validate.Result
	var flaky, slow []string
	if len(others) > 0 {
		results = c.run.Run(ctx, c.tree.dir, others)
		results, slow = c.retryTimeouts(ctx, others, results)
	}
	if len(tests) > 0 {
		err := c.tree.inTestView(ctx, c.changed, func() {
			var s []string
			run := narrowTo(c.sel, tests)
			if len(run) > 0 {
				view = c.run.Run(ctx, c.tree.dir, run)
			}
			view, s = c.retryTimeouts(ctx, run, view)
			slow = append(slow, s...)
			view, flaky = c.rerunNew(ctx, run, view)
			view = standIn(c.sel, tests, view, c.baseline)
		})
		if err != nil {
			view = unusable(tests, "the tests could not be set to the base commit for the checks: "+err.Error())
		}
	}
	own, ownFlaky := c.ownTests(ctx, tests)
	flaky = append(flaky, ownFlaky...)
	touched := slices.DeleteFunc(slices.Clone(c.changed), func(p string) bool { return !c.tree.isTestPath(p) })
	view, unmarked := unmarkedXfails(view, own, c.baseline, touched, c.tree.tests())
	results = inOrder(c.checks, append(results, mergeOwn(view, own)...))
	g := Compare(c.baseline, results)
	g.unmarked = unmarked
	if len(unmarked) > 0 {
		g.Text += fmt.Sprintf("\n%d test(s) marked xfail at the base commit pass with your change, and your change took the mark away (xfail_strict makes their marked base version fail): they count as passing:\n- %s\n",
			len(unmarked), strings.Join(unmarked, "\n- "))
	}
	if len(slow) > 0 {
		g.Slow = slow
		g.Text += fmt.Sprintf("\n%d check(s) timed out at first, then finished when re-run on their own (the machine was busy; not counted against you):\n- %s\n", len(slow), strings.Join(slow, "\n- "))
	}
	if g.Cancelled {
		return g
	}
	g.own = map[string]map[string]validate.Outcome{}
	for _, r := range own {
		g.own[r.Name] = r.Outcomes
	}
	g.Weakened, g.editedDoctests = c.weakened(ctx, g)
	if len(flaky) > 0 {
		g.Flaky = flaky
		g.Text += fmt.Sprintf("\n%d test(s) failed, then passed when re-run alone (flaky, not counted): %s\n", len(flaky), strings.Join(flaky, ", "))
		c.jr.noteFlaky(flaky)
	}
	if len(c.tree.testPaths(c.changed)) > 0 && len(tests) > 0 {
		g.Text += "\nTests ran in their base versions; the test files you touched ran apart, as you left them.\n"
	}
	if in := c.tree.testInputs(c.changed); len(in) > 0 && len(tests) > 0 {
		g.Text += fmt.Sprintf("The base's tests read %s themselves (what they expect), so they ran with its base version: a change to it is a test change, never a way to make them pass.\n",
			strings.Join(clipList(in, 5), ", "))
	}
	if len(g.Weakened) > 0 {
		g.Passed = false
		g.failedKeys = append(g.failedKeys, g.Weakened...)
		sort.Strings(g.failedKeys)
		g.Text += fmt.Sprintf("\n%d test(s) pass at the base commit and do not pass in their base version with your change (it changed, skipped, deleted or renamed them, or its code makes them skip or go uncollected). A change may not weaken the tests the base passed:\n- %s\n",
			len(g.Weakened), strings.Join(clipList(g.Weakened, 20), "\n- "))
	}
	return c.requireTargets(ctx, g)
}

// rerunNew re-runs, alone, the tests of results that fail without failing at the base, and
// returns the results without the ones that then passed, and those (flaky).
func (c *checkRun) rerunNew(ctx context.Context, checks []validate.Check, results []validate.Result) ([]validate.Result, []string) {
	g := Compare(c.baseline, results)
	if len(g.newTests) == 0 || g.Cancelled {
		return results, nil
	}
	return Rerun(ctx, c.run, c.tree.dir, checks, results, g.newTests, c.reruns)
}

// ownTests runs the test modules the change touched, as it left them: pytest checks on those
// modules alone, unittest checks on the tests of those modules (unittestModuleFilters), or
// whole when none is a Python module. Nil when the change touches no test module.
func (c *checkRun) ownTests(ctx context.Context, tests []validate.Check) ([]validate.Result, []string) {
	files := c.tree.changedTestModules(c.changed)
	if len(files) == 0 {
		return nil, nil
	}
	var runs []validate.Check
	for _, t := range tests {
		switch t.Kind {
		case validate.KindPytest:
			t.Only = files
		case validate.KindUnittest:
			t.Only = unittestModuleFilters(files)
		}
		runs = append(runs, t)
	}
	res := c.run.Run(ctx, c.tree.dir, runs)
	res, _ = c.retryTimeouts(ctx, runs, res)
	return c.rerunNew(ctx, runs, res)
}

// unittestModuleFilters are -k patterns that select the tests of the Python modules among
// files: "<module name>." matches the dotted id of each of their tests whatever package the
// discovery names the module in (tests.test_x.C.test_y, or test_x.C.test_y from a start
// folder), and at worst tests of a module of the same name elsewhere too, never fewer.
// Suites a module's load_tests adds (doctests) are not filtered by -k and run as before.
func unittestModuleFilters(files []string) []string {
	var out []string
	for _, f := range files {
		if name, ok := strings.CutSuffix(path.Base(f), ".py"); ok && name != "" && !slices.Contains(out, name+".") {
			out = append(out, name+".")
		}
	}
	return out
}

// mergeOwn adds to each test check's run in the test view what the run of the change's own
// test modules found: its failures, and a summary of both. Outcomes stay the view's (the
// base versions); the own run's are kept apart (Gate.own).
func mergeOwn(view, own []validate.Result) []validate.Result {
	out := slices.Clone(view)
	for i, r := range out {
		j := slices.IndexFunc(own, func(o validate.Result) bool { return o.Name == r.Name })
		if j < 0 {
			continue
		}
		o := own[j]
		seen := map[string]bool{}
		for _, f := range r.Findings {
			seen[f.Test+"\x00"+f.Message] = true
		}
		r.Findings = slices.Clone(r.Findings)
		for _, f := range o.Findings {
			if !seen[f.Test+"\x00"+f.Message] {
				r.Findings = append(r.Findings, f)
			}
		}
		r.Passed = r.Passed && o.Passed
		r.Summary = fmt.Sprintf("%s; the change's test files: %s", orDash(r.Summary), orDash(o.Summary))
		r.Duration += o.Duration
		if !o.Passed {
			r.Output = clip(r.Output, 32<<10) + "\n" + clip(o.Output, 32<<10)
			r.ExitCode = max(r.ExitCode, o.ExitCode)
		}
		r.TimedOut = r.TimedOut || o.TimedOut
		r.NotStarted = r.NotStarted || o.NotStarted
		if r.Abort == "" {
			r.Abort = o.Abort
		}
		out[i] = r
	}
	return out
}

// outcomeAt is how test id ended in outcomes, a test whose module failed to import counting
// as an error and one whose module was skipped as it was collected (a module-level skip,
// in the test or in the code it imports) as skipped: pytest reports the module, by its
// path, not its tests.
func outcomeAt(outcomes map[string]validate.Outcome, id string) validate.Outcome {
	o := validate.OutcomeOf(outcomes, id)
	if o != validate.OutcomeMissing {
		return o
	}
	if file, _, ok := strings.Cut(id, "::"); ok {
		if m, ok := outcomes[file]; ok && (m.Failing() || m == validate.OutcomeSkipped) {
			return m
		}
	}
	return o
}

// touches reports whether a test id (a pytest node id or a unittest dotted id) lives in one
// of files, the test modules the change touched. A unittest id names its module from the
// root (discover from the root), or from the start folder tests says (`-s src`:
// src/test_x.py is test_x).
func touches(files []string, id string, tests *discover.Tests) bool {
	if file, _, ok := strings.Cut(id, "::"); ok {
		return slices.Contains(files, file)
	}
	for _, f := range files {
		for _, module := range []string{strings.ReplaceAll(strings.TrimSuffix(f, ".py"), "/", "."), tests.UnittestModule(f)} {
			if module != "" && strings.HasPrefix(id, module+".") {
				return true
			}
		}
	}
	return false
}

// weakened lists the tests that passed at the base commit and that the change weakens: the
// change's own version of the test no longer runs and passes (deleted, renamed, skipped,
// xfailed), or its base version no longer passes while the change's version does not fail
// (rewritten to match), or the change's code skips, xfails or leaves uncollected its base
// version while nothing new failed in that check, or the change edits it and it is a doctest in the code
// (see doctests.go). A base version that fails, where the change's version fails too (or the
// change left the test alone), is an ordinary new failure. doctests are the entries of out
// that are such edited doctests.
func (c *checkRun) weakened(ctx context.Context, g Gate) (out, doctests []string) {
	touched := slices.DeleteFunc(slices.Clone(c.changed), func(p string) bool { return !c.tree.isTestPath(p) })
	edited := c.tree.editedDoctests(ctx, c.changed)
	for _, t := range testChecks(c.checks) {
		base := resultNamed(c.baseline, t.Name)
		now := resultNamed(g.Results, t.Name)
		if base == nil || now == nil || base.Outcomes == nil || now.Outcomes == nil {
			continue
		}
		own := g.own[t.Name]
		for _, id := range sortedPassed(base.Outcomes) {
			v := outcomeAt(now.Outcomes, id)
			mine := touches(touched, id, c.tree.tests())
			ownOut := validate.OutcomeMissing
			if own != nil {
				ownOut = outcomeAt(own, id)
			}
			if isEditedDoctest(edited, id) {
				what := fmt.Sprintf("%s: %s: a doctest in the code that the change edits; its base version cannot run with the change, and the change's %s", t.Name, id, outcomeWords(v))
				out, doctests = append(out, what), append(doctests, what)
				continue
			}
			switch {
			case v == validate.OutcomePassed && (!mine || ownOut == validate.OutcomePassed):
				continue // it still passes, in its base version and in the change's
			case v.Failing() && (!mine || ownOut.Failing()):
				continue // the change broke it and left it as it was: a new failure
			case v == validate.OutcomeMissing && !mine && hasNewFailure(g, t.Name):
				continue // the run failed before it: the new failure says why
			}
			what := fmt.Sprintf("%s: %s: in its base version %s with the change", t.Name, id, outcomeWords(v))
			if mine {
				what += fmt.Sprintf("; the change's version %s", outcomeWords(ownOut))
			}
			out = append(out, what)
		}
	}
	sort.Strings(out)
	sort.Strings(doctests)
	return out, doctests
}

// hasNewFailure reports whether check failed in g in a way the base did not: only such a
// failure explains a test the base passed going missing. A failure the base already had does
// not: a run that stops early (a KeyboardInterrupt or pytest.exit in the code) after a base
// failure leaves the tests after it unrun and looks no worse than the base.
func hasNewFailure(g Gate, check string) bool {
	return slices.ContainsFunc(g.failedKeys, func(k string) bool { return strings.HasPrefix(k, check+": ") })
}

// sortedPassed are the ids whose outcome is a pass, sorted.
func sortedPassed(outcomes map[string]validate.Outcome) []string {
	var out []string
	for id, o := range outcomes {
		if o == validate.OutcomePassed {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// outcomeWords says an outcome in a sentence: "failed", "was skipped", "is missing".
func outcomeWords(o validate.Outcome) string {
	switch o {
	case validate.OutcomePassed:
		return "passed"
	case validate.OutcomeFailed:
		return "failed"
	case validate.OutcomeError:
		return "errored"
	case validate.OutcomeSkipped:
		return "was skipped"
	case validate.OutcomeXFailed:
		return "xfailed (marked as expected to fail)"
	case validate.OutcomeXPassed:
		return "xpassed (marked as expected to fail)"
	}
	return "is missing (not collected: deleted, renamed or deselected)"
}
