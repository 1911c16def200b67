package scriptedmodel_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/pipeline/sandbox"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/scripts/testenv"
	"github.com/ticketd/ticketd/store"
)

const sessionBuggy = "def double(x):\n    label = 'double'\n    total = x + x + 1\n    return total\n"

const sessionFixed = "def double(x):\n    label = 'double'\n    total = x + x\n    return total\n"

const sessionPatch = `--- a/pkg/calc.py
+++ b/pkg/calc.py
@@ -1,4 +1,4 @@
 def double(x):
     label = 'double'
-    total = x + x + 1
+    total = x + x
     return total
`

type recorder struct {
	mu    sync.Mutex
	model []model.Call
	tools []store.ToolCall
}

// RecordReview keeps nothing: these tests look at model and tool calls.
func (c *recorder) RecordReview(context.Context, store.Review) error { return nil }

func (c *recorder) RecordModelCall(_ context.Context, m model.Call) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.model = append(c.model, m)
	return nil
}

func (c *recorder) RecordToolCall(_ context.Context, tc store.ToolCall) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tools = append(c.tools, tc)
	return int64(len(c.tools)), nil
}

// runRealistic runs one attempt of a realistic case through the product: a real git
// repository, the real model client pointed at the double, the real tools and real pytest.
func runRealistic(t *testing.T, seed int64, r scriptedmodel.Realism) (pipeline.Outcome, *recorder, string) {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"pkg/__init__.py":    "",
		"pkg/calc.py":        sessionBuggy,
		"tests/test_calc.py": "from pkg.calc import double\n\n\ndef test_double():\n    assert double(2) == 4\n",
	}
	for name, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "base")

	srv, err := scriptedmodel.New([]scriptedmodel.Case{{Match: "double is wrong", Patch: sessionPatch, Realistic: true}},
		scriptedmodel.Options{Seed: seed, Realism: r})
	if err != nil {
		t.Fatal(err)
	}
	url, err := srv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	rec := &recorder{}
	roles := map[model.Role]model.RoleConfig{}
	for _, role := range model.Roles {
		roles[role] = model.RoleConfig{Endpoint: "s", Model: "gpt-4.1-mini"}
	}
	client, err := model.New(model.Config{Endpoints: map[string]model.Endpoint{"s": {BaseURL: url}}, Roles: roles}, rec, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	checks := []validate.Check{{Name: "tests", Kind: validate.KindPytest}}
	vr := &validate.Runner{Sandbox: testSandbox(t)}
	runner := &pipeline.Runner{Models: client, Checks: vr, Recorder: rec, Roles: map[model.Role]bool{
		model.RoleTriage: true, model.RoleMaker: true, model.RoleChecker: true, model.RoleJudge: true}}
	job := pipeline.Job{
		Ticket:   pipeline.Ticket{ID: 1, Attempt: 1, Title: "double is wrong", Body: "double(2) gives 5", Repo: "calc"},
		Dir:      dir,
		Checks:   checks,
		Baseline: vr.Run(context.Background(), dir, checks),
		Diff: func(ctx context.Context) (string, error) {
			git("add", "-A")
			return git("diff", "--cached"), nil
		},
		Budget: pipeline.Budget{MaxSteps: 20, MaxTokens: 1_000_000},
	}
	out := runner.Run(context.Background(), job)
	data, _ := os.ReadFile(filepath.Join(dir, "pkg", "calc.py"))
	return out, rec, string(data)
}

// only is a Realism where one mistake always happens and the others almost never.
func only(set func(*scriptedmodel.Realism)) scriptedmodel.Realism {
	r := scriptedmodel.Realism{MangleEdit: 1e-9}
	set(&r)
	return r
}

