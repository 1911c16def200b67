package pipeline

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// fixtureRepo writes files into dir, commits them as "base" in a new repository, and returns
// a git runner for that repository (fatal on failure), for the tests' later diffs.
func fixtureRepo(t *testing.T, dir string, files map[string]string) func(args ...string) string {
	t.Helper()
	for name, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) string {
		t.Helper()
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
	return git
}

// baseFile reads path at the fixture repository's base commit (HEAD), as Job.BaseFile does
// with worktree.Tree.FileAtBase.
func baseFile(git func(args ...string) string, dir string) func(ctx context.Context, path string) ([]byte, bool, error) {
	return func(ctx context.Context, path string) ([]byte, bool, error) {
		cmd := exec.CommandContext(ctx, "git", "cat-file", "-e", "HEAD:"+path)
		cmd.Dir = dir
		if err := cmd.Run(); err != nil {
			return nil, false, nil
		}
		return []byte(git("show", "HEAD:"+path)), true, nil
	}
}
