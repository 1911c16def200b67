package worktree

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// openRepo checks that repoPath is a git repository and returns where it
// lives: its top level as the work tree, its common git dir (shared by all
// its worktrees) as both git dir and common dir, all absolute.
func openRepo(ctx context.Context, repoPath string) (repoDirs, error) {
	abs, err := filepath.Abs(repoPath)
	if err != nil {
		return repoDirs{}, fmt.Errorf("open repository %q: %w", repoPath, err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return repoDirs{}, fmt.Errorf("open repository %q: %w: the directory does not exist; check the repo path in the config", repoPath, ErrNotRepository)
	}
	out, err := runGit(ctx, abs, "rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir")
	if err != nil {
		if ctx.Err() != nil {
			return repoDirs{}, err
		}
		if bare, _ := runGit(ctx, abs, "rev-parse", "--is-bare-repository"); strings.TrimSpace(bare) == "true" {
			return repoDirs{}, fmt.Errorf("open repository %q: %w: it is a bare repository: ticketd needs a clone with a working tree (git clone %s DIR, then set the repo path to DIR)", repoPath, ErrNotRepository, abs)
		}
		return repoDirs{}, fmt.Errorf("open repository %q: %w (%v); run `git init` there or fix the repo path in the config", repoPath, ErrNotRepository, err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		return repoDirs{}, fmt.Errorf("open repository %q: %w: unexpected rev-parse output %q (bare repository?)", repoPath, ErrNotRepository, out)
	}
	common := filepath.Clean(lines[1])
	return repoDirs{GitDir: common, CommonDir: common, WorkTree: filepath.Clean(lines[0])}, nil
}

// repoLocks serializes changes to one repository's worktree list and refs
// within this process, whichever Manager makes them: concurrent `git
// worktree add` and `git worktree prune` on one repository corrupt each
// other's metadata (prune deletes a half-made worktree's record). It is a
// registry of locks for an outside resource, not state tests change.
var repoLocks sync.Map // common git dir -> *sync.Mutex

// lockRepo takes the in-process lock and the cross-process file lock of the
// repository whose common git dir is given, and returns the release func.
func lockRepo(commonDir string) (func(), error) {
	l, _ := repoLocks.LoadOrStore(commonDir, &sync.Mutex{})
	mu := l.(*sync.Mutex)
	mu.Lock()
	unlockFile, err := lockRepoFile(commonDir)
	if err != nil {
		mu.Unlock()
		return nil, err
	}
	return func() { unlockFile(); mu.Unlock() }, nil
}

// linkedGitDir reads the .git file git just wrote into the new worktree dir
// and checks it both ways: it names <commonDir>/worktrees/<name>, and that
// directory's gitdir file names dir/.git. It returns the git dir under
// commonDir's spelling.
func linkedGitDir(commonDir, dir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, ".git"))
	if err != nil {
		return "", fmt.Errorf("read the .git file of new worktree %s: %w", dir, err)
	}
	target, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir: ")
	if !ok {
		return "", fmt.Errorf("new worktree %s: .git file %q is not a gitdir link", dir, data)
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(dir, target)
	}
	gitDir := filepath.Join(commonDir, "worktrees", filepath.Base(target))
	if !sameFile(gitDir, target) {
		return "", fmt.Errorf("new worktree %s: .git points at %s, not into %s", dir, target, filepath.Join(commonDir, "worktrees"))
	}
	back, err := gitdirTarget(gitDir)
	if err != nil {
		return "", fmt.Errorf("new worktree %s: %w", dir, err)
	}
	if !sameFile(back, dir) {
		return "", fmt.Errorf("new worktree %s: its git dir %s belongs to %s", dir, gitDir, back)
	}
	return gitDir, nil
}

// gitdirTarget returns the worktree directory a linked git dir's gitdir file
// names (the file holds "<worktree>/.git", absolute or relative to gitDir).
func gitdirTarget(gitDir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(gitDir, "gitdir"))
	if err != nil {
		return "", fmt.Errorf("read worktree record: %w", err)
	}
	p := strings.TrimSpace(string(data))
	if !filepath.IsAbs(p) {
		p = filepath.Join(gitDir, p)
	}
	return filepath.Dir(filepath.Clean(p)), nil
}

// registeredWorktrees maps each linked worktree's directory to its git dir,
// read from <commonDir>/worktrees/*/gitdir, the records git keeps, rather
// than from the .git files inside the worktrees, which their contents could
// have rewritten. Unreadable records are skipped (prune handles them).
func registeredWorktrees(commonDir string) (map[string]string, error) {
	base := filepath.Join(commonDir, "worktrees")
	entries, err := os.ReadDir(base)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list worktree records: %w", err)
	}
	out := map[string]string{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		gitDir := filepath.Join(base, e.Name())
		if dir, err := gitdirTarget(gitDir); err == nil {
			out[dir] = gitDir
		}
	}
	return out, nil
}

// sameFile reports whether a and b name the same directory entry, following
// symlinks (git may store either spelling of a path under a symlinked root).
func sameFile(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}
