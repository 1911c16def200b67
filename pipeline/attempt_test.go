package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/pipeline/sandbox"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/pipeline/tools"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/scripts/testenv"
	"github.com/ticketd/ticketd/store"
)

const buggy = "def double(x):\n    return x + x + 1\n"

const fixPatch = `diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
 def double(x):
-    return x + x + 1
+    return x + x
`

// doubleTwoTest adds a regression test for the bug, as a maker writes one beside its fix.
const doubleTwoTest = `diff --git a/test_double_two.py b/test_double_two.py
new file mode 100644
--- /dev/null
+++ b/test_double_two.py
@@ -0,0 +1,5 @@
+from calc import double
+
+
+def test_double_two():
+    assert double(2) == 4
`

type calls struct {
	mu      sync.Mutex
	model   []model.Call
	tools   []store.ToolCall
	reviews []store.Review
	server  *scriptedmodel.Server // the double the attempt talks to
}

func (c *calls) RecordReview(_ context.Context, r store.Review) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reviews = append(c.reviews, r)
	return nil
}

func (c *calls) RecordModelCall(_ context.Context, m model.Call) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.model = append(c.model, m)
	return nil
}

func (c *calls) RecordToolCall(_ context.Context, tc store.ToolCall) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tools = append(c.tools, tc)
	return int64(len(c.tools)), nil
}

// setupAttempt makes a one-file Python repository with a failing test, the scripted model
// with one case, and a Runner wired to the real model client and real pytest.
func setupAttempt(t *testing.T, c scriptedmodel.Case) (*Runner, Job, *calls) {
	t.Helper()
	return setupAttemptWith(t, c, nil)
}

// setupAttemptWith is setupAttempt with extra files in the repository (and, when c.Patch is
// set, that patch instead of the fix).
func setupAttemptWith(t *testing.T, c scriptedmodel.Case, extra map[string]string) (*Runner, Job, *calls) {
	t.Helper()
	return setupAttemptFiles(t, c, extra, extra == nil)
}

// attemptFiles is setupAttempt's repository with extra files.
func attemptFiles(extra map[string]string) map[string]string {
	files := map[string]string{
		"calc.py":      buggy,
		"test_calc.py": "from calc import double\n\n\ndef test_double():\n    assert double(2) == 4\n",
	}
	for name, content := range extra {
		files[name] = content
	}
	return files
}

// setupAttemptFiles is setupAttemptWith; shared says the repository's baseline may be the
// one run once per test binary for the same files and checks (sharedBaseline): only for
// files whose tests write nothing when run, which setupAttempt's two files are.
func setupAttemptFiles(t *testing.T, c scriptedmodel.Case, extra map[string]string, shared bool) (*Runner, Job, *calls) {
	t.Helper()
	files := attemptFiles(extra)
	if c.Patch == "" {
		c.Patch = fixPatch
	}
	return setupRepoAttemptShared(t, files, Ticket{ID: 1, Attempt: 1, Title: "double is wrong", Body: "double(2) gives 5", Repo: "calc"}, c, shared)
}

// setupRepoAttempt is an attempt at ticket in a fresh repository holding files, with the
// scripted model answering c (matched on the ticket's title), real pytest as the gate and
// its baseline run.
func setupRepoAttempt(t *testing.T, files map[string]string, ticket Ticket, c scriptedmodel.Case) (*Runner, Job, *calls) {
	t.Helper()
	return setupRepoAttemptShared(t, files, ticket, c, false)
}

