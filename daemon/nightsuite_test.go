package daemon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/worktree"
)

// calcRepo: double is off by one; test_calc.py imports calc. With cli, tests/test_cli.py
// also pins double(1) == 3, through a subprocess whose code is a string the import graph
// cannot read: the fix breaks it, and only the whole suite sees that.
func calcRepo(t *testing.T, root, name string, cli bool) realRepo {
	t.Helper()
	r := realRepo{name: name, path: filepath.Join(root, name), title: "double(2) gives 5 in " + name}
	files := map[string]string{
		"calc.py":      "def double(x):\n    return x + x + 1\n",
		"test_calc.py": "from calc import double\n\n\ndef test_double_one():\n    assert double(1) > 0\n",
		// Tests the change cannot reach: the selection leaves them to the base's results.
		"other.py":      "def half(x):\n    return x / 2\n",
		"test_other.py": "from other import half\n\n\ndef test_half():\n    assert half(4) == 2\n",
	}
	if cli {
		files["tests/test_cli.py"] = "import subprocess\nimport sys\n\nCODE = \"import calc; assert calc.double(1) == 3\"\n\n\n" +
			"def test_cli_prints_three():\n    subprocess.run([sys.executable, \"-c\", CODE], check=True)\n"
	}
	writeRepo(t, r.path, files)
	git(t, r.path, "init", "-q", "--bare", filepath.Join(root, name+"-pub.git"))
	git(t, r.path, "remote", "add", "pub", filepath.Join(root, name+"-pub.git"))
	r.patch = fixPatch(t, r.path, map[string][2]string{
		"calc.py":      {"    return x + x + 1\n", "    return x + x\n"},
		"test_calc.py": {"def test_double_one():", "def test_double_two():\n    assert double(2) == 4\n\n\ndef test_double_one():"},
	})
	return r
}

// The selected tests pass both fixes; the night's whole suite passes the one in "good" and
// publishes it, and refuses the one in "cli" (its failure is outside what the change
// reaches): that fix is not pushed, goes back to its ticket with the failure, and counts as
// a selection missed.
func TestNightSuiteRefusesWhatSelectionMissed(t *testing.T) {
	t.Parallel() // a night of its own
	realNight(t)
	root := t.TempDir()
	good, cli := calcRepo(t, root, "good", false), calcRepo(t, root, "cli", true)
	url := scriptedServer(t, []scriptedmodel.Case{{Match: good.title, Patch: good.patch}, {Match: cli.title, Patch: cli.patch}})
	cfg := realConfig(t, root, url, good, cli)
	for _, name := range []string{"good", "cli"} {
		r := cfg.Repos[name]
		r.PushRemote = "pub"
		cfg.Repos[name] = r
	}
	n := runNight(t, cfg, 0)
	ctx := context.Background()

	g := ticketByRepo(t, n.store, "good")
	if g.State != store.StateDone {
		t.Fatalf("good: %s (%s); want done", g.State, g.Reason)
	}
	if !strings.Contains(git(t, good.path, "ls-remote", "pub"), g.Branch) {
		t.Errorf("good: %s not pushed after the whole suite passed", g.Branch)
	}
	if noteWith(t, n.store, g.ID, NightSuiteNote) == "" {
		ev, _ := n.store.Events(ctx, g.ID)
		t.Errorf("good: no note that the night's whole suite passed: %+v", ev)
	}

	c := ticketByRepo(t, n.store, "cli")
	if noteWith(t, n.store, c.ID, HeldNote) == "" {
		t.Fatalf("cli: its fix was not held for the whole suite (no submit passed by the selected tests)")
	}
	if c.State != store.StateQueued {
		t.Errorf("cli: %s (%s); want queued again: the whole suite refused its fix", c.State, c.Reason)
	}
	if out := git(t, cli.path, "ls-remote", "pub"); strings.Contains(out, "ticketd/") {
		t.Errorf("cli: a refused fix was published: %s", out)
	}
	missed := false
	events, _ := n.store.Events(ctx, c.ID)
	for _, e := range events {
		missed = missed || e.Kind == store.EventSelectionMissed && strings.Contains(e.Reason, "test_cli.py")
	}
	if !missed {
		t.Errorf("cli: no selection_missed event naming tests/test_cli.py: %+v", events)
	}
	counts, err := n.store.SelectionMissed(ctx)
	if err != nil || counts["cli"] != 1 || counts["good"] != 0 {
		t.Errorf("SelectionMissed = %v, %v; want cli 1, good 0", counts, err)
	}
}

