package tools

import (
	"os/exec"
	"strings"
	"testing"
)

// TestGitLookalikesAgreeWithGit: checkGitLookalike refuses exactly the names git's own
// verify_path refuses (with core.protectHFS and core.protectNTFS, which fsck always
// applies), asked of the installed git through update-index.
func TestGitLookalikesAgreeWithGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	git := func(args ...string) (string, error) {
		cmd := exec.Command("git", append([]string{"-c", "core.protectHFS=true", "-c", "core.protectNTFS=true"}, args...)...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if out, err := git("init", "-q"); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	blob, err := git("hash-object", "-w", "--stdin")
	if err != nil {
		t.Fatalf("hash-object: %v", err)
	}
	for _, name := range []string{
		".git\u200d", "\u200c.git", ".g\u200eit", ".GIT\ufeff", ".gi\u202et", "\u206a.Git",
		".git.", ".git ", ".git . .", ".git::$INDEX_ALLOCATION", ".git:stream", "git~1", "GIT~1.", "Git~1 ",
		// Names git accepts: they must pass.
		".gitignore", ".github", "git", ".gi", "git~2", ".git-blame-ignore-revs", ".g\u00efit", "x.git", ".gitx", "\u200d",
	} {
		path := "pkg/" + name + "/file"
		_, gerr := git("update-index", "--add", "--cacheinfo", "100644,"+blob+","+path)
		gitRefuses := gerr != nil
		ours := checkGitLookalike(path) != nil || isGitName(name)
		if ours != gitRefuses {
			t.Errorf("%q: ticketd refuses=%v, git refuses=%v", name, ours, gitRefuses)
		}
	}
}
