package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// TestNightSuiteThatCannotRunSaysSo: the night's whole suite cannot prepare its tree (a git
// lock file left on its branch). Before, the fix stayed done and unpublished with a log line
// and a note, and the night said ok. Now the night is partial naming the ticket, the
// repository and why; the fix is still done and not pushed.
func TestNightSuiteThatCannotRunSaysSo(t *testing.T) {
	t.Parallel() // a night of its own
	realNight(t)
	root := t.TempDir()
	good := calcRepo(t, root, "good", false)
	url := scriptedServer(t, []scriptedmodel.Case{{Match: good.title, Patch: good.patch}})
	cfg := realConfig(t, root, url, good)
	r := cfg.Repos["good"]
	r.PushRemote = "pub"
	cfg.Repos["good"] = r
	write(t, filepath.Join(good.path, ".git", "refs", "heads", "ticketd", "night-suite-1.lock"), "")
	n := runNight(t, cfg, 0)
	t.Logf("night %s: %s", n.rep.Outcome, n.rep.Error)
	g := ticketByRepo(t, n.store, "good")
	if g.State != store.StateDone || noteWith(t, n.store, g.ID, HeldNote) == "" {
		t.Fatalf("good: %s (%s), held note %q; want done, its fix held for the whole suite", g.State, g.Reason, noteWith(t, n.store, g.ID, HeldNote))
	}
	if strings.Contains(git(t, good.path, "ls-remote", "pub"), g.Branch) {
		t.Errorf("good: %s pushed, though no whole suite judged it", g.Branch)
	}
	if n.rep.Outcome != store.OutcomePartial || !strings.Contains(n.rep.Error, "not published") || !strings.Contains(n.rep.Error, "#1 of good") ||
		!strings.Contains(n.rep.Error, "night-suite-1.lock") || !strings.Contains(n.rep.Error, "remove the file") {
		t.Errorf("night %s (%s); want partial naming the unpublished fix and why", n.rep.Outcome, n.rep.Error)
	}
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

// verdictRunner is a check runner whose one test fails when the tree's rules.py holds
// "bad", and passes otherwise.
type verdictRunner struct{}

func (verdictRunner) Run(_ context.Context, dir string, checks []validate.Check) []validate.Result {
	data, _ := os.ReadFile(filepath.Join(dir, "rules.py"))
	o := validate.OutcomePassed
	if strings.Contains(string(data), "bad") {
		o = validate.OutcomeFailed
	}
	var out []validate.Result
	for _, c := range checks {
		out = append(out, validate.Result{Name: c.Name, Kind: c.Kind, Passed: o == validate.OutcomePassed, Tests: 1,
			Outcomes: map[string]validate.Outcome{"test_rules.py::test_tax": o}})
	}
	return out
}

// doneTicket enqueues a ticket of repo and takes it through claim to done.
func doneTicket(t *testing.T, st *store.Store, repo, ext string) int64 {
	t.Helper()
	ctx := context.Background()
	id, _, err := st.Enqueue(ctx, store.NewTicket{Source: "test", ExternalID: ext, Repo: repo, Title: ext})
	if err != nil {
		t.Fatal(err)
	}
	l, err := st.Claim(ctx, "w", time.Minute)
	if err != nil || l.Ticket.ID != id {
		t.Fatalf("claim %s: %+v, %v", ext, l.Ticket, err)
	}
	if err := st.Complete(ctx, id, l.Token, store.Result{Branch: "ticketd/" + ext}); err != nil {
		t.Fatal(err)
	}
	return id
}

// An idle worker runs a repository's whole suite only once nothing of that repository is
// open (queued, running, or an attempt still ending here); it publishes the fixes the suite
// passes at once and leaves a refusal (a requeue) for the night's end, so a refused
// ticket is not claimed again the same night.
func TestRunReadyWaitsForItsRepository(t *testing.T) {
	t.Parallel() // repositories and a check runner of its own
	root := t.TempDir()
	repo := filepath.Join(root, "pricing")
	writeRepo(t, repo, map[string]string{"rules.py": "def tax(x):\n    return x\n"})
	base := strings.TrimSpace(git(t, repo, "rev-parse", "HEAD"))
	fixBranch := func(name, body string) string {
		t.Helper()
		git(t, repo, "checkout", "-q", "-b", name, base)
		write(t, filepath.Join(repo, "rules.py"), body)
		git(t, repo, "commit", "-q", "-am", name)
		git(t, repo, "checkout", "-q", "main")
		return name
	}
	good := fixBranch("fix-good", "def tax(x):\n    return round(x)\n")
	bad := fixBranch("fix-bad", "def tax(x):\n    return 'bad'\n")
	facts := repoFacts{checks: []validate.Check{{Name: "tests", Kind: validate.KindPytest}},
		results: []validate.Result{{Name: "tests", Kind: validate.KindPytest, Passed: true, Tests: 1,
			Outcomes: map[string]validate.Outcome{"test_rules.py::test_tax": validate.OutcomePassed}}}}

	for _, tt := range []struct {
		name   string
		branch string
		open   store.State // a second ticket of the repository left in this state; "" none
		other  bool        // a ticket of another repository left queued
		busy   bool        // an attempt on the repository still ending on this node
		// claimsOver: this node claims nothing more tonight (the window closed): tickets
		// it can no longer claim do not keep the group waiting.
		claimsOver bool
		ran        bool
	}{
		{name: "all over, passes", branch: good, ran: true},
		{name: "all over, refused", branch: bad, ran: true},
		{name: "another repository still queued", branch: good, other: true, ran: true},
		{name: "a ticket still queued", branch: good, open: store.StateQueued},
		{name: "a ticket still running", branch: good, open: store.StateRunning},
		{name: "an attempt still ending here", branch: good, busy: true},
		{name: "claims over, a ticket still queued", branch: good, open: store.StateQueued, claimsOver: true, ran: true},
		{name: "claims over, refused with a ticket still queued", branch: bad, open: store.StateQueued, claimsOver: true, ran: true},
		{name: "claims over, a ticket running with no attempt of it here", branch: good, open: store.StateRunning, claimsOver: true, ran: true},
		{name: "claims over, an attempt still ending here", branch: good, busy: true, claimsOver: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			st, err := store.Open(ctx, filepath.Join(t.TempDir(), "t.db"), store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			id := doneTicket(t, st, "pricing", "held")
			if tt.open != "" {
				if _, _, err := st.Enqueue(ctx, store.NewTicket{Source: "test", ExternalID: "open", Repo: "pricing", Title: "open"}); err != nil {
					t.Fatal(err)
				}
				if tt.open == store.StateRunning {
					if _, err := st.Claim(ctx, "w", time.Minute); err != nil {
						t.Fatal(err)
					}
				}
			}
			if tt.other {
				if _, _, err := st.Enqueue(ctx, store.NewTicket{Source: "test", ExternalID: "other", Repo: "shop", Title: "other"}); err != nil {
					t.Fatal(err)
				}
			}
			d := &Daemon{Store: st, Logger: slog.New(slog.DiscardHandler)}
			n := &nightSuite{d: d, trees: worktree.NewManager(filepath.Join(t.TempDir(), "work"), nil), run: verdictRunner{}}
			n.held = map[string][]heldFix{"pricing " + base: {{id: id, branch: tt.branch, name: "pricing",
				repo: config.Repo{Path: repo}, base: base, facts: facts}}}
			if tt.busy {
				done := n.working("pricing")
				t.Cleanup(done)
			}

			if got := n.runReady(ctx, d.logger(), tt.claimsOver); got != tt.ran {
				t.Fatalf("runReady = %v; want %v", got, tt.ran)
			}
			passed := noteWith(t, st, id, NightSuiteNote) != ""
			if want := tt.ran && tt.branch == good; passed != want {
				t.Errorf("the whole suite's pass noted: %v; want %v", passed, want)
			}
			if tk, _ := st.Get(ctx, id); tk.State != store.StateDone {
				t.Errorf("after runReady the held ticket is %s; want done (a refusal waits for the night's end)", tk.State)
			}
			n.runAll(ctx, d.logger(), 1)
			want := store.StateDone
			if tt.branch == bad {
				want = store.StateQueued
			}
			if tk, _ := st.Get(ctx, id); tk.State != want {
				t.Errorf("after runAll the held ticket is %s (%s); want %s", tk.State, tk.Reason, want)
			}
			if !tt.ran && noteWith(t, st, id, NightSuiteNote) == "" {
				t.Errorf("runAll did not judge the group runReady left")
			}
		})
	}
}

// TestWholeSuiteRunsInTheGracePeriod: when the window closes, one attempt ("slow", whose fix
// adds a test that hangs) runs until the grace period ends, and another ("good", its checker
// held until the window has closed) ends early in it with its fix held for the whole suite,
// its repository holding a queued ticket the closed window leaves alone. The worker whose
// attempt ended runs good's whole suite then, and its fix is pushed tonight. Before, every
// suite waited for the night's last attempt, whose stop at the grace period's end cut them
// all short: good's fix stayed unpublished until the next night.
func TestWholeSuiteRunsInTheGracePeriod(t *testing.T) {
	t.Parallel() // a night of its own
	realNight(t)
	root := t.TempDir()
	good, slow := calcRepo(t, root, "good", false), calcRepo(t, root, "slow", false)
	slow.patch = fixPatch(t, slow.path, map[string][2]string{
		"calc.py":      {"    return x + x + 1\n", "    return x + x\n"},
		"test_calc.py": {"def test_double_one():", "def test_double_two():\n    import time\n    time.sleep(3600)\n\n\ndef test_double_one():"},
	})
	slow.checks = "[{name: tests, kind: pytest, timeout: 1h}]" // the grace period ends it, not a time-out
	url := scriptedServer(t, []scriptedmodel.Case{{Match: good.title, Patch: good.patch}, {Match: slow.title, Patch: slow.patch}})
	// The checker is asked once good's fix passed its gate; slow's never gets that far.
	hold := holdRole(t, url, "checker", good.title)
	cfg := realConfig(t, root, hold.URL, good, slow)
	r := cfg.Repos["good"]
	r.PushRemote = "pub"
	cfg.Repos["good"] = r
	// Heartbeats follow the test's clock: a lease of the store's (real) clock must outlast
	// the night unbeaten.
	cfg.Night.Window, cfg.Night.Grace, cfg.Night.Lease = time.Minute, time.Minute, time.Hour
	clock := newFakeClock(time.Now())
	st, done := startNight(t, context.Background(), cfg, clock)
	hold.waitArrived(t)
	clock.Advance(cfg.Night.Window) // claims stop before Advance returns
	ctx := context.Background()
	// The backlog: a ticket of good the closed window leaves queued, there before good's
	// attempt ends.
	const backlog = "the report page forgets the chosen currency"
	if _, _, err := st.Enqueue(ctx, store.NewTicket{Source: "test", ExternalID: "backlog", Repo: "good", Title: backlog}); err != nil {
		t.Fatal(err)
	}
	hold.Release()

	// The grace period has not ended (the clock stands still): the suite must run inside it,
	// and the push it passes. The bound only keeps a night that never runs it from hanging
	// the test.
	published := false
	for deadline := time.Now().Add(2 * time.Minute); !published && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		g := ticketByTitle(t, st, good.title)
		published = noteWith(t, st, g.ID, NightSuiteNote) != "" && noteWith(t, st, g.ID, pushedNote+g.Branch+" ") != ""
	}
	if !published {
		t.Errorf("good's whole suite did not run and pass its fix while slow's attempt held the grace period")
	}
	clock.Advance(cfg.Night.Grace)
	rep := awaitNight(t, done)
	if !errors.Is(rep.Stopped, ErrWindowClosed) {
		t.Errorf("night stopped by %v, want the window", rep.Stopped)
	}

	g := ticketByTitle(t, st, good.title)
	if g.State != store.StateDone || noteWith(t, st, g.ID, HeldNote) == "" {
		t.Fatalf("good: %s (%s), held note %q; want done, its fix held for the whole suite", g.State, g.Reason, noteWith(t, st, g.ID, HeldNote))
	}
	if !strings.Contains(git(t, good.path, "ls-remote", "pub"), g.Branch) {
		events, _ := st.Events(ctx, g.ID)
		t.Errorf("good: %s not pushed tonight; its events: %+v", g.Branch, events)
	}
	if s := ticketByTitle(t, st, slow.title); s.State != store.StateQueued || s.Attempts != 0 || !strings.Contains(s.Reason, "grace period") {
		t.Errorf("slow: %s with %d attempts (%s); want released at the grace period's end, none spent", s.State, s.Attempts, s.Reason)
	}
	if b := ticketByTitle(t, st, backlog); b.State != store.StateQueued || b.Attempts != 0 {
		t.Errorf("backlog ticket: %s with %d attempts; want queued, never claimed: it came after the window", b.State, b.Attempts)
	}
}

