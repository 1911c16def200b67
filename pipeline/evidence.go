package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ticketd/ticketd/pipeline/discover"
	"github.com/ticketd/ticketd/pipeline/validate"
)

// No evidence, no ship. Passing the checks says a change broke nothing the base had; it
// does not say the change fixes the ticket. Before a change is reviewed, the evidence step
// looks for something that fails at the base commit and passes with the change, each in the
// base's own words:
//
//   - a test that exists at the base commit, in its base version: it failed at the base and
//     ran and passed in the gate's test view (the change's code, the base's tests). An edit to
//     an existing test is never its own evidence; it is listed as a test change;
//   - a test the change adds: run in the sandbox against the code as it was at the base
//     commit (the worktree's non-test files set back to their base versions, the base's test
//     configuration) it fails, and it ran and passed with the change;
//   - a triage verification command that fails at the base commit and passes with the change.
//
// Only a test that ran and passed counts as passing: skipped, xfailed, xpassed, deselected or
// not collected never do. Without any evidence, a repository with a test suite sends the
// change back once or twice, asking for a regression test (and saying which of the maker's
// tests pass at the base too); after that, or in a repository without tests, the attempt
// ends unverified: never shipped, its patch kept for a human.

// MaxEvidenceRefusals bounds the submits sent back for lack of evidence in one attempt; the
// next submit without evidence ends the attempt unverified.
const MaxEvidenceRefusals = 2

// Evidence is what the evidence step found for one submitted change.
type Evidence struct {
	// Reproduced are tests that exist at the base commit and, in their base version, fail at
	// the base commit and passed with the change ("check: node id").
	Reproduced []string `json:"reproduced,omitempty"`
	// NewTests are tests the change adds that fail against the base commit's code and
	// passed with the change ("check: node id").
	NewTests []string `json:"new_tests,omitempty"`
	// PassAtBase are tests the change adds or the maker named that do not fail at the base
	// commit: they do not show the bug.
	PassAtBase []string `json:"pass_at_base,omitempty"`
	// NotRun are tests the change adds that did not run with the change (skipped, as at the
	// base commit: an `async def` test with no async plugin, a skipif): a skipped test shows
	// nothing either way, and is not a test that passes at the base.
	NotRun []string `json:"not_run,omitempty"`
	// AsyncNotRun is set when some of NotRun are `async def` tests pytest skipped for want of
	// an async plugin (pytest-asyncio, anyio, ...) for the checks' interpreter.
	AsyncNotRun bool `json:"async_not_run,omitempty"`
	// Uncollected are the change's test files that pytest could not collect with the change
	// ("file (why)"): none of their tests ran, the change's new ones included. Most often the
	// file imports what the checks' interpreter lacks, at the base commit too (mako's
	// test/test_filters.py without markupsafe), where "an assertion added to an existing
	// test never runs" would send the maker after the wrong cause.
	Uncollected []string `json:"uncollected,omitempty"`
	// Verified are verification commands that fail at the base commit and pass with the change.
	Verified []string `json:"verified,omitempty"`
	// TestChanges are the test files of the base commit that the change edits: never evidence
	// on their own (their base versions ran), listed for the human with their diff.
	TestChanges []string `json:"test_changes,omitempty"`
	// InfraChanges are the test configuration files (conftest.py, pytest.ini, ...) the change
	// edits: the checks ran with the base commit's versions.
	InfraChanges []string `json:"infra_changes,omitempty"`
	// Notes say what could not be checked, and why.
	Notes []string `json:"notes,omitempty"`
}

// Found reports whether anything shows the change fixes the bug.
func (e *Evidence) Found() bool {
	return e != nil && len(e.Reproduced)+len(e.NewTests)+len(e.Verified) > 0
}

