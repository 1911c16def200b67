package daemon

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/worktree"
)

// countingChecks runs the real checks and counts the whole-suite runs (no Only selection) of
// the repository's configured checks; the night's sandbox probe is not one.
type countingChecks struct {
	inner *validate.Runner
	mu    sync.Mutex
	full  int
}

func (c *countingChecks) Run(ctx context.Context, dir string, checks []validate.Check) []validate.Result {
	c.mu.Lock()
	for _, ch := range checks {
		if len(ch.Only) == 0 && ch.Name != sandboxProbeName {
			c.full++
			break
		}
	}
	c.mu.Unlock()
	return c.inner.Run(ctx, dir, checks)
}

func (c *countingChecks) Preflight(ctx context.Context, dir string, ch validate.Check, seen *validate.Probed) error {
	return c.inner.Preflight(ctx, dir, ch, seen)
}

// The second night at an unchanged base commit reuses the baseline the first night kept in
// the database: it runs no whole-suite check beyond the attempt's own, and the ticket's
// history says the baseline was reused. A third night with a changed checks configuration
// computes it again (the negative control).
func TestBaselineKeptAcrossNights(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	f := newFixture(t, 3)
	_, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
	issues := f.issues
	nights := []struct {
		name       string
		issue      string
		edit       func(cfg *config.Config)
		wantFull   int // whole-suite runs: the baseline's (if computed) and one per submit
		wantReused bool
	}{
		{"first night computes", "00.md", nil, 2, false},
		{"second night at the same base reuses", "01.md", nil, 1, true},
		{"changed checks compute again", "02.md", func(cfg *config.Config) { cfg.Repos["shop"].Checks[0].Timeout *= 2 }, 2, false},
	}
	// Each night sees one more issue: move the others aside.
	all, _ := filepath.Glob(filepath.Join(issues, "*.md"))
	hidden := filepath.Join(f.dir, "hidden")
	for _, p := range all {
		move(t, p, filepath.Join(hidden, filepath.Base(p)))
	}
	for _, n := range nights {
		move(t, filepath.Join(hidden, n.issue), filepath.Join(issues, n.issue))
		cfg := f.config(t, url, 1)
		if n.edit != nil {
			n.edit(&cfg)
		}
		st, err := OpenStore(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		checks := &countingChecks{inner: checkRunner(cfg, "", slog.New(slog.NewTextHandler(io.Discard, nil)))}
		d := &Daemon{Config: cfg, Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Checks: checks}
		rep, err := d.RunNight(context.Background(), "test")
		if err != nil {
			t.Fatalf("%s: night: %v", n.name, err)
		}
		tickets, err := st.List(context.Background(), store.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		var notes []string
		for _, tk := range tickets {
			events, _ := st.Events(context.Background(), tk.ID)
			for _, e := range events {
				if e.Kind == "note" && strings.HasPrefix(e.Reason, "baseline of shop") && e.At.After(rep.Started.Add(-1)) {
					notes = append(notes, e.Reason)
				}
			}
		}
		st.Close()
		t.Logf("%s: whole-suite runs %d, baseline notes %q", n.name, checks.full, notes)
		if checks.full != n.wantFull {
			t.Errorf("%s: %d whole-suite check runs; want %d", n.name, checks.full, n.wantFull)
		}
		if len(notes) != 1 || strings.Contains(notes[0], "reused") != n.wantReused {
			t.Errorf("%s: baseline notes %q; want one saying reused=%v", n.name, notes, n.wantReused)
		}
	}
}

func move(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

// fixedChecks answers every run with one passing test check, without running anything.
type fixedChecks struct{}

func (fixedChecks) Run(_ context.Context, _ string, checks []validate.Check) []validate.Result {
	out := make([]validate.Result, len(checks))
	for i, c := range checks {
		out[i] = validate.Result{Name: c.Name, Kind: c.Kind, Passed: true, Tests: 1, Summary: "1 passed"}
	}
	return out
}

// TestBaselineSaveFailureIsLogged: a baseline the database does not take is said in the
// log (the night goes on with it in memory). The save error once went to a variable scoped
// to its if, so nothing was logged (staticcheck SA4006).
func TestBaselineSaveFailureIsLogged(t *testing.T) {
	f := newFixture(t, 1)
	st, err := store.Open(context.Background(), filepath.Join(f.dir, "t.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st.Close() // every load and save now fails
	var logs syncBuffer
	b := newBaselines(fixedChecks{}, st, slog.New(slog.NewTextHandler(&logs, nil)))
	trees := worktree.NewManager(filepath.Join(f.dir, "work"), nil)
	tree, err := trees.Prepare(context.Background(), f.repo, "main", "ticketd/1-x")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { trees.Remove(context.Background(), tree, false) })
	repo := config.Repo{Path: f.repo, BaseRef: "main", Checks: []validate.Check{{Name: "tests", Kind: validate.KindPytest}}}
	if _, err := b.get(context.Background(), repo, tree); err != nil {
		t.Fatalf("baseline: %v", err)
	}
	if !strings.Contains(logs.String(), "keep baseline") || !strings.Contains(logs.String(), "closed") {
		t.Errorf("log lacks the failed save:\n%s", logs.String())
	}
}

// The baseline note names the test files that could not import at the base and what they
// lacked: in the report they are only lines among the base's failures, and
// packaging's version tests (without pretend) gating nothing is the operator's to know.
func TestBaselineNotesMissingImports(t *testing.T) {
	collect := func(file, module string) validate.Finding {
		return validate.Finding{File: file, Test: file + "::" + strings.ReplaceAll(strings.TrimSuffix(file, ".py"), "/", "."),
			Message: "ModuleNotFoundError: No module named '" + module + "' (collection failure)"}
	}
	for _, tc := range []struct {
		name    string
		results []validate.Result
		want    []string
	}{
		{"none", []validate.Result{{Name: "tests", Kind: validate.KindPytest, Findings: []validate.Finding{
			{File: "tests/test_a.py", Test: "tests/test_a.py::test_x", Message: "ModuleNotFoundError: No module named 'late'"},
		}}}, []string{}},
		{"some modules", []validate.Result{{Name: "tests", Kind: validate.KindPytest, Notes: []string{"src/ put on PYTHONPATH"}, Findings: []validate.Finding{
			collect("tests/test_manylinux.py", "pretend"), collect("tests/test_musllinux.py", "pretend"),
			collect("tests/test_tags.py", "pretend"), collect("tests/test_version.py", "pretend"),
			collect("tests/test_pylock.py", "tomli_w"),
		}}}, []string{
			"checks tests: src/ put on PYTHONPATH",
			"check tests: 5 test file(s) fail to import at the base commit, so their tests cannot gate a fix; missing: pretend (tests/test_manylinux.py, tests/test_musllinux.py, tests/test_tags.py and 1 more); tomli_w (tests/test_pylock.py); install these for the checks' interpreter (a repos.<name>.setup recipe, docs/environments.md)",
		}},
		{"not a pytest check", []validate.Result{{Name: "types", Kind: validate.KindMypy, Findings: []validate.Finding{collect("tests/test_a.py", "x")}}}, []string{}},
	} {
		if got := baselineNotes(tc.results); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s: baselineNotes =\n%q\nwant\n%q", tc.name, got, tc.want)
		}
	}
}
