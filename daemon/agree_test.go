package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/pipeline/discover"
	"github.com/ticketd/ticketd/pipeline/sandbox"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/worktree"
)

// TestConflictingFixesOnePublished: two issues about the same line, each fixed by the
// scripted maker (a test double) with a different edit of it, on two workers, with real
// git and pytest. Each fix passes the gate alone; the second to finish does not apply on
// top of the first: one ticket is done, the other escalated "conflicts with #N", its fix
// kept on its branch and its report saying so. Never two published branches that fail
// together.
func TestConflictingFixesOnePublished(t *testing.T) {
	t.Parallel()
	realNight(t)
	f := newFixture(t, 1)
	rule := filepath.Join(f.repo, "shop", "rule_00.py")
	data, err := os.ReadFile(rule)
	if err != nil {
		t.Fatal(err)
	}
	write(t, rule, strings.Replace(string(data), "return cents + 1\n", "return cents\n", 1))
	patch := git(t, f.repo, "diff")
	git(t, f.repo, "checkout", "-q", ".")
	title := "Checkout adds a cent for rule zero on every order"
	write(t, filepath.Join(f.issues, "01.md"), "---\ntitle: "+title+"\nrepo: shop\nlabels: [bug]\n---\nEvery order through checkout gains a stray cent when rule zero applies.\n")
	f.cases = append(f.cases, scriptedmodel.Case{Match: title, Patch: patch})
	_, url := f.scripted(t, scriptedmodel.Options{})
	cfg := f.config(t, url, 2)
	cfg.Duplicates.Enabled = false
	n := runNight(t, cfg, pipeline.LayoutCacheFriendly)
	ctx := context.Background()

	var done, refused []store.Ticket
	for _, id := range []int64{1, 2} {
		tk, err := n.store.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		switch tk.State {
		case store.StateDone:
			done = append(done, tk)
		case store.StateEscalated:
			refused = append(refused, tk)
		default:
			t.Errorf("ticket %d: %s (%s); want one done, one escalated", id, tk.State, tk.Reason)
		}
	}
	if len(done) != 1 || len(refused) != 1 {
		t.Fatalf("%d done, %d escalated; want one published fix and one that conflicts with it", len(done), len(refused))
	}
	want := fmt.Sprintf("conflicts with #%d", done[0].ID)
	if !strings.Contains(refused[0].Reason, want) {
		t.Errorf("escalated ticket's reason %q; want %q", refused[0].Reason, want)
	}
	report, err := n.store.Artifact(ctx, refused[0].ID, "report.md")
	if err != nil || !strings.Contains(string(report), want) {
		t.Errorf("escalated ticket's report (%v) does not say %q:\n%s", err, want, report)
	}
	// The refused fix is kept for a human, on the branch it was made on.
	if refused[0].Branch == "" || !strings.Contains(git(t, f.repo, "diff", "main", refused[0].Branch), "return cents") {
		t.Errorf("the refused fix is not kept on its branch %q", refused[0].Branch)
	}
}

// agreeRepo is a repository whose two fixes each pass alone but fail together, with no
// line in common: a removes fees.fee (and updates its one caller), b adds a report that
// calls it, with its test. c changes nothing either touches.
func agreeRepo(t *testing.T) (dir string, base string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "shop")
	write(t, filepath.Join(dir, "shop", "__init__.py"), "")
	write(t, filepath.Join(dir, "tests", "__init__.py"), "")
	write(t, filepath.Join(dir, "shop", "fees.py"), "def fee(cents):\n    return 1\n")
	write(t, filepath.Join(dir, "shop", "price.py"), "from shop import fees\n\n\ndef price(cents):\n    return cents + fees.fee(cents)\n")
	write(t, filepath.Join(dir, "shop", "names.py"), "NAME = 'shop'\n")
	write(t, filepath.Join(dir, "tests", "test_price.py"), "from shop.price import price\n\n\ndef test_price():\n    assert price(100) == 101\n")
	write(t, filepath.Join(dir, "tests", "test_names.py"), "from shop.names import NAME\n\n\ndef test_name():\n    assert NAME\n")
	for i := range 4 { // tests no fix reaches: the held fixes' agreement check leaves them out
		write(t, filepath.Join(dir, "tests", fmt.Sprintf("test_misc%d.py", i)), "import os\n\n\ndef test_sep():\n    assert os.sep\n")
	}
	git(t, dir, "init", "-q", "-b", "main")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "base")
	branch := func(name string, files map[string]string) {
		git(t, dir, "checkout", "-q", "-b", name, "main")
		for p, s := range files {
			write(t, filepath.Join(dir, p), s)
		}
		git(t, dir, "add", "-A")
		git(t, dir, "commit", "-q", "-m", name)
		git(t, dir, "checkout", "-q", "main")
	}
	branch("fix-a", map[string]string{
		"shop/fees.py":  "def service_fee(cents):\n    return 1\n",
		"shop/price.py": "from shop import fees\n\n\ndef price(cents):\n    return cents + fees.service_fee(cents)\n",
	})
	branch("fix-b", map[string]string{
		"shop/report.py":       "from shop import fees\n\n\ndef report(cents):\n    return f'{cents} + {fees.fee(cents)}'\n",
		"tests/test_report.py": "from shop.report import report\n\n\ndef test_report():\n    assert report(100) == '100 + 1'\n",
	})
	branch("fix-c", map[string]string{"shop/names.py": "NAME = 'the shop'\n"})
	return dir, strings.TrimSpace(git(t, dir, "rev-parse", "main"))
}