// Text is the evidence in a few lines, for the judge, the report and the maker: which
// version of each test ran, and how it ended.
func (e *Evidence) Text() string {
	if e == nil {
		return ""
	}
	var b strings.Builder
	if len(e.Reproduced) > 0 {
		fmt.Fprintf(&b, "Base tests, run as the base commit has them, that failed there and ran and passed with the change: %s\n", strings.Join(clipList(e.Reproduced, 10), ", "))
	}
	if len(e.NewTests) > 0 {
		fmt.Fprintf(&b, "New tests that failed at the base commit and ran and passed with the change: %s\n", strings.Join(clipList(e.NewTests, 10), ", "))
	}
	if len(e.Verified) > 0 {
		fmt.Fprintf(&b, "Verifications that fail at the base commit and pass with the change: %s\n", strings.Join(e.Verified, "; "))
	}
	if len(e.PassAtBase) > 0 {
		fmt.Fprintf(&b, "Tests of the change that do not fail at the base commit (they do not show the bug): %s\n", strings.Join(clipList(e.PassAtBase, 10), ", "))
	}
	if len(e.NotRun) > 0 {
		fmt.Fprintf(&b, "Tests of the change that did not run (skipped with the change, so they show nothing): %s\n", strings.Join(clipList(e.NotRun, 10), ", "))
		if e.AsyncNotRun {
			fmt.Fprintf(&b, "Note: %s\n", asyncSkipAdvice)
		}
	}
	if len(e.Uncollected) > 0 {
		fmt.Fprintf(&b, "Test files of the change that pytest could not collect with the change (none of their tests ran): %s\n", strings.Join(clipList(e.Uncollected, 10), "; "))
	}
	if len(e.TestChanges) > 0 {
		fmt.Fprintf(&b, "Edited test files of the base commit (never evidence; their base versions ran): %s\n", strings.Join(clipList(e.TestChanges, 10), ", "))
	}
	if len(e.InfraChanges) > 0 {
		fmt.Fprintf(&b, "Edited test configuration (not used; the checks ran the base commit's): %s\n", strings.Join(clipList(e.InfraChanges, 10), ", "))
	}
	for _, n := range e.Notes {
		fmt.Fprintf(&b, "Note: %s\n", n)
	}
	return b.String()
}

// errNoBaseReader means the job cannot read files at the base commit (Job.BaseFile is nil).
var errNoBaseReader = errors.New("the base commit's files cannot be read in this job")

// evidence is the evidence stage: it looks for what shows that the change fixes the bug,
// given c, the checks stage of the change, and g, its passing gate of the full checks. It
// returns the verification commands' runs too, which the judge reads. An error means the
// worktree could not be put back as the maker left it: the attempt must stop.
func evidence(ctx context.Context, c *checkRun, cand candidate, g Gate, verify []verifyCheck) (*Evidence, *verificationRuns, error) {
	ev := &Evidence{InfraChanges: infraPaths(cand.changed)}
	baseFailing := FailingTests(c.baseline)
	testFiles := c.tree.changedTestModules(cand.changed)
	ev.TestChanges = c.tree.editedTests(ctx, cand.changed)
	ev.Reproduced, ev.Notes = reproduced(ctx, c, cand.changed, g, baseFailing)

	// The change's new tests, and the verifications, against the code of the base commit.
	var runs []baseRun
	var verBase []*validate.Result
	if len(verify) > 0 || len(testFiles) > 0 || len(cand.named) > 0 {
		err := c.tree.atBase(ctx, cand.changed, func() {
			runs = testsAtBase(ctx, c, testFiles, baseFailing)
			verBase = runVerifications(ctx, c, verify)
		})
		var restore *restoreError
		switch {
		case errors.As(err, &restore):
			return nil, nil, err
		case err != nil:
			ev.Notes = append(ev.Notes, "the change's tests could not be run at the base commit: "+err.Error())
			runs, verBase = nil, nil
		}
	}
	for _, br := range runs {
		newTestEvidence(ctx, c, ev, br, testFiles, g.own[br.c.Name], cand.named)
		uncollectedEvidence(ev, br, testFiles, g.own[br.c.Name], resultNamed(g.Results, br.c.Name))
	}
	vr := verifiedAfter(ctx, c, cand.diff, verify, verBase)
	for _, r := range vr.items {
		if r.base != nil && r.after != nil && !r.base.Passed && r.after.Passed {
			ev.Verified = append(ev.Verified, fmt.Sprintf("%s (%s)", r.what, r.v.Criterion))
		}
	}
	return ev, vr, nil
}

// reproduced are the tests of the base commit, in their base version, that failed at the base
// and ran and passed in the gate's test view; and notes naming those that passed but are
// doctests the change (touching changed) edited, which ran in the change's version.
func reproduced(ctx context.Context, c *checkRun, changed []string, g Gate, baseFailing map[string][]string) (out, notes []string) {
	edited := c.tree.editedDoctests(ctx, changed)
	for _, t := range testChecks(c.checks) {
		view := resultNamed(g.Results, t.Name)
		if view == nil {
			continue
		}
		for _, id := range baseFailing[t.Name] {
			if outcomeAt(view.Outcomes, id) != validate.OutcomePassed {
				continue
			}
			if isEditedDoctest(edited, id) {
				notes = append(notes, fmt.Sprintf("%s: %s: a doctest in the code that the change edits; it ran as the change left it, so its pass is never evidence", t.Name, id))
				continue
			}
			out = append(out, t.Name+": "+id)
		}
	}
	// A test marked xfail for the bug failed at the base as expected, and its base version
	// passes with the change (a strict XPASS), which took the mark away.
	for _, key := range g.unmarked {
		if !slices.Contains(out, key) {
			out = append(out, key)
		}
	}
	return out, notes
}

