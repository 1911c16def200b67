package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/ticketd/ticketd/pipeline/discover"
	"github.com/ticketd/ticketd/pipeline/validate"
)

// No evidence, no ship. Passing the checks says a change broke nothing the base had; it
// does not say the change fixes the ticket. Before a change is reviewed, the evidence step
// looks for something that fails at the base commit and passes with the change:
//
//   - a test the change adds or edits (or the maker names), run in the sandbox against the
//     code as it was at the base commit — the worktree's non-test files set back to their
//     base versions for that run, the tests as the maker left them;
//   - a target test (named by the issue or triage) or any other test that failed at the
//     base and passes now, run alone to show it still exists and passes;
//   - a triage verification command that fails at the base commit and passes with the change.
//
// Without any, a repository with a test suite sends the change back once or twice, asking
// for a regression test (and saying which of the maker's tests pass at the base too); after
// that, or in a repository without tests, the attempt ends unverified: never shipped, its
// patch kept for a human.

// MaxEvidenceRefusals bounds the submits sent back for lack of evidence in one attempt; the
// next submit without evidence ends the attempt unverified.
const MaxEvidenceRefusals = 2

// Evidence is what the evidence step found for one submitted change.
type Evidence struct {
	// Reproduced are tests that fail at the base commit and pass with the change
	// ("check: node id", or "check: files" when the base run could not start any test).
	Reproduced []string `json:"reproduced,omitempty"`
	// PassAtBase are tests the change adds or the maker named that pass at the base commit
	// too: they do not show the bug.
	PassAtBase []string `json:"pass_at_base,omitempty"`
	// Verified are verification commands that fail at the base commit and pass with the change.
	Verified []string `json:"verified,omitempty"`
	// Notes say what could not be checked, and why.
	Notes []string `json:"notes,omitempty"`
}

// Found reports whether anything shows the change fixes the bug.
func (e *Evidence) Found() bool { return e != nil && len(e.Reproduced)+len(e.Verified) > 0 }

