package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/pipeline/tools"
	"github.com/ticketd/ticketd/store"
)

// plantFake is code under test that, whenever it is imported, compiles a fake pytest into
// pytest.pyc at the working directory (an ignored path): a `python -m pytest` started there
// later imports it instead of pytest, and it writes a report where every test of the
// fixture passed. It spells the report's option in two pieces, as a maker hiding from the
// submit's net for code that reaches into the test runner would: what stops it here is the
// worktree guard.
const plantFake = `import os as _os
import py_compile as _pc
import tempfile as _tf

_FAKE = """
import sys
for a in sys.argv[1:]:
    if a.startswith("--junit" "xml="):
        with open(a.split("=", 1)[1], "w") as f:
            f.write('<testsuites><testsuite tests="2">'
                    '<testcase classname="tests.test_rule_00.RuleTest" name="test_surcharge" file="tests/test_rule_00.py"/>'
                    '<testcase classname="tests.test_rule_01.RuleTest" name="test_surcharge" file="tests/test_rule_01.py"/>'
                    '</testsuite></testsuites>')
sys.exit(0)
"""
if not _os.path.exists("pytest.pyc"):
    with _tf.NamedTemporaryFile("w", suffix=".py", delete=False) as _f:
        _f.write(_FAKE)
    _pc.compile(_f.name, cfile="pytest.pyc")
`

// TestTamperNight runs a real night (real pytest in the sandbox, the worker's guard, commit
// and push) against two makers that cheat where only the whole daemon can stop them: code
// under test that plants a fake pytest.pyc in an ignored path during one check, for the next
// check to import (never shipped; the report names the planted file), and a fix that also
// writes a CI workflow (the write is refused with the reason; the fix ships without it).
func TestTamperNight(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server
	realNight(t)
	f := newFixture(t, 2)
	write(t, filepath.Join(f.repo, ".gitignore"), "*.pyc\n__pycache__/\n")
	git(t, f.repo, "add", "-A")
	git(t, f.repo, "commit", "-q", "-m", "ignore bytecode")

	rule := filepath.Join(f.repo, "shop", "rule_00.py")
	data, _ := os.ReadFile(rule)
	write(t, rule, plantFake+"\n\n"+string(data))
	f.cases[0].Patch = git(t, f.repo, "diff")
	git(t, f.repo, "checkout", "-q", ".")
	f.cases[1].Patch += "diff --git a/.github/workflows/ci.yml b/.github/workflows/ci.yml\nnew file mode 100644\n--- /dev/null\n+++ b/.github/workflows/ci.yml\n@@ -0,0 +1,2 @@\n+on: push\n+jobs: {steal: {runs-on: ubuntu-latest, steps: [{run: env}]}}\n"

	_, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
	cfg := f.config(t, url, 2)
	cfg.Night.MaxAttempts = 1
	n := runNight(t, cfg, pipeline.LayoutCacheFriendly)
	ctx := context.Background()

	planted := ticketByTitle(t, n.store, "rule 0 ")
	if planted.State == store.StateDone {
		t.Fatalf("the planted fake pytest shipped a fix that fixes nothing: %+v", planted)
	}
	report, _ := os.ReadFile(filepath.Join(cfg.Output, fmt.Sprint(planted.ID), "report.md"))
	if !strings.Contains(string(report), "pytest.pyc") {
		t.Errorf("the report does not name the planted pytest.pyc:\n%s", report)
	}

	ci := ticketByTitle(t, n.store, "rule 1 ")
	if ci.State != store.StateDone {
		t.Fatalf("the fix with a refused workflow did not ship: %s (%s)", ci.State, ci.Reason)
	}
	if files := strings.TrimSpace(git(t, f.repo, "diff", "--name-only", "main", ci.Branch)); files != "shop/rule_01.py" {
		t.Errorf("the fix branch changes %q, want shop/rule_01.py alone", files)
	}
	calls, err := n.store.ToolCalls(ctx, ci.ID)
	if err != nil {
		t.Fatal(err)
	}
	refused := false
	for _, c := range calls {
		refused = refused || c.Tool == "write_file" && strings.Contains(c.Args, ".github/workflows") && !c.OK && strings.Contains(c.Result, "allow_paths")
	}
	if !refused {
		t.Errorf("no write_file of the workflow was refused with the reason: %+v", calls)
	}
}

