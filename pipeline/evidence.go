package pipeline

import (
	"context"
	"errors"
	"fmt"
	"os"
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

// errNoBaseReader means the job cannot read files at the base commit (Job.BaseFile is nil).
var errNoBaseReader = errors.New("the base commit's files cannot be read in this job")

// evidence looks for what shows the change (diff, touching changed) fixes the bug; g is the
// passing gate of the full checks on it. An error means the worktree could not be put back
// as the maker left it: the attempt must stop.
func (a *attempt) evidence(ctx context.Context, diff string, changed []string, g Gate) (*Evidence, error) {
	a.changed = changed
	ev := &Evidence{InfraChanges: infraPaths(changed)}
	baseFailing := FailingTests(a.job.Baseline)
	testFiles := a.changedTestModules(changed)
	named := a.targetTests()
	ev.TestChanges = a.editedTests(ctx, changed)

	// Tests of the base commit, in their base version: failed at the base, ran and passed in
	// the gate's test view.
	for _, c := range a.testChecks() {
		view := resultNamed(g.Results, c.Name)
		if view == nil {
			continue
		}
		for _, id := range baseFailing[c.Name] {
			if outcomeAt(view.Outcomes, id) == validate.OutcomePassed {
				ev.Reproduced = append(ev.Reproduced, c.Name+": "+id)
			}
		}
	}

	// The change's new tests, and the verifications, against the code of the base commit.
	type baseRun struct {
		c   validate.Check
		res validate.Result
	}
	var baseRuns []baseRun
	verify := a.verificationChecks()
	var verBase []*validate.Result
	runAtBase := func() {
		for _, c := range a.testChecks() {
			only := slices.Clone(testFiles)
			for _, id := range named {
				file, _, _ := strings.Cut(id, "::")
				if !slices.Contains(only, file) && !slices.Contains(baseFailing[c.Name], id) {
					only = append(only, id)
				}
			}
			if len(only) == 0 || c.Kind == validate.KindUnittest && len(testFiles) == 0 {
				continue
			}
			run := c
			if c.Kind == validate.KindPytest {
				run.Only = only
			}
			if res := a.checks().Run(ctx, a.job.Dir, []validate.Check{run}); len(res) == 1 {
				baseRuns = append(baseRuns, baseRun{c, res[0]})
			}
		}
		for _, vc := range verify {
			res := a.checks().Run(ctx, a.job.Dir, []validate.Check{vc.check})
			if len(res) == 1 {
				verBase = append(verBase, &res[0])
			} else {
				verBase = append(verBase, nil)
			}
		}
	}
	wantBase := len(verify) > 0 || len(testFiles) > 0 || len(a.targets) > 0
	if wantBase {
		err := a.atBase(ctx, changed, runAtBase)
		var restore *restoreError
		switch {
		case errors.As(err, &restore):
			return nil, err
		case err != nil:
			ev.Notes = append(ev.Notes, "the change's tests could not be run at the base commit: "+err.Error())
			baseRuns, verBase = nil, nil
		}
	}
	for _, br := range baseRuns {
		if br.res.Outcomes == nil {
			ev.Notes = append(ev.Notes, fmt.Sprintf("%s: the change's tests gave no per-test report at the base commit (%s)", br.c.Name, br.res.Summary))
			continue
		}
		own := g.own[br.c.Name]
		for _, id := range a.newTests(ctx, br.c.Name, testFiles, own) {
			key := br.c.Name + ": " + id
			atBase := outcomeAt(br.res.Outcomes, id)
			switch {
			case atBase.Failing() && outcomeAt(own, id) == validate.OutcomePassed:
				if !slices.Contains(ev.NewTests, key) {
					ev.NewTests = append(ev.NewTests, key)
				}
			case !atBase.Failing() && !slices.Contains(ev.PassAtBase, id):
				ev.PassAtBase = append(ev.PassAtBase, passAtBaseText(id, atBase))
			}
		}
		for _, id := range a.targets {
			if o := outcomeAt(br.res.Outcomes, id); o != validate.OutcomeMissing && !o.Failing() && !slices.ContainsFunc(ev.PassAtBase, func(p string) bool { return strings.HasPrefix(p, id) }) {
				ev.PassAtBase = append(ev.PassAtBase, passAtBaseText(id, o))
			}
		}
	}
	runs := &verificationRuns{diff: diff}
	for i, vc := range verify {
		vr := verificationRun{v: vc.v, what: vc.what}
		if i < len(verBase) {
			vr.base = verBase[i]
		}
		if res := a.checks().Run(ctx, a.job.Dir, []validate.Check{vc.check}); len(res) == 1 {
			vr.after = &res[0]
		}
		if vr.base != nil && vr.after != nil && !vr.base.Passed && vr.after.Passed {
			ev.Verified = append(ev.Verified, fmt.Sprintf("%s (%s)", vc.what, vc.v.Criterion))
		}
		runs.items = append(runs.items, vr)
	}
	a.verified = runs
	return ev, nil
}

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
func (a *attempt) newTests(ctx context.Context, check string, files []string, own map[string]validate.Outcome) []string {
	base := resultNamed(a.job.Baseline, check)
	if base == nil || base.Outcomes == nil || own == nil {
		var out []string
		for _, f := range files {
			out = append(out, a.newTestIDs(ctx, f)...)
		}
		return out
	}
	var out []string
	for id := range own {
		if isTestID(id) && touches(files, id) && validate.OutcomeOf(base.Outcomes, id) == validate.OutcomeMissing {
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

// editedTests are the test paths of changed that the base commit has: edits to existing
// tests (or their removal), which the report lists and never counts as evidence.
func (a *attempt) editedTests(ctx context.Context, changed []string) []string {
	var out []string
	for _, p := range changed {
		if !a.isTestPath(p) || isInfraPath(p) || a.job.BaseFile == nil {
			continue
		}
		if _, found, err := a.job.BaseFile(ctx, p); err == nil && found {
			out = append(out, p)
		}
	}
	return out
}

// testChecks are the job's pytest and unittest checks.
func (a *attempt) testChecks() []validate.Check {
	var out []validate.Check
	for _, c := range a.job.Checks {
		if c.Kind == validate.KindPytest || c.Kind == validate.KindUnittest {
			out = append(out, c)
		}
	}
	return out
}

// hasTestSuite reports whether the repository has tests the maker can add to: a test check
// whose base run collected at least one test.
func (a *attempt) hasTestSuite() bool {
	for _, r := range a.job.Baseline {
		if (r.Kind == validate.KindPytest || r.Kind == validate.KindUnittest) && r.Tests > 0 {
			return true
		}
	}
	return false
}

func resultNamed(results []validate.Result, name string) *validate.Result {
	for i := range results {
		if results[i].Name == name {
			return &results[i]
		}
	}
	return nil
}

// newTestIDs are the test functions of test module file that its base version lacks.
func (a *attempt) newTestIDs(ctx context.Context, file string) []string {
	cur := a.tests().TestIDs(file, readLimited(a.job.Dir+"/"+file, maxIndexBytes))
	if a.job.BaseFile == nil {
		return nil
	}
	base, found, err := a.job.BaseFile(ctx, file)
	if err != nil {
		return nil
	}
	var old []string
	if found {
		old = a.tests().TestIDs(file, base)
	}
	return slices.DeleteFunc(cur, func(id string) bool { return slices.Contains(old, id) })
}

// changedTestModules are the changed paths that are test modules (as the repository's test
// runners find them, see tests) and exist now.
func (a *attempt) changedTestModules(changed []string) []string {
	var out []string
	for _, p := range changed {
		if a.tests().IsTestFile(p) && !hasGitElement(p) {
			if fi, err := os.Lstat(a.job.Dir + "/" + p); err == nil && fi.Mode().IsRegular() {
				out = append(out, p)
			}
		}
	}
	return out
}

// tests is where the repository keeps its tests: Job.Tests, read at the base commit with the
// baseline, else read once from the worktree's configuration and the job's checks.
func (a *attempt) tests() *discover.Tests {
	a.testsOnce.Do(func() {
		a.discovered = a.job.Tests
		if a.discovered == nil {
			a.discovered = discover.FromDir(a.job.Dir, validate.DiscoverOptions(a.job.Checks))
		}
	})
	return a.discovered
}

// isTestPath reports whether a path belongs to the tests rather than the code under test: a
// test module as the repository's runners find it (tests.py where python_files says so, a
// root test.py that unittest runs), a conftest.py, a doctest file, or anything in a test
// folder or testpath (see discover.Tests.IsTestPath). The evidence step keeps these as the
// change left them when it sets the code back to the base commit.
func (a *attempt) isTestPath(p string) bool { return a.tests().IsTestPath(p) }

// isTestPath is the answer for a repository that configures nothing (pytest's default
// names); an attempt asks a.isTestPath, which reads the repository's settings.
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

// atBase runs fn with every changed path that is not a test (isTestPath) as it is at the base
// commit — its base content, or absent when the change added it — and then puts each back
// as the change left it (see swapToBase).
func (a *attempt) atBase(ctx context.Context, changed []string, fn func()) error {
	var code []string
	for _, p := range changed {
		if !a.isTestPath(p) {
			code = append(code, p)
		}
	}
	return a.swapToBase(ctx, code, fn)
}
