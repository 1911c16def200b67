package pipeline

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ticketd/ticketd/pipeline/discover"
	"github.com/ticketd/ticketd/pipeline/validate"
)

// TierSelected: the tests the change can reach decided the verdict, the base commit's
// results standing for the rest of the suite; the whole suite runs once a night over the
// night's fixes before they are published (NightSuite).
const TierSelected = "selected"

// Selection is which pytest tests decide a submit: the test files the change can reach by
// the import graph (and its target tests), or, with Whole set, the whole suite and why.
type Selection struct {
	Files   []string `json:"files,omitempty"`   // test files the change reaches
	Targets []string `json:"targets,omitempty"` // target test ids outside those files
	Whole   string   `json:"whole,omitempty"`   // why the whole suite decides; "" when the selection does
}

// only is what the selected run names: the files, then the targets outside them.
func (s *Selection) only() []string { return append(slices.Clone(s.Files), s.Targets...) }

// inSelection reports whether test id (a pytest node id, or a module's path) ran in the
// selection.
func (s *Selection) inSelection(id string) bool {
	file, _, _ := strings.Cut(id, "::")
	return slices.Contains(s.Files, file) || slices.Contains(s.Targets, id)
}

// chooseTests decides which tests judge a change of the paths changed. It selects only what
// the import graph can see: a change to the tests' configuration (conftest.py, pytest.ini,
// pyproject.toml, setup.cfg, tox.ini, …), a package __init__.py, a file that is not a Python
// module (data a test may read), a module a string names, or a computed import in a file
// no scanned file imports (ImportGraph.DynamicReason) selects the whole suite; so does a
// check configured full_suite: every_submit, or a base run whose results cannot stand for
// the tests not run. A computed import the graph sees loaded is walked as an import of
// what it may load (validate/opaque.go). Every changed path is a seed of the graph, so an edge
// the change removed (a test edited to stop importing what it changed) is still walked: the
// edited file itself is reached, and what imports it.
func chooseTests(dir string, tests *discover.Tests, imports *validate.BaseImports, checks []validate.Check, baseline []validate.Result, changed, targets []string) (Selection, *validate.ImportGraph) {
	if why := wholeByConfig(checks, baseline); why != "" {
		return Selection{Whole: why}, nil
	}
	if len(changed) == 0 {
		return Selection{Whole: "the change names no path"}, nil
	}
	for _, p := range changed {
		if why := wholeByPath(p); why != "" {
			return Selection{Whole: why}, nil
		}
	}
	defer holdImportGraph()()
	graph, err := imports.Scan(dir, changed...)
	if err != nil {
		return Selection{Whole: "the import scan failed: " + err.Error()}, nil
	}
	graph.Tests = tests
	if why := dynamicReason(graph, tests, changed); why != "" {
		return Selection{Whole: why}, graph
	}
	return reached(graph, checks, baseline, changed, targets), graph
}

// dynamicReason is why a changed module may be loaded by name (ImportGraph.DynamicReason),
// "" when none may.
func dynamicReason(graph *validate.ImportGraph, tests *discover.Tests, changed []string) string {
	for _, p := range changed {
		if !tests.IsTestFile(p) {
			if why := graph.DynamicReason(p); why != "" {
				return why
			}
		}
	}
	return ""
}

// reached is the selection of the test files the graph reaches from changed, with the
// targets outside them; the whole suite when that is most of it.
func reached(graph *validate.ImportGraph, checks []validate.Check, baseline []validate.Result, changed, targets []string) Selection {
	// The selected run is in the test view (inTestView): the base's test files, so it names
	// the reached files the base has (a test file the change deleted included) and leaves the
	// change's new test files to ownTests.
	atBase := baseTestFiles(checks, baseline)
	var sel Selection
	for _, f := range graph.TestsAffectedBy(changed) {
		if atBase[f] {
			sel.Files = append(sel.Files, f)
		}
	}
	for _, p := range changed {
		if atBase[p] && !slices.Contains(sel.Files, p) {
			sel.Files = append(sel.Files, p)
		}
	}
	slices.Sort(sel.Files)
	for _, id := range targets {
		file, _, _ := strings.Cut(id, "::")
		if !sel.inSelection(id) && atBase[file] {
			sel.Targets = append(sel.Targets, id)
		}
	}
	if total := graph.TestFiles(); total > 0 && float64(len(sel.Files)) > maxFirstTierShare*float64(total) {
		return Selection{Whole: fmt.Sprintf("the change reaches %d of the %d test files", len(sel.Files), total)}
	}
	return sel
}

// baseTestFiles are the test files the base run of the pytest checks reported on.
func baseTestFiles(checks []validate.Check, baseline []validate.Result) map[string]bool {
	out := map[string]bool{}
	for _, c := range checks {
		if b := resultNamed(baseline, c.Name); c.Kind == validate.KindPytest && b != nil {
			for id := range b.Outcomes {
				file, _, _ := strings.Cut(id, "::")
				out[file] = true
			}
		}
	}
	return out
}