// baseRun is one test check's run at the base commit on the change's tests.
type baseRun struct {
	c   validate.Check
	res validate.Result
}

// testsAtBase runs, with the code as at the base commit, the change's test modules (files)
// and the target tests that do not fail at the base already.
func testsAtBase(ctx context.Context, c *checkRun, files []string, baseFailing map[string][]string) []baseRun {
	var out []baseRun
	for _, t := range testChecks(c.checks) {
		only := slices.Clone(files)
		for _, id := range c.targets {
			file, _, _ := strings.Cut(id, "::")
			if !slices.Contains(only, file) && !slices.Contains(baseFailing[t.Name], id) {
				only = append(only, id)
			}
		}
		if len(only) == 0 || t.Kind == validate.KindUnittest && len(files) == 0 {
			continue
		}
		run := t
		switch t.Kind {
		case validate.KindPytest:
			run.Only = only
		case validate.KindUnittest:
			// The change's modules by name, and the targets by their dotted ids.
			run.Only = unittestModuleFilters(files)
			for _, id := range only {
				if !slices.Contains(files, id) {
					run.Only = append(run.Only, id)
				}
			}
		}
		if res := c.run.Run(ctx, c.tree.dir, []validate.Check{run}); len(res) == 1 {
			out = append(out, baseRun{t, res[0]})
		}
	}
	return out
}

// runVerifications runs each verification command once, its result nil when it did not run.
func runVerifications(ctx context.Context, c *checkRun, verify []verifyCheck) []*validate.Result {
	var out []*validate.Result
	for _, vc := range verify {
		if res := c.run.Run(ctx, c.tree.dir, []validate.Check{vc.check}); len(res) == 1 {
			out = append(out, &res[0])
		} else {
			out = append(out, nil)
		}
	}
	return out
}

// verifiedAfter runs the verification commands with the change, beside their runs at the
// base commit (verBase, in the same order).
func verifiedAfter(ctx context.Context, c *checkRun, diff string, verify []verifyCheck, verBase []*validate.Result) *verificationRuns {
	runs := &verificationRuns{diff: diff}
	after := runVerifications(ctx, c, verify)
	for i, vc := range verify {
		vr := verificationRun{v: vc.v, what: vc.what, after: after[i]}
		if i < len(verBase) {
			vr.base = verBase[i]
		}
		runs.items = append(runs.items, vr)
	}
	return runs
}

// newTestEvidence adds to ev what one test check's run at the base commit (br) shows of the
// change's new tests and the maker's named tests: each that fails there and passed with the
// change (own, the run of the change's test modules) is evidence; each that does not fail
// there does not show the bug.
func newTestEvidence(ctx context.Context, c *checkRun, ev *Evidence, br baseRun, files []string, own map[string]validate.Outcome, named []string) {
	if br.res.Outcomes == nil {
		ev.Notes = append(ev.Notes, fmt.Sprintf("%s: the change's tests gave no per-test report at the base commit (%s)", br.c.Name, br.res.Summary))
		return
	}
	for _, id := range newTests(ctx, c, br.c.Name, files, own) {
		key := br.c.Name + ": " + id
		atBase := outcomeAt(br.res.Outcomes, id)
		switch {
		case outcomeAt(own, id) == validate.OutcomeSkipped:
			// Skipped with the change: it never ran against the fix, so whatever it did at
			// the base it shows nothing, and "passes at the base too" would be untrue.
			if !slices.Contains(ev.NotRun, id) {
				ev.NotRun = append(ev.NotRun, id)
			}
			if slices.Contains(br.res.AsyncSkips, id) {
				ev.AsyncNotRun = true
			}
		case atBase.Failing() && outcomeAt(own, id) == validate.OutcomePassed:
			if !slices.Contains(ev.NewTests, key) {
				ev.NewTests = append(ev.NewTests, key)
			}
		case !atBase.Failing() && !slices.Contains(ev.PassAtBase, id):
			ev.PassAtBase = append(ev.PassAtBase, passAtBaseText(id, atBase))
		}
	}
	for _, id := range named {
		if o := outcomeAt(br.res.Outcomes, id); o != validate.OutcomeMissing && !o.Failing() && !slices.ContainsFunc(ev.PassAtBase, func(p string) bool { return strings.HasPrefix(p, id) }) {
			ev.PassAtBase = append(ev.PassAtBase, passAtBaseText(id, o))
		}
	}
}