// Text is the evidence in a few lines, for the judge, the report and the maker.
func (e *Evidence) Text() string {
	if e == nil {
		return ""
	}
	var b strings.Builder
	if len(e.Reproduced) > 0 {
		fmt.Fprintf(&b, "Tests that fail at the base commit and pass with the change: %s\n", strings.Join(clipList(e.Reproduced, 10), ", "))
	}
	if len(e.Verified) > 0 {
		fmt.Fprintf(&b, "Verifications that fail at the base commit and pass with the change: %s\n", strings.Join(e.Verified, "; "))
	}
	if len(e.PassAtBase) > 0 {
		fmt.Fprintf(&b, "Tests of the change that pass at the base commit too (they do not show the bug): %s\n", strings.Join(clipList(e.PassAtBase, 10), ", "))
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
	ev := &Evidence{}
	baseFailing, curFailing := FailingTests(a.job.Baseline), FailingTests(g.Results)
	testFiles := a.changedTestModules(changed)
	named := a.targetTests()

	// Tests that failed at the base and do not fail now (targets among them): run alone, to
	// show they still exist and pass, not that they were deleted or skipped.
	for _, c := range a.testChecks() {
		var fixed []string
		for _, id := range baseFailing[c.Name] {
			if !slices.Contains(curFailing[c.Name], id) {
				fixed = append(fixed, id)
			}
		}
		if len(fixed) == 0 {
			continue
		}
		switch c.Kind {
		case validate.KindPytest:
			alone := c
			alone.Only = fixed
			res := a.r.Checks.Run(ctx, a.job.Dir, []validate.Check{alone})
			if len(res) == 1 && res[0].Passed && res[0].Tests >= len(fixed) {
				for _, id := range fixed {
					ev.Reproduced = append(ev.Reproduced, c.Name+": "+id)
				}
			}
		case validate.KindUnittest:
			if cur := resultNamed(g.Results, c.Name); cur != nil && cur.Tests >= resultTests(a.job.Baseline, c.Name) {
				for _, id := range fixed {
					ev.Reproduced = append(ev.Reproduced, c.Name+": "+id)
				}
			}
		}
	}

	// The change's own tests, and the verifications, against the code of the base commit.
	var newIDs []string
	for _, f := range testFiles {
		newIDs = append(newIDs, a.newTestIDs(ctx, f)...)
	}
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
			if res := a.r.Checks.Run(ctx, a.job.Dir, []validate.Check{run}); len(res) == 1 {
				baseRuns = append(baseRuns, baseRun{c, res[0]})
			}
		}
		for _, vc := range verify {
			res := a.r.Checks.Run(ctx, a.job.Dir, []validate.Check{vc.check})
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
		failing := FailingTests([]validate.Result{br.res})[br.c.Name]
		if br.res.Tests < 0 && !br.res.Passed {
			// No test could start at the base (a conftest.py importing what the change adds):
			// the tests depend on the change.
			ev.Reproduced = append(ev.Reproduced, fmt.Sprintf("%s: %s (no test could run at the base commit: %s)", br.c.Name, strings.Join(testFiles, ", "), br.res.Summary))
			continue
		}
		for _, id := range failing {
			key := br.c.Name + ": " + id
			if !slices.Contains(curFailing[br.c.Name], id) && !slices.Contains(ev.Reproduced, key) {
				ev.Reproduced = append(ev.Reproduced, key)
			}
		}
		for _, id := range append(slices.Clone(a.targets), newIDs...) {
			if !failsIn(failing, id) && !slices.Contains(ev.PassAtBase, id) {
				ev.PassAtBase = append(ev.PassAtBase, id)
			}
		}
	}
	runs := &verificationRuns{diff: diff}
	for i, vc := range verify {
		vr := verificationRun{v: vc.v, what: vc.what}
		if i < len(verBase) {
			vr.base = verBase[i]
		}
		if res := a.r.Checks.Run(ctx, a.job.Dir, []validate.Check{vc.check}); len(res) == 1 {
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

// failsIn reports whether test id (possibly without parameters) is among failing, or its
// module failed to import (pytest's "file::module" collection error).
func failsIn(failing []string, id string) bool {
	file, _, _ := strings.Cut(id, "::")
	module := strings.ReplaceAll(strings.TrimSuffix(file, ".py"), "/", ".")
	for _, f := range failing {
		if f == id || strings.HasPrefix(f, id+"[") || f == file+"::"+module {
			return true
		}
	}
	return false
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

func resultTests(results []validate.Result, name string) int {
	if r := resultNamed(results, name); r != nil {
		return r.Tests
	}
	return 0
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
// as the change left it. Only regular files are touched, through an os.Root of the worktree,
// so no path (a symlink a check planted) leads outside it. A failure to put a file back is a
// *restoreError.
func (a *attempt) atBase(ctx context.Context, changed []string, fn func()) error {
	if a.job.BaseFile == nil {
		return errNoBaseReader
	}
	root, err := os.OpenRoot(a.job.Dir)
	if err != nil {
		return fmt.Errorf("open worktree: %w", err)
	}
	defer root.Close()
	type swap struct {
		path            string
		now, base       []byte
		mode            fs.FileMode
		existed, inBase bool
	}
	var swaps []swap
	for _, p := range changed {
		if a.isTestPath(p) || hasGitElement(p) {
			continue
		}
		s := swap{path: p, mode: 0o644}
		fi, err := root.Lstat(p)
		switch {
		case err == nil && fi.Mode().IsRegular():
			if s.now, err = root.ReadFile(p); err != nil {
				return fmt.Errorf("read %s: %w", p, err)
			}
			s.existed, s.mode = true, fi.Mode().Perm()
		case err == nil:
			return fmt.Errorf("%s is not a regular file (%s); not touched", p, fi.Mode().Type())
		case !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("stat %s: %w", p, err)
		}
		if s.base, s.inBase, err = a.job.BaseFile(ctx, p); err != nil {
			return fmt.Errorf("read %s at the base commit: %w", p, err)
		}
		if s.existed || s.inBase {
			swaps = append(swaps, s)
		}
	}
	put := func(p string, data []byte, mode fs.FileMode, present bool) error {
		if !present {
			if err := root.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			return nil
		}
		if dir := path.Dir(p); dir != "." {
			if err := root.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
		if err := root.WriteFile(p, data, mode); err != nil {
			return err
		}
		return root.Chmod(p, mode) // WriteFile keeps an existing file's mode
	}
	var errs []error
	done := 0
	for _, s := range swaps {
		if err := put(s.path, s.base, s.mode, s.inBase); err != nil {
			errs = append(errs, fmt.Errorf("set %s to the base commit: %w", s.path, err))
			break
		}
		done++
	}
	if len(errs) == 0 {
		fn()
	}
	var restore []error
	for _, s := range swaps[:min(done+1, len(swaps))] {
		if err := put(s.path, s.now, s.mode, s.existed); err != nil {
			restore = append(restore, fmt.Errorf("%s: %w", s.path, err))
		}
	}
	if len(restore) > 0 {
		return &restoreError{errors.Join(restore...)}
	}
	return errors.Join(errs...)
}