// A fix held for the whole suite with no verdict after (the night stopped first) is never
// pushed as a leftover; a verdict either way releases it.
func TestHeldUnjudged(t *testing.T) {
	held := store.Event{Kind: store.EventNote, Reason: HeldNote + "…"}
	for _, tt := range []struct {
		name string
		evs  []store.Event
		want bool
	}{
		{"never held", []store.Event{{Kind: store.EventCompleted}}, false},
		{"held, no verdict", []store.Event{{Kind: store.EventCompleted}, held}, true},
		{"held, passed", []store.Event{held, {Kind: store.EventNote, Reason: NightSuiteNote + "3.00s over 1 fix(es)"}}, false},
		{"held, refused", []store.Event{held, {Kind: store.EventSelectionMissed}}, false},
		{"held again after a verdict", []store.Event{held, {Kind: store.EventSelectionMissed}, held}, true},
	} {
		if got := heldUnjudged(tt.evs); got != tt.want {
			t.Errorf("%s: heldUnjudged = %v; want %v", tt.name, got, tt.want)
		}
	}
}

// seenRunner is a check runner that records what the tree held when the checks ran.
type seenRunner struct {
	file string
	seen []string
}

func (r *seenRunner) Run(_ context.Context, dir string, _ []validate.Check) []validate.Result {
	data, _ := os.ReadFile(filepath.Join(dir, r.file))
	r.seen = append(r.seen, string(data))
	return nil
}

// The whole suite runs over the held fixes' changes applied in turn: two fixes to one file
// (different lines, as the night's agreement check let through) are both in the tree, and
// two that do not apply together are said to, not run.
func TestSuiteOverStacksFixesOfOneFile(t *testing.T) {
	root := t.TempDir()
	repo := filepath.Join(root, "pricing")
	lines := "def tax(x):\n    return x\n\n\n\n\ndef bulk(x):\n    return x\n"
	writeRepo(t, repo, map[string]string{"rules.py": lines})
	base := strings.TrimSpace(git(t, repo, "rev-parse", "HEAD"))
	branch := func(name, old, new string) heldFix {
		t.Helper()
		git(t, repo, "checkout", "-q", "-b", name, base)
		write(t, filepath.Join(repo, "rules.py"), strings.Replace(lines, old, new, 1))
		git(t, repo, "commit", "-q", "-am", name)
		git(t, repo, "checkout", "-q", "main")
		return heldFix{id: int64(len(name)), branch: name, name: "pricing", repo: config.Repo{Path: repo}, base: base,
			facts: repoFacts{checks: []validate.Check{{Name: "tests", Kind: validate.KindPytest}}}}
	}
	taxFix := branch("fix-tax", "def tax(x):\n    return x\n", "def tax(x):\n    return round(x)\n")
	bulkFix := branch("fix-bulk", "def bulk(x):\n    return x\n", "def bulk(x):\n    return x * 0.9\n")
	clash := branch("fix-tax-too", "def tax(x):\n    return x\n", "def tax(x):\n    return int(x)\n")
	trees := worktree.NewManager(filepath.Join(root, "work"), nil)
	ctx := context.Background()

	run := &seenRunner{file: "rules.py"}
	if _, err := suiteOver(ctx, trees, run, []heldFix{taxFix, bulkFix}); err != nil {
		t.Fatal(err)
	}
	if len(run.seen) != 1 || !strings.Contains(run.seen[0], "round(x)") || !strings.Contains(run.seen[0], "x * 0.9") {
		t.Errorf("the whole suite ran over:\n%q\nwant both fixes of rules.py", run.seen)
	}
	if _, err := suiteOver(ctx, trees, run, []heldFix{taxFix, clash}); !errors.Is(err, worktree.ErrDoesNotApply) {
		t.Errorf("two fixes of one line: %v; want ErrDoesNotApply", err)
	}
	if len(run.seen) != 1 {
		t.Errorf("the checks ran over fixes that do not apply together")
	}
}