// TestCombinedChecks: the agreement check with real git and pytest. Two fixes that share
// no line but fail together are refused with the checks' failure; a fix that touches
// neither agrees with both.
func TestCombinedChecks(t *testing.T) {
	t.Parallel()
	realNight(t)
	dir, base := agreeRepo(t)
	runner := &validate.Runner{Sandbox: sandbox.Mode(testSandbox(t))}
	checks := []validate.Check{{Name: "tests", Kind: validate.KindPytest, Timeout: 2 * time.Minute}}
	ctx := context.Background()
	facts := repoFacts{checks: checks, results: runner.Run(ctx, dir, checks)}
	if !pipeline.Compare(facts.results, facts.results).Passed {
		t.Fatal("the base's own results do not pass against themselves")
	}
	c := combinedChecks{trees: worktree.NewManager(filepath.Join(t.TempDir(), "work"), nil), checks: runner}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	fix := func(id int64, branch string) pendingFix {
		return pendingFix{Ticket: id, Branch: branch, Base: base, RepoPath: dir, facts: facts}
	}
	err := c.checkFix(ctx, log, fix(2, "fix-b"), []publishedFix{{Ticket: 1, Branch: "fix-a"}})
	d, ok := err.(*disagreement)
	if !ok || len(d.With) != 1 || d.With[0] != 1 || !strings.Contains(d.Why, "test_report") {
		t.Fatalf("fix-b on top of fix-a: %v; want a disagreement with #1 naming test_report", err)
	}
	if err := c.checkFix(ctx, log, fix(3, "fix-c"), []publishedFix{{Ticket: 1, Branch: "fix-a"}}); err != nil {
		t.Errorf("fix-c on top of fix-a: %v; want it to agree", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "shop", "report.py")); !os.IsNotExist(err) {
		t.Errorf("the check left its stack in the repository's own working copy (%v)", err)
	}
}

// onlyRuns runs the real checks and records what each run of the pytest check selected
// ("" for the whole suite).
type onlyRuns struct {
	inner pipeline.CheckRunner
	mu    sync.Mutex
	runs  []string
}

func (o *onlyRuns) Run(ctx context.Context, dir string, checks []validate.Check) []validate.Result {
	o.mu.Lock()
	for _, c := range checks {
		if c.Kind == validate.KindPytest {
			o.runs = append(o.runs, strings.Join(c.Only, " "))
		}
	}
	o.mu.Unlock()
	return o.inner.Run(ctx, dir, checks)
}

func (o *onlyRuns) take() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := o.runs
	o.runs = nil
	return out
}

// The agreement check of fixes that all wait for the night's whole suite runs the tests the
// stacked changes reach, with the fixes' new test files; it still finds two fixes that fail
// together there. A fix published at once, or stacked on one the whole suite already
// judged, is checked with the whole suite. Real git and pytest.
func TestCombinedChecksOfHeldFixes(t *testing.T) {
	t.Parallel()
	realNight(t)
	dir, base := agreeRepo(t)
	runs := &onlyRuns{inner: &validate.Runner{Sandbox: sandbox.Mode(testSandbox(t))}}
	checks := []validate.Check{{Name: "tests", Kind: validate.KindPytest, Timeout: 2 * time.Minute}}
	ctx := context.Background()
	facts := repoFacts{checks: checks, results: runs.Run(ctx, dir, checks), tests: discover.FromDir(dir, validate.DiscoverOptions(checks))}
	runs.take()
	suite := &nightSuite{}
	suite.holdFix(heldFix{id: 1, branch: "fix-a", name: "shop", base: base, facts: facts})
	c := combinedChecks{trees: worktree.NewManager(filepath.Join(t.TempDir(), "work"), nil), checks: runs, suite: suite}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	selected := &pipeline.Selection{Files: []string{"tests/test_price.py"}}
	tests := []struct {
		name     string
		branch   string
		held     *pipeline.Selection
		earlier  int64 // the published fix below it
		disagree string
		runs     []string
	}{
		{name: "held on held: what they reach", branch: "fix-c", held: selected, earlier: 1,
			runs: []string{"tests/test_names.py tests/test_price.py"}},
		{name: "held on held: their new test fails together", branch: "fix-b", held: selected, earlier: 1, disagree: "test_report",
			runs: []string{"tests/test_price.py tests/test_report.py", "tests/test_price.py tests/test_report.py"}},
		{name: "published at once: the whole suite", branch: "fix-c", earlier: 1, runs: []string{""}},
		{name: "on a fix the whole suite judged: the whole suite", branch: "fix-c", held: selected, earlier: 7, runs: []string{""}},
	}
	for _, tt := range tests {
		fix := pendingFix{Ticket: 2, Branch: tt.branch, Base: base, RepoPath: dir, Repo: "shop", facts: facts, held: tt.held}
		err := c.checkFix(ctx, log, fix, []publishedFix{{Ticket: tt.earlier, Branch: "fix-a"}})
		if tt.disagree == "" && err != nil {
			t.Errorf("%s: %v; want it to agree", tt.name, err)
		}
		if d, ok := err.(*disagreement); tt.disagree != "" && (!ok || !strings.Contains(d.Why, tt.disagree)) {
			t.Errorf("%s: %v; want a disagreement naming %s", tt.name, err, tt.disagree)
		}
		if got := runs.take(); !slices.Equal(got, tt.runs) {
			t.Errorf("%s: the pytest runs selected %q, want %q", tt.name, got, tt.runs)
		}
	}
}
