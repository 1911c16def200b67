package sandbox

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzGitPaths feeds GitPaths arbitrary .git files (the one file of a worktree whose
// content decides what is bound read-only): it must not panic and must return only
// absolute, clean paths.
func FuzzGitPaths(f *testing.F) {
	for _, seed := range []string{"gitdir: /repo/.git/worktrees/a\n", "gitdir: ../repo/.git/worktrees/b", "gitdir:", "", "\x00gitdir: x", "gitdir: /\n"} {
		f.Add(seed, "../..\n")
	}
	f.Fuzz(func(t *testing.T, dotgit, commondir string) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, ".git"), []byte(dotgit), 0o644); err != nil {
			t.Fatal(err)
		}
		gd := filepath.Join(dir, "gd")
		os.MkdirAll(gd, 0o755)
		os.WriteFile(filepath.Join(gd, "commondir"), []byte(commondir), 0o644)
		for _, p := range GitPaths(dir) {
			if !filepath.IsAbs(p) || filepath.Clean(p) != p {
				t.Errorf("GitPaths(%q) returned %q: not absolute and clean", dotgit, p)
			}
		}
	})
}
