package daemon

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/pipeline/tools"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/worktree"
)

// countGit puts a git first on PATH that notes its subcommand and runs the real one, and
// returns a function reading the subcommands noted so far.
func countGit(t *testing.T) func() []string {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "runs")
	// ticketd's git starts with --no-pager: the subcommand is the second argument.
	script := "#!/bin/sh\necho \"$2\" >> '" + log + "'\nexec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return func() []string {
		data, _ := os.ReadFile(log)
		return strings.Fields(string(data))
	}
}

// TestGuardRunProcesses counts the git processes of one guarded run of one check, the cost
// every run of checks of every attempt pays, so that a regression shows: the maker's two
// files are put in their checkout form by asking git once, then a run whose check leaves
// nothing costs a snapshot (status), an undo (status) and a clean (ls-files). The check itself is a stand-in: its
// own processes are the sandbox's (validate).
func TestGuardRunProcesses(t *testing.T) {
	repo := t.TempDir()
	write(t, filepath.Join(repo, "shop", "fix.py"), "Y = 1\n")
	write(t, filepath.Join(repo, "tests", "test_fix.py"), "def test_y():\n    pass\n")
	git(t, repo, "init", "-q", "--initial-branch=main")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "base")
	ctx := context.Background()
	tree, err := worktree.NewManager(filepath.Join(t.TempDir(), "trees"), nil).Prepare(ctx, repo, "main", "ticketd/1-procs")
	if err != nil {
		t.Fatal(err)
	}
	ws, err := tools.NewWorkspace(tree.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ws.EditFile(ctx, "shop/fix.py", "Y = 1", "Y = 2", false); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.WriteFile(ctx, "tests/test_regression.py", "def test_y2():\n    pass\n"); err != nil {
		t.Fatal(err)
	}
	checks := 0
	inner := checkFunc(func(dir string, c validate.Check) validate.Result {
		if checks++; checks == 1 {
			write(t, filepath.Join(dir, "left.txt"), "a check was here\n")
		}
		return validate.Result{Name: c.Name, Kind: c.Kind, Passed: true}
	})
	g := newFixGuard(inner, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer g.track(newFixTree(tree, ws))()
	runs := countGit(t)
	want := [][]string{
		// The first run asks for the files' checkout form, two processes a file; its check
		// leaves a file, which the undo lists (ls-files) and removes after a second look.
		{"hash-object", "cat-file", "hash-object", "cat-file", "status", "status", "ls-files", "status", "ls-files"},
		// Later runs with the same files and rules do not ask again.
		{"status", "status", "ls-files"},
		{"status", "status", "ls-files"},
	}
	for i, w := range want {
		before := len(runs())
		if res := g.Run(ctx, tree.Dir, []validate.Check{{Name: "tests"}}); len(res) != 1 || !res[0].Passed {
			t.Fatalf("run %d: %+v", i+1, res)
		}
		got := runs()[before:]
		if strings.Join(got, " ") != strings.Join(w, " ") {
			t.Errorf("run %d: git %q (%d processes), want %q (%d)", i+1, got, len(got), w, len(w))
		}
	}
}