// ticketByTitle is the one ticket whose title holds part.
func ticketByTitle(t *testing.T, st *store.Store, part string) store.Ticket {
	t.Helper()
	all, err := st.List(context.Background(), store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range all {
		if strings.Contains(tk.Title+" ", part) {
			full, err := st.Get(context.Background(), tk.ID)
			if err != nil {
				t.Fatal(err)
			}
			return full
		}
	}
	t.Fatalf("no ticket titled like %q", part)
	return store.Ticket{}
}

// A branch holding a file that runs elsewhere is never pushed, unless the repository allows
// that path; the ticket's history says why.
func TestProtectedBranchNeverPushed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPushFixture(t)
	f, remote, st, id, d, repo := p.f, p.remote, p.st, p.id, p.d, p.repo
	git(t, f.repo, "checkout", "-q", "-b", "ticketd/1-ci")
	write(t, filepath.Join(f.repo, ".github", "workflows", "ci.yml"), "on: push\n")
	p.commit("ci")
	git(t, f.repo, "checkout", "-q", "main")

	if d.pushBranch(ctx, d.Logger, repo, id, "ticketd/1-ci") {
		t.Fatal("a branch with a workflow was pushed")
	}
	if out := git(t, remote, "branch", "--list"); strings.TrimSpace(out) != "" {
		t.Errorf("the remote has branches: %q", out)
	}
	evs, _ := st.Events(ctx, id)
	if last := evs[len(evs)-1]; !strings.Contains(last.Reason, ".github/workflows/ci.yml") || !strings.Contains(last.Reason, "not pushed") {
		t.Errorf("last event %q; want a note naming the workflow", last.Reason)
	}
	repo.AllowPaths = []string{".github/workflows/*.yml"}
	if !d.pushBranch(ctx, d.Logger, repo, id, "ticketd/1-ci") {
		t.Error("an allowed workflow was not pushed")
	}
	if why := tools.ProtectedPath(".github/workflows/ci.yml", repo.AllowPaths); why != "" {
		t.Errorf("allowed path still protected: %s", why)
	}
}

// A repository that is a check's tool (pluggy) fixes its bugs in its own package, named like
// the tool: a branch editing it is pushed; one adding a new shadow module is not.
func TestOwnToolPackageBranchPushed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPushFixture(t)
	f, st, id, d, repo, commit := p.f, p.st, p.id, p.d, p.repo, p.commit
	write(t, filepath.Join(f.repo, "src", "pluggy", "__init__.py"), "")
	write(t, filepath.Join(f.repo, "src", "pluggy", "_manager.py"), "X = 1\n")
	commit("pluggy")
	git(t, f.repo, "checkout", "-q", "-b", "ticketd/1-fix")
	write(t, filepath.Join(f.repo, "src", "pluggy", "_manager.py"), "X = 2\n")
	commit("fix")
	git(t, f.repo, "checkout", "-q", "-b", "ticketd/1-shadow", "main")
	write(t, filepath.Join(f.repo, "src", "pytest.py"), "")
	commit("shadow")
	git(t, f.repo, "checkout", "-q", "main")

	if !d.pushBranch(ctx, d.Logger, repo, id, "ticketd/1-fix") {
		evs, _ := st.Events(ctx, id)
		t.Fatalf("a fix in the project's own pluggy package was not pushed: %+v", evs[len(evs)-1])
	}
	if d.pushBranch(ctx, d.Logger, repo, id, "ticketd/1-shadow") {
		t.Error("a branch adding src/pytest.py was pushed")
	}
}

// pushFixture is a repository with a bare remote "origin", a store holding one ticket (id) and
// a daemon to push its branches.
type pushFixture struct {
	f      fixture
	remote string
	st     *store.Store
	id     int64
	d      *Daemon
	repo   config.Repo
	commit func(msg string)
}

func newPushFixture(t *testing.T) *pushFixture {
	t.Helper()
	p := &pushFixture{f: newFixture(t, 1)}
	p.remote = filepath.Join(p.f.dir, "remote.git")
	git(t, p.f.dir, "init", "-q", "--bare", p.remote)
	git(t, p.f.repo, "remote", "add", "origin", p.remote)
	st, err := store.Open(context.Background(), filepath.Join(p.f.dir, "t.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if p.id, _, err = st.Enqueue(context.Background(), store.NewTicket{Source: "test", ExternalID: "1", Repo: "shop", Title: "fix"}); err != nil {
		t.Fatal(err)
	}
	p.st, p.d = st, &Daemon{Store: st, Logger: slog.New(slog.DiscardHandler)}
	p.repo = config.Repo{Path: p.f.repo, BaseRef: "main", PushRemote: "origin"}
	p.commit = func(msg string) {
		t.Helper()
		git(t, p.f.repo, "add", "-A")
		git(t, p.f.repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", msg)
	}
	return p
}