// A whole suite the night's stop cuts short (the grace period ran out before it ran) leaves
// its fixes done and unpublished, to be held again by the next night's start. The night's
// ending names them: before, only an info log line did, and a window-closed night's report
// named the tickets left queued but not the fixes left off the push remote.
func TestSuiteCutShortIsNamedAtTheEnd(t *testing.T) {
	t.Parallel() // a store and repository of its own
	root := t.TempDir()
	repo := filepath.Join(root, "pricing")
	writeRepo(t, repo, map[string]string{"rules.py": "def tax(x):\n    return x\n"})
	base := strings.TrimSpace(git(t, repo, "rev-parse", "HEAD"))
	st, err := store.Open(context.Background(), filepath.Join(root, "t.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	id := doneTicket(t, st, "pricing", "held")
	d := &Daemon{Store: st, Logger: slog.New(slog.DiscardHandler)}
	n := &nightSuite{d: d, trees: worktree.NewManager(filepath.Join(root, "work"), nil), run: verdictRunner{}}
	n.held = map[string][]heldFix{"pricing " + base: {{id: id, branch: "main", name: "pricing", repo: config.Repo{Path: repo}, base: base,
		facts: repoFacts{checks: []validate.Check{{Name: "tests", Kind: validate.KindPytest}}}}}}
	stopped, stop := context.WithCancelCause(context.Background())
	stop(fmt.Errorf("%w and its grace period of 10m0s ran out", ErrWindowClosed))

	n.runAll(stopped, d.logger(), 1)
	want := fmt.Sprintf("#%d of pricing (cut short: %v and its grace period of 10m0s ran out)", id, ErrWindowClosed)
	if got := n.unpublished(); len(got) != 1 || got[0] != want {
		t.Fatalf("unpublished = %q; want [%q]", got, want)
	}
	if tk, _ := st.Get(context.Background(), id); tk.State != store.StateDone || noteWith(t, st, id, NightSuiteNote) != "" {
		t.Errorf("held ticket: %s, suite note %q; want done and unjudged, for the next night", tk.State, noteWith(t, st, id, NightSuiteNote))
	}
	outcome, why := nightEnding{unjudged: n.unpublished()}.outcome(context.Background(), nil, ErrWindowClosed)
	if outcome != store.OutcomePartial || !strings.Contains(why, "fixes not published") || !strings.Contains(why, want) {
		t.Errorf("night's ending: %s (%s); want partial, naming %s", outcome, why, want)
	}
}