// TestRealisticSessionReachesFixed runs each realistic mistake, forced, against the real
// product and checks that the session still ends fixed and that the records show the mistake
// the way an operator would see it.
func TestRealisticSessionReachesFixed(t *testing.T) {
	t.Parallel() // own directories and processes
	_, err := validate.ResolvePytest(context.Background())
	testenv.Need(t, testenv.Pytest, err)
	type check func(t *testing.T, rec *recorder, out pipeline.Outcome)
	countTool := func(rec *recorder, name string, ok bool) int {
		n := 0
		for _, c := range rec.tools {
			if c.Tool == name && c.OK == ok {
				n++
			}
		}
		return n
	}
	tests := []struct {
		name    string
		realism scriptedmodel.Realism
		check   check
	}{
		{"mangled old_text", only(func(r *scriptedmodel.Realism) { r.MangleEdit = 1 }), func(t *testing.T, rec *recorder, _ pipeline.Outcome) {
			nonExact := 0
			for _, c := range rec.tools {
				if c.Tool == "edit_file" && c.OK && c.Rung != "" && c.Rung != "exact" {
					nonExact++
				}
			}
			if nonExact == 0 && countTool(rec, "edit_file", false) == 0 {
				t.Errorf("no edit matched on a non-exact rung and none failed: %+v", rec.tools)
			}
		}},
		{"path that does not exist", only(func(r *scriptedmodel.Realism) { r.MissingPath = 1 }), func(t *testing.T, rec *recorder, _ pipeline.Outcome) {
			if countTool(rec, "list_files", true) != 1 {
				t.Errorf("want one list_files after the missing path, tool calls: %+v", rec.tools)
			}
			if len(rec.tools) == 0 || !strings.Contains(rec.tools[0].Result, "calc.py: error: no such file") {
				t.Errorf("first tool call should read a missing path, got %+v", rec.tools[:1])
			}
		}},
		{"redundant read", only(func(r *scriptedmodel.Realism) { r.RedundantRead = 1 }), func(t *testing.T, rec *recorder, _ pipeline.Outcome) {
			if n := countTool(rec, "read_files", true); n < 2 {
				t.Errorf("%d reads, want the redundant second one", n)
			}
		}},
		{"turn mixing reads and edits", only(func(r *scriptedmodel.Realism) { r.MixedTurn = 1 }), func(t *testing.T, rec *recorder, _ pipeline.Outcome) {
			steps := map[int][]string{}
			for _, c := range rec.tools {
				steps[c.Step] = append(steps[c.Step], c.Tool)
			}
			mixed := false
			for _, names := range steps {
				j := strings.Join(names, ",")
				mixed = mixed || strings.Contains(j, "read_files") && strings.Contains(j, "edit_file")
			}
			if !mixed {
				t.Errorf("no step holds both a read and an edit: %v", steps)
			}
		}},
		{"prose instead of a tool call", only(func(r *scriptedmodel.Realism) { r.Prose = 1 }), func(t *testing.T, rec *recorder, _ pipeline.Outcome) {
			makers, calls := 0, 0
			for _, c := range rec.model {
				if c.Role == model.RoleMaker {
					makers++
				}
			}
			steps := map[int]bool{}
			for _, c := range rec.tools {
				steps[c.Step] = true
			}
			calls = len(steps)
			if makers <= calls {
				t.Errorf("%d maker calls for %d tool steps: no answer without a tool call", makers, calls)
			}
		}},
		{"broken argument JSON", only(func(r *scriptedmodel.Realism) { r.BrokenJSON = 1 }), func(t *testing.T, rec *recorder, _ pipeline.Outcome) {
			broken := 0
			for _, c := range rec.tools {
				if !c.OK && strings.Contains(c.Result, "not valid JSON") {
					broken++
				}
			}
			if broken != 1 {
				t.Errorf("%d calls refused for their JSON, want 1: %+v", broken, rec.tools)
			}
		}},
		{"first fix wrong in behaviour", only(func(r *scriptedmodel.Realism) { r.WrongFirst = 1 }), func(t *testing.T, _ *recorder, out pipeline.Outcome) {
			if out.Submits < 2 {
				t.Errorf("%d submits, want the wrong first one refused and a second", out.Submits)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, rec, file := runRealistic(t, 1, tt.realism)
			if out.Status != pipeline.StatusFixed {
				t.Fatalf("status %s (%s), want fixed\nhistory:\n%s\ntools: %+v", out.Status, out.Reason, strings.Join(out.History, "\n"), rec.tools)
			}
			if file != sessionFixed {
				t.Errorf("pkg/calc.py = %q, want %q", file, sessionFixed)
			}
			tt.check(t, rec, out)
		})
	}
}

// TestRealisticSessionsOverSeeds runs the default rates over a few seeds: every session
// ends fixed, and across them the records show non-exact rungs or failed calls.
func TestRealisticSessionsOverSeeds(t *testing.T) {
	if testing.Short() {
		t.Skip("runs pytest for several sessions")
	}
	_, err := validate.ResolvePytest(context.Background())
	testenv.Need(t, testenv.Pytest, err)
	rungs, failed := map[string]int{}, 0
	for seed := int64(1); seed <= 10; seed++ {
		out, rec, file := runRealistic(t, seed, scriptedmodel.Realism{})
		if out.Status != pipeline.StatusFixed || file != sessionFixed {
			t.Errorf("seed %d: status %s (%s), file %q", seed, out.Status, out.Reason, file)
		}
		for _, c := range rec.tools {
			if c.Rung != "" {
				rungs[c.Rung]++
			}
			if !c.OK {
				failed++
			}
		}
	}
	t.Logf("rungs %v, failed tool calls %d", rungs, failed)
	nonExact := 0
	for r, n := range rungs {
		if r != "exact" {
			nonExact += n
		}
	}
	if failed+nonExact == 0 {
		t.Errorf("ten realistic sessions made no failed tool call and no edit off the exact rung")
	}
}

// testSandbox is the checks' sandbox in these tests: bwrap where it works, else none
// (logged). Their subject is the double's realism, not the sandbox (pipeline/sandbox's tests are).
func testSandbox(t *testing.T) sandbox.Mode {
	t.Helper()
	_, err := sandbox.Probe(context.Background(), "")
	if testenv.Have(t, testenv.Bubblewrap, err) {
		return sandbox.ModeBwrap
	}
	return sandbox.ModeNone
}
