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
	"testing"

	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/pipeline/tools"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/worktree"
)

// TestChecksWritesNeverReachTheBranch is issue 19's probe in a real night: the repository's
// conftest.py, run by every check, copies the environment into a new file, edits a tracked
// module and appends to the module the fix changes. The fix branch and the patch hold the
// maker's change alone, and the report lists what the checks wrote.
func TestChecksWritesNeverReachTheBranch(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	f := newFixture(t, 1)
	write(t, filepath.Join(f.repo, "conftest.py"), `import os

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "stolen.txt"), "w") as out:
    out.write(repr(dict(os.environ)))
for module in ("shop/catalogue_00.py", "shop/rule_00.py"):
    with open(os.path.join(here, module), "a") as out:
        out.write("\n# tampered by a check\n")
`)
	git(t, f.repo, "add", "-A")
	git(t, f.repo, "commit", "-q", "-m", "a conftest that writes")
	_, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
	cfg := f.config(t, url, 1)
	n := runNight(t, cfg, pipeline.LayoutCacheFriendly)
	tk, err := n.store.Get(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if tk.State != store.StateDone {
		t.Fatalf("ticket is %s, want done: %+v", tk.State, tk)
	}
	files := strings.TrimSpace(git(t, f.repo, "diff", "--name-only", "main", tk.Branch))
	if files != "shop/rule_00.py" {
		t.Errorf("the fix branch changes %q, want exactly the maker's shop/rule_00.py", files)
	}
	if diff := git(t, f.repo, "diff", "main", tk.Branch); strings.Contains(diff, "tampered") || strings.Contains(diff, "stolen") {
		t.Errorf("the fix branch holds what the checks wrote:\n%s", diff)
	}
	patch, _ := os.ReadFile(filepath.Join(cfg.Output, "1", "patch"))
	if !strings.Contains(string(patch), "shop/rule_00.py") || strings.Contains(string(patch), "tampered") || strings.Contains(string(patch), "stolen") {
		t.Errorf("the patch is not the maker's change alone:\n%s", patch)
	}
	report, _ := os.ReadFile(filepath.Join(cfg.Output, "1", "report.md"))
	if !strings.Contains(string(report), "The checks also wrote (discarded, not part of the change): shop/catalogue_00.py, shop/rule_00.py, stolen.txt") {
		t.Errorf("the report does not list what the checks wrote:\n%s", report)
	}
}

// checkFunc is a pipeline.CheckRunner that runs fn for each check, in order.
type checkFunc func(dir string, c validate.Check) validate.Result

func (f checkFunc) Run(_ context.Context, dir string, checks []validate.Check) []validate.Result {
	var out []validate.Result
	for _, c := range checks {
		out = append(out, f(dir, c))
	}
	return out
}

// guardedTree commits files (path to content) as a fresh repository's main and returns a
// worktree of it on a fix branch with the maker's workspace over it.
func guardedTree(t *testing.T, files map[string]string) (*worktree.Tree, *tools.Workspace) {
	t.Helper()
	repo := t.TempDir()
	for p, content := range files {
		write(t, filepath.Join(repo, filepath.FromSlash(p)), content)
	}
	git(t, repo, "init", "-q", "--initial-branch=main")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "base")
	tree, err := worktree.NewManager(filepath.Join(t.TempDir(), "trees"), nil).Prepare(context.Background(), repo, "main", "ticketd/1-guard")
	if err != nil {
		t.Fatal(err)
	}
	ws, err := tools.NewWorkspace(tree.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return tree, ws
}

// TestGuardEachCheckStartsClean: in one run of several checks, each check starts on the
// worktree as the maker left it, whatever the checks before it wrote (a tracked module, the
// maker's own file, a new file), with one snapshot of the tree for the whole run.
func TestGuardEachCheckStartsClean(t *testing.T) {
	ctx := context.Background()
	tree, ws := guardedTree(t, map[string]string{"shop/other.py": "X = 1\n", "shop/fix.py": "Y = 1\n"})
	if _, err := ws.EditFile(ctx, "shop/fix.py", "Y = 1", "Y = 2", false); err != nil {
		t.Fatal(err)
	}
	var seen []string
	inner := checkFunc(func(dir string, c validate.Check) validate.Result {
		read := func(p string) string {
			b, err := os.ReadFile(filepath.Join(dir, p))
			if err != nil {
				return "absent"
			}
			return strings.TrimSpace(string(b))
		}
		seen = append(seen, c.Name+": "+read("shop/other.py")+", "+read("shop/fix.py")+", "+read("left.txt"))
		for p, s := range map[string]string{"shop/other.py": "X = 'tampered'\n", "shop/fix.py": "Y = 'tampered'\n", "left.txt": "a check was here\n"} {
			write(t, filepath.Join(dir, p), s)
		}
		return validate.Result{Name: c.Name, Kind: c.Kind}
	})
	g := newFixGuard(inner, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer g.track(newFixTree(tree, ws))()
	g.Run(ctx, tree.Dir, []validate.Check{{Name: "pytest"}, {Name: "ruff"}, {Name: "mypy"}})
	want := []string{"pytest: X = 1, Y = 2, absent", "ruff: X = 1, Y = 2, absent", "mypy: X = 1, Y = 2, absent"}
	if !slices.Equal(seen, want) {
		t.Errorf("the checks saw\n%q\nwant\n%q", seen, want)
	}
	if b, _ := os.ReadFile(filepath.Join(tree.Dir, "shop", "fix.py")); string(b) != "Y = 2\n" {
		t.Errorf("after the run the maker's file is %q; want its change", b)
	}
}

// TestGuardChecksWhatACheckoutGives: the checks read the maker's files as a checkout of the
// fix's commit writes them. Under `*.txt text` a file the maker wrote with CRLF is stored,
// published and checked out with LF: a test reading it in binary mode must see LF, or it
// passes on bytes no branch holds. Without such a rule the bytes stay as written.
func TestGuardChecksWhatACheckoutGives(t *testing.T) {
	tests := []struct {
		name, attributes, want string
	}{
		{"text rule", "*.txt text\n", "a\nb\n"},
		{"no rule", "", "a\r\nb\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{"app.py": "X = 1\n"}
			if tt.attributes != "" {
				files[".gitattributes"] = tt.attributes
			}
			ctx := context.Background()
			tree, ws := guardedTree(t, files)
			if _, err := ws.WriteFile(ctx, "data.txt", "a\r\nb\r\n"); err != nil {
				t.Fatal(err)
			}
			var seen []string
			inner := checkFunc(func(dir string, c validate.Check) validate.Result {
				b, _ := os.ReadFile(filepath.Join(dir, "data.txt"))
				seen = append(seen, string(b))
				return validate.Result{Name: c.Name, Kind: c.Kind}
			})
			g := newFixGuard(inner, slog.New(slog.NewTextHandler(io.Discard, nil)))
			f := newFixTree(tree, ws)
			defer g.track(f)()
			// A run with another version in place (the pipeline's view of the base's files)
			// sees that version: the rewrite leaves a file alone that does not hold the change.
			data := filepath.Join(tree.Dir, "data.txt")
			write(t, data, "base\n")
			g.Run(ctx, tree.Dir, []validate.Check{{Name: "pytest"}})
			if !slices.Equal(seen, []string{"base\n"}) {
				t.Errorf("a run with the base's version in place read data.txt as %q, want that version", seen)
			}
			write(t, data, "a\r\nb\r\n")
			seen = nil
			g.Run(ctx, tree.Dir, []validate.Check{{Name: "pytest"}, {Name: "ruff"}})
			if want := []string{tt.want, tt.want}; !slices.Equal(seen, want) {
				t.Errorf("the checks read data.txt as %q, want %q", seen, want)
			}
			rewritten := ws.TakeRewritten()
			if want := tt.want != "a\r\nb\r\n"; slices.Equal(rewritten, []string{"data.txt"}) != want || (!want && len(rewritten) > 0) {
				t.Errorf("paths to tell the maker about: %q", rewritten)
			}
			if again := ws.TakeRewritten(); len(again) > 0 {
				t.Errorf("the maker would be told twice about %q", again)
			}
			if ch := f.changes(); len(ch) != 1 || string(ch[0].Data) != tt.want {
				t.Errorf("the maker's change is %+v, want data.txt holding %q", ch, tt.want)
			}
			if left, err := f.leftovers(ctx); err != nil || len(left) > 0 {
				t.Errorf("leftovers %q (%v), want none: the rewrite is the maker's file, not a check's", left, err)
			}
			if _, err := ws.WriteFile(ctx, "data.txt", "c\n"); err != nil {
				t.Errorf("the maker cannot overwrite the file it wrote after the rewrite: %v", err)
			}
		})
	}
}

// TestLeftSetManyPaths: what the checks leave is gathered after every check, and one check
// can leave tens of thousands of files (a virtualenv, a build tree): the set keeps each path
// once, across overlapping batches and repeats within one, and lists them sorted.
func TestLeftSetManyPaths(t *testing.T) {
	const n = 30000
	var l leftSet
	for b := range 3 { // batch b holds paths b*n/2 .. b*n/2+n-1, each twice
		var batch []string
		for i := range n {
			p := fmt.Sprintf("venv/lib/site-packages/pkg%06d.py", b*n/2+i)
			batch = append(batch, p, p)
		}
		l.add(batch)
	}
	got := l.list()
	if want := n/2*2 + n; len(got) != want {
		t.Fatalf("list holds %d paths; want %d, each once", len(got), want)
	}
	for i, p := range got {
		if want := fmt.Sprintf("venv/lib/site-packages/pkg%06d.py", i); p != want {
			t.Fatalf("list[%d] = %q; want %q (sorted, each once)", i, p, want)
		}
	}
	var empty leftSet
	if got := empty.list(); len(got) != 0 {
		t.Errorf("an empty set lists %v; want nothing", got)
	}
}