// uncollectedEvidence adds to ev the change's test files (files) that its own run (own)
// reports as not collected: a module-level error, so none of the file's tests ran with the
// change, its new ones included. view is the gate's result of the check, whose findings say
// why; br, the run at the base commit, says whether the file failed the same way there.
func uncollectedEvidence(ev *Evidence, br baseRun, files []string, own map[string]validate.Outcome, view *validate.Result) {
	for _, f := range files {
		if !outcomeAt(own, f).Failing() {
			continue
		}
		why := cmp.Or(collectionError(view, f), "it did not collect")
		if outcomeAt(br.res.Outcomes, f).Failing() {
			why += ", at the base commit too"
		}
		entry := fmt.Sprintf("%s (%s)", f, why)
		if !slices.Contains(ev.Uncollected, entry) {
			ev.Uncollected = append(ev.Uncollected, entry)
		}
	}
}

// collectionError is the first line of the error pytest reported, in r, for the test file
// file as a whole (a module that did not collect), "" when it reported none.
func collectionError(r *validate.Result, file string) string {
	if r == nil {
		return ""
	}
	for _, fd := range r.Findings {
		if strings.HasPrefix(fd.Test, file+"::") && strings.HasSuffix(fd.Message, "(collection failure)") {
			line, _, _ := strings.Cut(strings.TrimSuffix(fd.Message, " (collection failure)"), "\n")
			return line
		}
	}
	return ""
}

// asyncSkipAdvice says why an `async def` test of the change did not run, and what to do.
const asyncSkipAdvice = "pytest skips `async def` tests here: the checks' interpreter has no async plugin (pytest-asyncio, anyio, ...), so such a test never runs, with the fix or without it. Install the plugin the project's tests use for the checks' interpreter (a repos.<name>.setup recipe, docs/environments.md), or write the regression test as a plain `def` test that runs the coroutine itself (asyncio.run(...))"

// passAtBaseText names a test that did not fail at the base commit, with how it ended there
// when that was not a pass.
func passAtBaseText(id string, o validate.Outcome) string {
	if o == validate.OutcomePassed {
		return id
	}
	return fmt.Sprintf("%s (%s at the base commit)", id, outcomeWords(o))
}

// newTests are the tests of check that the change adds in files (its test modules): those
// its own run reported that the base commit's run did not have; without per-test outcomes
// at the base, the test functions the base versions of the files lack.
func newTests(ctx context.Context, c *checkRun, check string, files []string, own map[string]validate.Outcome) []string {
	base := resultNamed(c.baseline, check)
	if base == nil || base.Outcomes == nil || own == nil {
		var out []string
		for _, f := range files {
			out = append(out, c.tree.newTestIDs(ctx, f)...)
		}
		return out
	}
	var out []string
	for id := range own {
		if isTestID(id) && touches(files, id, c.tree.tests()) && validate.OutcomeOf(base.Outcomes, id) == validate.OutcomeMissing {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// isTestID reports whether an outcome's id names a test: a pytest node id (file::name) or a
// unittest dotted id (module.Class.test), not a module pytest reports by its path alone.
func isTestID(id string) bool {
	return strings.Contains(id, "::") || !strings.HasSuffix(id, ".py") && strings.Contains(id, ".")
}

func resultNamed(results []validate.Result, name string) *validate.Result {
	for i := range results {
		if results[i].Name == name {
			return &results[i]
		}
	}
	return nil
}

// isTestPath is the answer for a repository that configures nothing (pytest's default
// names); an attempt asks testTree.isTestPath, which reads the repository's settings.
func isTestPath(p string) bool { return discover.Default().IsTestPath(p) }

func hasGitElement(p string) bool {
	for _, part := range strings.Split(p, "/") {
		if part == ".git" || part == ".." {
			return true
		}
	}
	return false
}

// restoreError means a file could not be put back as the maker left it.
type restoreError struct{ err error }

func (e *restoreError) Error() string {
	return "put the worktree back after running the tests at the base commit: " + e.err.Error()
}
func (e *restoreError) Unwrap() error { return e.err }
