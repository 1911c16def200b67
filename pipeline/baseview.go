package pipeline

import (
	"context"
	"path"
	"slices"

	"github.com/ticketd/ticketd/pipeline/validate"
)

// The change cannot change its judge. Every check run of an attempt, evidence runs included,
// uses the base commit's test infrastructure: the conftest.py files and the pytest, unittest,
// coverage, ruff and mypy configuration the change touched are set to their base versions
// for the run and put back after. A change to them is reported and refused at submit, never
// obeyed by the gate. The test checks the verdict rests on run the base's own tests (see
// testView): a test that exists at the base commit speaks only in its base version.

// infraNames are the files that configure how the checks run (pytest.toml and .pytest.toml
// from pytest 9 on, ahead of every other file).
var infraNames = map[string]bool{
	"conftest.py": true, "pytest.toml": true, ".pytest.toml": true, "pytest.ini": true, ".pytest.ini": true, "tox.ini": true, "setup.cfg": true,
	"pyproject.toml": true, "mypy.ini": true, ".mypy.ini": true, "ruff.toml": true, ".ruff.toml": true,
	".coveragerc": true, "noxfile.py": true,
}

// isInfraPath reports whether p configures the checks rather than being code or a test.
func isInfraPath(p string) bool { return infraNames[path.Base(p)] }

// infraPaths are the paths of changed that configure the checks.
func infraPaths(changed []string) []string {
	var out []string
	for _, p := range changed {
		if isInfraPath(p) && !hasGitElement(p) {
			out = append(out, p)
		}
	}
	return out
}

// baseInfraRunner runs checks with every changed configuration file and conftest.py of a
// change (changed) as at the base commit, and refuses a run that changed the base's tests
// (testTree.watchRun): every check run of an attempt goes through it.
// Without a reader of the base commit (Job.BaseFile nil) it runs them as they are.
type baseInfraRunner struct {
	tree    *testTree
	run     CheckRunner // the Runner's
	changed []string
}

var _ CheckRunner = baseInfraRunner{}

func (r baseInfraRunner) Run(ctx context.Context, dir string, checks []validate.Check) []validate.Result {
	run := func() []validate.Result {
		return r.tree.watchRun(checks, func() []validate.Result { return r.run.Run(ctx, dir, checks) })
	}
	paths := infraPaths(r.changed)
	if len(paths) == 0 || r.tree.baseFile == nil {
		return run()
	}
	var res []validate.Result
	err := r.tree.swapToBase(ctx, paths, func() { res = run() })
	if err != nil {
		return unusable(checks, "the base commit's test configuration could not be put in place for the checks: "+err.Error())
	}
	return res
}

// unusable are results for checks whose run cannot be trusted: none passes, and each stops
// the attempt (validate.Aborted).
func unusable(checks []validate.Check, reason string) []validate.Result {
	out := make([]validate.Result, len(checks))
	for i, c := range checks {
		out[i] = validate.Result{Name: c.Name, Kind: c.Kind, ExitCode: -1, Tests: -1, Summary: reason, Abort: reason}
	}
	return out
}

// testCheckSplit splits checks into the test checks (pytest, unittest) and the others.
func testCheckSplit(checks []validate.Check) (tests, others []validate.Check) {
	for _, c := range checks {
		if c.Kind == validate.KindPytest || c.Kind == validate.KindUnittest {
			tests = append(tests, c)
		} else {
			others = append(others, c)
		}
	}
	return tests, others
}

// inOrder returns results ordered as checks are, by name.
func inOrder(checks []validate.Check, results []validate.Result) []validate.Result {
	out := make([]validate.Result, 0, len(results))
	for _, c := range checks {
		if i := slices.IndexFunc(results, func(r validate.Result) bool { return r.Name == c.Name }); i >= 0 {
			out = append(out, results[i])
		}
	}
	return out
}