// setupRepoAttemptShared is setupRepoAttempt; shared as setupAttemptFiles says.
func setupRepoAttemptShared(t *testing.T, files map[string]string, ticket Ticket, c scriptedmodel.Case, shared bool) (*Runner, Job, *calls) {
	t.Helper()
	_, err := resolvedPytest()
	testenv.Need(t, testenv.Pytest, err)
	dir := t.TempDir()
	gitRun := fixtureRepo(t, dir, files)

	c.Match = ticket.Title
	server, err := scriptedmodel.New([]scriptedmodel.Case{c}, scriptedmodel.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	url, err := server.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	rec := &calls{server: server}
	roles := map[model.Role]model.RoleConfig{}
	for _, r := range model.Roles {
		roles[r] = model.RoleConfig{Endpoint: "s", Model: "gpt-4.1-mini"}
	}
	client, err := model.New(model.Config{Endpoints: map[string]model.Endpoint{"s": {BaseURL: url}}, Roles: roles}, rec, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	checks := []validate.Check{{Name: "tests", Kind: validate.KindPytest, Python: testPython()}}
	vr := &validate.Runner{Sandbox: testSandbox(t)}
	r := &Runner{Models: client, Checks: vr, Recorder: rec, Roles: map[model.Role]bool{
		model.RoleTriage: true, model.RoleMaker: true, model.RoleChecker: true, model.RoleJudge: true}}
	var baseline []validate.Result
	if shared {
		baseline = sharedBaseline(t, vr, dir, files, checks)
	} else {
		baseline = vr.Run(context.Background(), dir, checks)
	}
	job := Job{
		Ticket:   ticket,
		Dir:      dir,
		Checks:   checks,
		Baseline: baseline,
		Diff: func(ctx context.Context) (string, error) {
			gitRun("add", "-A")
			return gitRun("diff", "--cached"), nil
		},
		BaseFile: baseFile(gitRun, dir),
		Budget:   Budget{MaxSteps: 12, MaxTokens: 1_000_000},
	}
	return r, job, rec
}

func TestAttempt(t *testing.T) {
	t.Parallel() // each runs its own scripted model, repository and pytest
	_, err := resolvedPytest()
	testenv.Need(t, testenv.Pytest, err)
	tests := []struct {
		name       string
		c          scriptedmodel.Case
		maxSteps   int
		status     Status
		reason     string
		minSubmits int
	}{
		{name: "solve", c: scriptedmodel.Case{Behaviour: scriptedmodel.BehaviourSolve}, status: StatusFixed, minSubmits: 1},
		{name: "wrong first, then right", c: scriptedmodel.Case{Behaviour: scriptedmodel.BehaviourWrongThenRight}, status: StatusFixed, minSubmits: 2},
		{name: "malformed arguments recovered", c: scriptedmodel.Case{Behaviour: scriptedmodel.BehaviourMalformedArgs}, status: StatusFixed, minSubmits: 1},
		{name: "checker blocks once", c: scriptedmodel.Case{CheckerBlocksOnce: true}, status: StatusFixed, minSubmits: 2},
		{name: "judge fails once", c: scriptedmodel.Case{JudgeFailsOnce: true}, status: StatusFixed, minSubmits: 2},
		{name: "loop stopped by the guard", c: scriptedmodel.Case{Behaviour: scriptedmodel.BehaviourLoop}, status: StatusBudget, reason: "loop: read_files called 5 times"},
		{name: "never fixed: no evidence, resubmitted unchanged", c: scriptedmodel.Case{Behaviour: scriptedmodel.BehaviourNever}, status: StatusUnverified, reason: "the same change was submitted again"},
		{name: "never fixed, with its test: the same refusal twice", c: scriptedmodel.Case{Behaviour: scriptedmodel.BehaviourNever, Patch: fixPatch + doubleTwoTest},
			status: StatusFailed, reason: sameRefusalStop},
		{name: "late fix with its test", c: scriptedmodel.Case{Behaviour: scriptedmodel.BehaviourLateFix, Patch: fixPatch + doubleTwoTest}, status: StatusFixed, minSubmits: 2},
		{name: "step limit", c: scriptedmodel.Case{Behaviour: scriptedmodel.BehaviourWrongThenRight}, maxSteps: 3, status: StatusBudget, reason: "step limit of 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, job, rec := setupAttempt(t, tt.c)
			if tt.maxSteps > 0 {
				job.Budget.MaxSteps = tt.maxSteps
			}
			var saved string
			job.SaveTriage = func(_ context.Context, s string) error { saved = s; return nil }
			out := r.Run(context.Background(), job)
			if out.Status != tt.status || !strings.Contains(out.Reason, tt.reason) {
				t.Fatalf("status %s (%s), want %s containing %q\nhistory:\n%s", out.Status, out.Reason, tt.status, tt.reason, strings.Join(out.History, "\n"))
			}
			if out.Submits < tt.minSubmits {
				t.Errorf("%d submits, want at least %d", out.Submits, tt.minSubmits)
			}
			if saved == "" || out.Triage == nil {
				t.Errorf("triage not computed and saved (saved %q)", saved)
			}
			data, _ := os.ReadFile(filepath.Join(job.Dir, "calc.py"))
			if fixed := string(data) == "def double(x):\n    return x + x\n"; fixed != (tt.status == StatusFixed) {
				t.Errorf("calc.py = %q after status %s", data, out.Status)
			}
			makerCalls := 0
			for _, c := range rec.model {
				if c.Role == model.RoleMaker {
					makerCalls++
				}
			}
			if tt.name == "solve" && makerCalls > 3 {
				t.Errorf("an easy ticket took %d maker calls, want at most 3 (read, edit, submit)", makerCalls)
			}
			if len(rec.model) != out.Calls || len(rec.tools) == 0 {
				t.Errorf("recorded %d model calls (outcome says %d) and %d tool calls", len(rec.model), out.Calls, len(rec.tools))
			}
		})
	}
}

func TestAttemptReusesCachedTriage(t *testing.T) {
	t.Parallel() // each runs its own scripted model, repository and pytest
	r, job, rec := setupAttempt(t, scriptedmodel.Case{})
	job.Ticket.Triage = `{"summary":"cached","acceptance_criteria":["double(2) == 4"],"suspected_files":["calc.py"]}`
	job.SaveTriage = func(context.Context, string) error { t.Error("triage saved again"); return nil }
	out := r.Run(context.Background(), job)
	if out.Status != StatusFixed || out.Triage == nil || out.Triage.Summary != "cached" {
		t.Fatalf("status %s, triage %+v", out.Status, out.Triage)
	}
	for _, c := range rec.model {
		if c.Role == model.RoleTriage {
			t.Error("triage model called although the ticket had a cached triage")
		}
	}
}

// testSandbox is the checks' sandbox in these tests: bwrap where it works, else none
// (logged). Their subject is the attempt, not the sandbox (pipeline/sandbox's tests are).
func testSandbox(t *testing.T) sandbox.Mode {
	t.Helper()
	_, err := probedSandbox()
	if testenv.Have(t, testenv.Bubblewrap, err) {
		return sandbox.ModeBwrap
	}
	return sandbox.ModeNone
}

// The machine's tools, probed once per test binary: the answer cannot change while the
// tests run, and each probe costs processes of its own (ResolvePytest about 0.8 s of CPU
// behind a pyenv shim, which it tries before /usr/bin/python3; sandbox.Probe about 0.1 s).
// What the tests run (validate.Runner) still resolves its tools as ticketd does.
var (
	resolvedPytest = sync.OnceValues(func() ([]string, error) { return validate.ResolvePytest(context.Background()) })
	probedSandbox  = sync.OnceValues(func() (string, error) { return sandbox.Probe(context.Background(), "") })
)

// testPython is the python the tests' Python checks (pytest, unittest, mypy) name: the
// interpreter of the once-resolved pytest, "" where none has pytest (those tests skip or
// fail on resolvedPytest first). A check without one makes validate.Runner look for a
// python3 that imports the check's module, first on PATH: here that is pyenv's shim, a bash
// script that runs a dozen more bash processes and an interpreter before the answer, once
// per runner for pytest, and, for a unittest check (the shim's python imports unittest), on
// every run of the check. How a runner finds the interpreter is validate's tests' subject
// (TestInterpreter, TestResolvePytest); the attempt's tests only need one that works.
func testPython() string {
	pytest, err := resolvedPytest()
	if err != nil || len(pytest) == 0 {
		return ""
	}
	return pytest[0]
}

// sharedBaselines holds the baselines run once per test binary (sharedBaseline), by their
// repository's files and checks.
var sharedBaselines sync.Map // string → *onceBaseline

type onceBaseline struct {
	once sync.Once
	data []byte // the results as JSON: each test decodes a copy of its own
	err  error
}

// sharedBaseline is checks' run at the base of a repository holding files (in dir), run
// once per test binary for the same files and checks: a test that sets up the same base
// gets a copy of the first one's results, as a night's attempts get the baseline kept for
// their base commit, computed in another worktree (daemon's TestBaselineKeptAcrossNights).
// Only for files whose tests write nothing when run (the checks write nothing into the
// worktree themselves: no bytecode, no pytest cache), so the repository a test gets is
// the same whether its baseline ran there or elsewhere. setupAttempt's baseline was one
// identical pytest run in each of thirty-odd tests; TestLintAndTypeGate's (pytest, Ruff's
// engine and mypy without a cache) one in each of its three cases.
func sharedBaseline(t *testing.T, vr CheckRunner, dir string, files map[string]string, checks []validate.Check) []validate.Result {
	t.Helper()
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	var key strings.Builder
	for _, name := range names {
		fmt.Fprintf(&key, "%q %q\n", name, files[name])
	}
	fmt.Fprintf(&key, "%#v", checks)
	v, _ := sharedBaselines.LoadOrStore(key.String(), &onceBaseline{})
	b := v.(*onceBaseline)
	b.once.Do(func() {
		results := vr.Run(context.Background(), dir, checks)
		if b.data, b.err = json.Marshal(results); b.err != nil {
			return
		}
		var back []validate.Result
		if b.err = json.Unmarshal(b.data, &back); b.err == nil && !reflect.DeepEqual(back, results) {
			b.err = fmt.Errorf("the baseline does not survive a JSON round trip:\n%+v\n%+v", results, back)
		}
	})
	if b.err != nil {
		t.Fatalf("shared baseline: %v", b.err)
	}
	var out []validate.Result
	if err := json.Unmarshal(b.data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestAttemptPanicIsItsFailure: a panic inside the attempt (a ticketd bug set off by one
// ticket's input; here through the SaveTriage seam) ends that attempt as failed, naming the
// panic, instead of ending the process with every attempt in flight.
func TestAttemptPanicIsItsFailure(t *testing.T) {
	t.Parallel() // its own scripted model and repository
	r, job, _ := setupAttempt(t, scriptedmodel.Case{})
	job.SaveTriage = func(context.Context, string) error { panic("a parser met what it did not expect") }
	out := r.Run(context.Background(), job)
	if out.Status != StatusFailed || !strings.Contains(out.Reason, "ticketd bug: the attempt panicked (a parser met what it did not expect)") {
		t.Fatalf("status %s (%s); want failed, naming the panic as ticketd's bug", out.Status, out.Reason)
	}
	if out.Calls == 0 {
		t.Error("the triage call made before the panic is not counted in the outcome")
	}
}

// rewritingChecks stands for the daemon's guard (daemon/fixtree.go) where the repository's
// rules give the maker's files another form: before the checks it rewrites every file the
// tools wrote, as the guard does when a checkout gives other bytes.
type rewritingChecks struct {
	inner CheckRunner
	ws    *tools.Workspace
}

func (c rewritingChecks) Run(ctx context.Context, dir string, checks []validate.Check) []validate.Result {
	for _, w := range c.ws.Written() {
		if err := c.ws.Rewrite(w.Path, w.Data); err != nil {
			panic(err)
		}
	}
	return c.inner.Run(ctx, dir, checks)
}

// TestMakerToldOfCheckoutForm: when the checks read a file the maker wrote in the form a
// checkout gives (another line ending, another encoding), the maker's next answer from the
// checks says so, once, naming the file: a test about those bytes would otherwise fail for a
// reason the maker cannot see.
func TestMakerToldOfCheckoutForm(t *testing.T) {
	t.Parallel() // its own scripted model and repository
	r, job, rec := setupAttempt(t, scriptedmodel.Case{Behaviour: scriptedmodel.BehaviourWrongThenRight})
	ws, err := tools.NewWorkspace(job.Dir)
	if err != nil {
		t.Fatal(err)
	}
	job.Workspace = ws
	r.Checks = rewritingChecks{inner: r.Checks, ws: ws}
	out := r.Run(context.Background(), job)
	if out.Status != StatusFixed {
		t.Fatalf("status %s (%s), want fixed", out.Status, out.Reason)
	}
	const note = "make a checkout of your commit write other bytes to calc.py than you wrote"
	told := 0
	for _, tc := range rec.tools {
		if strings.Contains(tc.Result, note) {
			told++
		}
	}
	// Each submit's checks rewrote calc.py here: each answer the maker read says so once (the
	// last submit ended the attempt).
	if told != out.Submits {
		t.Errorf("%d of %d submit answers say that calc.py is read in another form; tool results:\n%v", told, out.Submits, rec.tools)
	}
}

// segmentRunner counts check runs per change: each call of the job's Diff (a submit or a
// run_checks reading the change) opens a segment, and each run the checks make is counted in
// the segment open at the time.
type segmentRunner struct {
	inner CheckRunner
	mu    sync.Mutex
	diffs []string
	runs  []int
}

func (s *segmentRunner) Run(ctx context.Context, dir string, checks []validate.Check) []validate.Result {
	s.mu.Lock()
	if n := len(s.runs); n > 0 {
		s.runs[n-1]++
	}
	s.mu.Unlock()
	return s.inner.Run(ctx, dir, checks)
}

func (s *segmentRunner) diffRead(diff string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.diffs = append(s.diffs, diff)
	s.runs = append(s.runs, 0)
}

// A change the checks refused, sent again without an edit (a resubmit, or run_checks after
// the refusal), gets the refusal back without the same runs again; a change that differs
// from the last one checked is checked. Real pytest: each segment counts the runs made while
// the maker's one change stood.
func TestRefusedChangeNotCheckedAgain(t *testing.T) {
	t.Parallel()
	_, err := resolvedPytest()
	testenv.Need(t, testenv.Pytest, err)
	tests := []struct {
		name    string
		c       scriptedmodel.Case
		status  Status
		reason  string
		repeats int // segments that repeat the change before them: no run
	}{
		{name: "resubmitted unchanged", c: scriptedmodel.Case{Behaviour: scriptedmodel.BehaviourNever, Patch: fixPatch + doubleTwoTest},
			status: StatusFailed, reason: sameRefusalStop, repeats: 1},
		{name: "run_checks after the refusal, then the fix", c: scriptedmodel.Case{Behaviour: scriptedmodel.BehaviourLateFix, Patch: fixPatch + doubleTwoTest},
			status: StatusFixed, repeats: 1},
		{name: "each submit a new change", c: scriptedmodel.Case{Behaviour: scriptedmodel.BehaviourWrongThenRight}, status: StatusFixed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, job, _ := setupAttempt(t, tt.c)
			seg := &segmentRunner{inner: r.Checks}
			r.Checks = seg
			diff := job.Diff
			job.Diff = func(ctx context.Context) (string, error) {
				d, err := diff(ctx)
				seg.diffRead(d)
				return d, err
			}
			out := r.Run(context.Background(), job)
			if out.Status != tt.status || !strings.Contains(out.Reason, tt.reason) {
				t.Fatalf("status %s (%s), want %s containing %q\nhistory:\n%s", out.Status, out.Reason, tt.status, tt.reason, strings.Join(out.History, "\n"))
			}
			repeats := 0
			for i := range seg.diffs {
				same := i > 0 && seg.diffs[i] == seg.diffs[i-1] && seg.runs[i-1] > 0
				switch {
				case same && seg.runs[i] != 0:
					t.Errorf("change %d is change %d unchanged, which the checks refused, and the checks ran %d time(s) again", i+1, i, seg.runs[i])
				case same:
					repeats++
				case seg.runs[i] == 0:
					t.Errorf("change %d differs from the one before and no check ran on it", i+1)
				}
			}
			if repeats != tt.repeats {
				t.Errorf("%d change(s) repeated the one before with no run, want %d (runs per change %v)\nhistory:\n%s", repeats, tt.repeats, seg.runs, strings.Join(out.History, "\n"))
			}
			if tt.repeats > 0 && !slices.ContainsFunc(out.History, func(h string) bool { return strings.Contains(h, "checks not run again") }) {
				t.Errorf("the history does not say the checks were not run again:\n%s", strings.Join(out.History, "\n"))
			}
		})
	}
}