// wholeByConfig is why the configuration or the baseline asks for the whole suite, "" when
// neither does.
func wholeByConfig(checks []validate.Check, baseline []validate.Result) string {
	pytests := 0
	for _, c := range checks {
		if c.FullSuite == validate.FullSuiteEverySubmit && (c.Kind == validate.KindPytest || c.Kind == validate.KindUnittest) {
			return fmt.Sprintf("check %q is configured full_suite: every_submit", c.Name)
		}
		if c.Kind != validate.KindPytest {
			continue
		}
		pytests++
		b := resultNamed(baseline, c.Name)
		if b == nil || b.Outcomes == nil || b.Abort != "" || b.NotStarted || b.TimedOut || b.Cancelled || b.Tests < 0 {
			return fmt.Sprintf("check %q has no base results per test to stand for the tests not run", c.Name)
		}
	}
	if pytests == 0 {
		return "no pytest check to select tests in"
	}
	return ""
}

// wholeByPath is why a change of path p needs the whole suite, "" when the graph sees it.
func wholeByPath(p string) string {
	switch base := path.Base(p); {
	case isInfraPath(p):
		return p + " configures the tests or the checks"
	case base == "__init__.py":
		return p + " is a package __init__, which every import of the package runs"
	case !strings.HasSuffix(base, ".py"):
		return p + " is not a Python module (a data file a test may read)"
	}
	return ""
}

// narrowTo is tests with each pytest check limited to the selection; a pytest check with
// nothing selected is left out (the base's results stand for all of it). Nil sel: tests.
func narrowTo(sel *Selection, tests []validate.Check) []validate.Check {
	if sel == nil {
		return tests
	}
	only := sel.only()
	var out []validate.Check
	for _, t := range tests {
		if t.Kind == validate.KindPytest {
			if len(only) == 0 {
				continue
			}
			t.Only = only
		}
		out = append(out, t)
	}
	return out
}

// standIn completes each pytest check's selected run with the base commit's results for the
// tests it did not run: their outcomes and their failures (which stay the base's, never
// fixed nor new). A check that ran nothing is its base result. Nil sel: view.
func standIn(sel *Selection, tests []validate.Check, view, baseline []validate.Result) []validate.Result {
	if sel == nil {
		return view
	}
	out := slices.Clone(view)
	for _, t := range tests {
		if t.Kind != validate.KindPytest {
			continue
		}
		base := resultNamed(baseline, t.Name)
		if base == nil {
			continue
		}
		i := slices.IndexFunc(out, func(r validate.Result) bool { return r.Name == t.Name })
		if i < 0 {
			r := *base
			r.Summary = fmt.Sprintf("not run: the change reaches none of its tests; the base commit's results stand (%s)", orDash(base.Summary))
			r.Duration = 0
			out = append(out, r)
			continue
		}
		out[i] = mergeBase(sel, out[i], *base)
	}
	return out
}

// mergeBase is run (the selected tests) with base's outcomes and failures for the others.
func mergeBase(sel *Selection, run, base validate.Result) validate.Result {
	outcomes := make(map[string]validate.Outcome, len(base.Outcomes)+len(run.Outcomes))
	for id, o := range base.Outcomes {
		if !sel.inSelection(id) {
			outcomes[id] = o
		}
	}
	stood := len(outcomes)
	for id, o := range run.Outcomes {
		outcomes[id] = o
	}
	run.Findings = slices.Clone(run.Findings)
	for _, f := range base.Findings {
		id := f.Test
		if id == "" {
			id = f.File
		}
		if !sel.inSelection(id) {
			run.Findings = append(run.Findings, f)
			run.Passed = false
		}
	}
	run.Outcomes = outcomes
	run.Tests = len(outcomes)
	run.Summary = fmt.Sprintf("%s; %d test(s) the change cannot reach stand at the base commit's results", orDash(run.Summary), stood)
	return run
}

// RunReached runs checks on the tree at dir as the selected gate judges a change of changed:
// the pytest checks narrowed to the test files the change reaches by the import graph (its
// targets, and the test files it adds, with them), the base's results (baseline) standing
// for the tests not run; the whole suite when the selection cannot decide (chooseTests).
// The night's agreement check runs a stack of held fixes this way: the whole suite runs over
// them together before any is published (NightSuite). It returns the results and the
// selection they were run with.
func RunReached(ctx context.Context, run CheckRunner, dir string, tests *discover.Tests, imports *validate.BaseImports, checks []validate.Check, baseline []validate.Result, changed, targets []string) ([]validate.Result, Selection) {
	sel, _ := chooseTests(dir, tests, imports, checks, baseline, changed, targets)
	if sel.Whole != "" {
		return run.Run(ctx, dir, checks), sel
	}
	atBase := baseTestFiles(checks, baseline)
	for _, p := range changed {
		if !atBase[p] && !slices.Contains(sel.Files, p) && tests != nil && tests.IsTestFile(p) {
			if fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p))); err == nil && fi.Mode().IsRegular() {
				sel.Files = append(sel.Files, p)
			}
		}
	}
	slices.Sort(sel.Files)
	narrowed := narrowTo(&sel, checks)
	var view []validate.Result
	if len(narrowed) > 0 {
		view = run.Run(ctx, dir, narrowed)
	}
	return inOrder(checks, standIn(&sel, checks, view, baseline)), sel
}
