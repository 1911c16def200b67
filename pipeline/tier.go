package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ticketd/ticketd/pipeline/validate"
)

// Which tier of the checks gave a gate its verdict.
const (
	// TierFirst: the tests the change can affect (the target tests and the test files that
	// import a changed module) failed, so the whole suite did not run.
	TierFirst = "first"
	// TierFull: the whole configured suite ran (after a first tier that passed, or when no
	// first tier could be chosen) and the verdict is on it.
	TierFull = "full"
)

// TierRun is what the first tier of a check run did: which tests it chose, how long they
// took and what they found.
type TierRun struct {
	Files    []string      `json:"files"`   // test files chosen by the import scan
	Targets  []string      `json:"targets"` // target test ids run besides those files
	Duration time.Duration `json:"duration"`
	Summary  string        `json:"summary"`  // each check's one-line summary
	Failures []string      `json:"failures"` // what made it fail; empty when it passed
}

// affectedTests is the test files a change of changed may affect, and how many test files
// the repository has, by its import graph (built and read in the graph's slot).
func affectedTests(t *testTree, changed []string) (files []string, total int, err error) {
	tests := t.tests()
	defer holdImportGraph()()
	graph, err := t.imports.Scan(t.dir, changed...)
	if err != nil {
		return nil, 0, err
	}
	graph.Tests = tests
	return graph.TestsAffectedBy(changed), graph.TestFiles(), nil
}

// maxFirstTierShare bounds the first tier: when the scan selects more than this share of the
// repository's test files (a changed conftest.py at the root, a core module everything
// imports), the first tier would cost nearly the whole suite and is skipped.
const maxFirstTierShare = 0.8

// firstTier runs, before the whole suite, the target tests and the test files the change can
// affect (validate.ScanImports). It returns the run (nil when no first tier was chosen) and,
// when the first tier already shows the submit must fail, the gate that says so. Its failures
// are judged against the baseline as the full gate would be: a new failure, or a target test
// that fails.
func (c *checkRun) firstTier(ctx context.Context) (*TierRun, *Gate) {
	changed := c.changed
	var pytests []validate.Check
	for _, t := range c.checks {
		if t.Kind == validate.KindPytest {
			pytests = append(pytests, t)
		}
	}
	if len(pytests) == 0 || len(changed) == 0 {
		return nil, nil
	}
	start := c.now()
	files, total, err := affectedTests(c.tree, changed)
	if err != nil {
		c.log.Warn("first tier: import scan", "err", err)
		return nil, nil
	}
	targets := slices.DeleteFunc(slices.Clone(c.targets), func(id string) bool {
		file, _, _ := strings.Cut(id, "::")
		return slices.Contains(files, file)
	})
	if len(files)+len(targets) == 0 {
		return nil, nil
	}
	if total > 0 && float64(len(files)) > maxFirstTierShare*float64(total) {
		return nil, nil
	}
	run := &TierRun{Files: files, Targets: targets}
	only := append(slices.Clone(files), targets...)
	var results []validate.Result
	ran := make([]validate.Check, 0, len(pytests))
	for _, t := range pytests {
		t.Only = only
		ran = append(ran, t)
		results = append(results, c.run.Run(ctx, c.tree.dir, []validate.Check{t})...)
	}
	results, _ = c.retryTimeouts(ctx, ran, results)
	g := Compare(c.baseline, results)
	if len(g.newTests) > 0 {
		rerun, flaky := Rerun(ctx, c.run, c.tree.dir, ran, results, g.newTests, c.reruns)
		if len(flaky) > 0 {
			results = rerun
			g = Compare(c.baseline, results)
			c.jr.noteFlaky(flaky)
		}
	}
	run.Duration = c.now().Sub(start)
	var sums []string
	for _, r := range results {
		sums = append(sums, r.Name+": "+orDash(r.Summary))
	}
	run.Summary = strings.Join(sums, "; ")
	run.Failures = append(run.Failures, g.New...)
	failing := FailingTests(results)
	for _, id := range c.targets {
		for _, ids := range failing {
			if slices.Contains(ids, id) {
				run.Failures = append(run.Failures, "target test still fails: "+id)
				g.failedKeys = append(g.failedKeys, "target: "+id)
			}
		}
	}
	if len(run.Failures) == 0 {
		return run, nil
	}
	g.Passed = false
	g.Tier, g.FirstTier = TierFirst, run
	var b strings.Builder
	fmt.Fprintf(&b, "First tier (the %d test file(s) that import what you changed%s, %s): %s. The whole suite was not run.\n",
		len(files), targetsPhrase(targets), run.Duration.Round(time.Millisecond), run.Summary)
	if len(g.New) > 0 {
		fmt.Fprintf(&b, "\n%d failure(s) that the base commit did not have (you caused these):\n- %s\n", len(g.New), strings.Join(g.New, "\n- "))
	}
	for _, f := range run.Failures {
		if !slices.Contains(g.New, f) {
			fmt.Fprintf(&b, "\n%s\n", f)
		}
	}
	g.Text = clip(b.String(), 12_000)
	return run, &g
}

func targetsPhrase(targets []string) string {
	if len(targets) == 0 {
		return ""
	}
	return fmt.Sprintf(" and %d target test(s)", len(targets))
}

// changedPaths returns the paths a change touches: Job.Changed when set, else the paths named
// by the diff's headers (a new file's "+++ b/", a deleted file's "--- a/").
func changedPaths(ctx context.Context, job Job, log *slog.Logger, diff string) []string {
	if job.Changed != nil {
		paths, err := job.Changed(ctx)
		if err == nil {
			return paths
		}
		log.Warn("first tier: list changed files", "err", err)
	}
	return DiffPaths(diff)
}

// DiffPaths returns the paths a unified git diff changes, in order, each once.
func DiffPaths(diff string) []string {
	var out []string
	add := func(p string) {
		p = strings.TrimRight(p, "\r")
		if strings.HasPrefix(p, `"`) {
			if u, err := strconv.Unquote(p); err == nil {
				p = u
			}
		}
		if p == "/dev/null" {
			return
		}
		if rest, ok := strings.CutPrefix(p, "a/"); ok {
			p = rest
		} else if rest, ok := strings.CutPrefix(p, "b/"); ok {
			p = rest
		}
		if p = path.Clean(p); p != "." && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	for _, line := range strings.Split(diff, "\n") {
		if rest, ok := strings.CutPrefix(line, "+++ "); ok {
			add(strings.SplitN(rest, "\t", 2)[0])
		} else if rest, ok := strings.CutPrefix(line, "--- "); ok {
			add(strings.SplitN(rest, "\t", 2)[0])
		}
	}
	return out
}
