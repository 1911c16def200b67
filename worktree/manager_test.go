package worktree

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// userGitEnv is the environment of the tests' own git, standing for a user's:
// the test process's environment without variables that would point git at
// another repository (the tests may run under a git hook), messages in English.
func userGitEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
			"GIT_PREFIX", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CEILING_DIRECTORIES", "LC_ALL", "LANGUAGE":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LC_ALL=C", "GIT_TERMINAL_PROMPT=0")
}

// git runs git in dir for test set-up and fails the test on error.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = userGitEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// newRepo makes a git repository with a small Python project, one commit on
// main, a .gitignore and an info/exclude rule. With identity, user.name and
// user.email are set in the repository's own config.
func newRepo(t testing.TB, identity bool) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "sample")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "init", "--quiet", "--initial-branch=main")
	if identity {
		git(t, dir, "config", "user.name", "Test User")
		git(t, dir, "config", "user.email", "test@example.com")
	}
	writeFile(t, filepath.Join(dir, "stats.py"), "def mean(xs):\n    return sum(xs) / len(xs)\n")
	writeFile(t, filepath.Join(dir, "old.py"), "x = 1\n")
	writeFile(t, filepath.Join(dir, ".gitignore"), "*.log\n")
	writeFile(t, filepath.Join(dir, ".git", "info", "exclude"), "local-notes.txt\n")
	git(t, dir, "add", "-A")
	git(t, dir, "-c", "user.name=Setup", "-c", "user.email=setup@example.com", "commit", "--quiet", "-m", "initial")
	return dir
}

func TestBranchName(t *testing.T) {
	tests := []struct {
		id    int64
		title string
		want  string
	}{
		{12, "Average of an empty list crashes", "ticketd/12-average-of-an-empty-list-crashes"},
		{1, "  Fix: `median()` returns WRONG value!!  ", "ticketd/1-fix-median-returns-wrong-value"},
		{7, "", "ticketd/7-ticket"},
		{8, "日本語のタイトル", "ticketd/8-ticket"},
		{9, "Café crème — naïve résumé", "ticketd/9-caf-cr-me-na-ve-r-sum"},
		{10, "a very long title that keeps going well past the forty character limit", "ticketd/10-a-very-long-title-that-keeps-going-well"},
		{11, strings.Repeat("x", 60), "ticketd/11-" + strings.Repeat("x", 40)},
		{12, "..lock/@{HEAD}~^:?*[\\", "ticketd/12-lock-head"},
	}
	for _, tt := range tests {
		got := BranchName(tt.id, tt.title)
		if got != tt.want {
			t.Errorf("BranchName(%d, %q)\n got %q\nwant %q", tt.id, tt.title, got, tt.want)
		}
		slug := strings.SplitN(strings.TrimPrefix(got, "ticketd/"), "-", 2)[1]
		if len(slug) > maxSlug || slug == "" || strings.HasSuffix(slug, "-") {
			t.Errorf("BranchName(%d, %q) = %q: slug %q breaks the rules", tt.id, tt.title, got, slug)
		}
		cmd := exec.Command("git", "check-ref-format", "--branch", got)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("BranchName(%d, %q) = %q is not a valid branch: %s", tt.id, tt.title, got, out)
		}
	}
}

func TestPrepareDiffCommitRemove(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, true)
	m := NewManager(filepath.Join(t.TempDir(), "trees"), nil)

	tree, err := m.Prepare(ctx, repo, "main", "ticketd/1-mean")
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if want := git(t, repo, "rev-parse", "main"); tree.BaseCommit != want {
		t.Errorf("BaseCommit = %q, want %q", tree.BaseCommit, want)
	}
	if !under(m.Root(), tree.Dir) {
		t.Errorf("tree dir %s not under root %s", tree.Dir, m.Root())
	}
	if got := git(t, tree.Dir, "branch", "--show-current"); got != "ticketd/1-mean" {
		t.Errorf("worktree is on %q, want ticketd/1-mean", got)
	}

	diff, err := tree.Diff(ctx)
	if err != nil || diff != "" {
		t.Fatalf("Diff of a fresh tree = %q, %v; want empty", diff, err)
	}
	if _, err := tree.Commit(ctx, "nothing"); !errors.Is(err, ErrNothingToCommit) {
		t.Fatalf("Commit of a fresh tree: got %v, want ErrNothingToCommit", err)
	}

	writeFile(t, filepath.Join(tree.Dir, "stats.py"), "def mean(xs):\n    if not xs:\n        return 0.0\n    return sum(xs) / len(xs)\n")
	writeFile(t, filepath.Join(tree.Dir, "tests", "test_stats.py"), "from stats import mean\n")
	writeFile(t, filepath.Join(tree.Dir, "run.log"), "ignored by .gitignore\n")
	writeFile(t, filepath.Join(tree.Dir, "local-notes.txt"), "ignored by info/exclude\n")
	if err := os.Remove(filepath.Join(tree.Dir, "old.py")); err != nil {
		t.Fatal(err)
	}

	diff, err = tree.Diff(ctx)
	if err != nil {
		t.Fatalf("Diff: %v", err)
	}
	for _, want := range []string{"+    if not xs:", "diff --git a/tests/test_stats.py b/tests/test_stats.py", "new file mode", "deleted file mode", "-x = 1"} {
		if !strings.Contains(diff, want) {
			t.Errorf("Diff lacks %q; got:\n%s", want, diff)
		}
	}
	for _, bad := range []string{"run.log", "local-notes.txt"} {
		if strings.Contains(diff, bad) {
			t.Errorf("Diff includes ignored file %s:\n%s", bad, diff)
		}
	}
	if st := git(t, tree.Dir, "status", "--porcelain"); !strings.Contains(st, "?? tests/") {
		t.Errorf("Diff changed the tree's index; status:\n%s", st)
	}
	changed, err := tree.Changed(ctx)
	wantChanged := []string{"old.py", "stats.py", "tests/test_stats.py"}
	if err != nil || !slices.Equal(changed, wantChanged) {
		t.Errorf("Changed = %q, %v; want %q", changed, err, wantChanged)
	}

	// The diff applies to the base commit and reproduces the tree.
	check := filepath.Join(t.TempDir(), "check")
	git(t, repo, "worktree", "add", "--quiet", "--detach", check, tree.BaseCommit)
	writeFile(t, filepath.Join(t.TempDir(), "p"), "")
	cmd := exec.Command("git", "apply", "--index", "-")
	cmd.Dir, cmd.Stdin = check, strings.NewReader(diff)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply of Diff output: %v\n%s", err, out)
	}
	git(t, repo, "worktree", "remove", "--force", check)

	commit, err := tree.Commit(ctx, "Fix mean of an empty list\n\n#12 in the tracker")
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if got := git(t, repo, "rev-parse", "ticketd/1-mean"); got != commit {
		t.Errorf("branch points at %s, Commit returned %s", got, commit)
	}
	if got := git(t, repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%B", commit); got != "ticketd <ticketd@localhost>|ticketd <ticketd@localhost>|Fix mean of an empty list\n\n#12 in the tracker" {
		t.Errorf("commit identity/message = %q", got)
	}
	if got := git(t, repo, "show", "--name-status", "--format=", commit); got != "D\told.py\nM\tstats.py\nA\ttests/test_stats.py" {
		t.Errorf("commit content:\n%s", got)
	}
	after, err := tree.Diff(ctx)
	if err != nil || after != diff {
		t.Errorf("Diff after Commit differs from before (err %v):\n%s\nwant:\n%s", err, after, diff)
	}
	if _, err := tree.Commit(ctx, "again"); !errors.Is(err, ErrNothingToCommit) {
		t.Errorf("second Commit: got %v, want ErrNothingToCommit", err)
	}
	if st := git(t, repo, "status", "--porcelain"); st != "" {
		t.Errorf("user's checkout changed:\n%s", st)
	}

	if err := m.Remove(ctx, tree, false); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if _, err := os.Stat(tree.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("tree dir still exists after Remove: %v", err)
	}
	if got := git(t, repo, "branch", "--list", "ticketd/*"); got != "" {
		t.Errorf("branch left after Remove without keepBranch: %q", got)
	}
	if got := git(t, repo, "worktree", "list"); strings.Count(got, "\n") != 0 {
		t.Errorf("worktree still registered:\n%s", got)
	}
	if err := m.Remove(ctx, tree, false); err != nil {
		t.Errorf("second Remove: %v", err)
	}
}

func TestRemoveKeepBranch(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, true)
	m := NewManager(t.TempDir(), nil)
	tree, err := m.Prepare(ctx, repo, "HEAD", "ticketd/2-keep")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(tree.Dir, "new.py"), "y = 2\n")
	commit, err := tree.Commit(ctx, "add new.py")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Remove(ctx, tree, true); err != nil {
		t.Fatalf("Remove keepBranch: %v", err)
	}
	if got := git(t, repo, "rev-parse", "ticketd/2-keep"); got != commit {
		t.Errorf("kept branch at %s, want %s", got, commit)
	}
	// A retry of the same ticket resets the branch to the base.
	again, err := m.Prepare(ctx, repo, "main", "ticketd/2-keep")
	if err != nil {
		t.Fatalf("Prepare on an existing branch: %v", err)
	}
	if got := git(t, again.Dir, "rev-parse", "HEAD"); got != again.BaseCommit {
		t.Errorf("re-prepared branch at %s, want base %s", got, again.BaseCommit)
	}
}

func TestPrepareErrors(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, true)
	plain := t.TempDir()
	bare := filepath.Join(t.TempDir(), "bare.git")
	git(t, repo, "clone", "--quiet", "--bare", repo, bare)
	m := NewManager(t.TempDir(), nil)
	tests := []struct {
		name, repo, ref, branch string
		want                    error
		wantText                string
	}{
		{"missing dir", filepath.Join(plain, "nope"), "main", "ticketd/1-x", ErrNotRepository, "does not exist"},
		{"not a repo", plain, "main", "ticketd/1-x", ErrNotRepository, "git init"},
		{"bare repo", bare, "main", "ticketd/1-x", ErrNotRepository, "bare repository: ticketd needs a clone with a working tree (git clone " + bare + " DIR"},
		{"unknown ref", repo, "no-such-branch", "ticketd/1-x", ErrUnknownRef, "no-such-branch"},
		{"bad branch", repo, "main", "ticketd/..bad", nil, "invalid branch name"},
	}
	for _, tt := range tests {
		tree, err := m.Prepare(ctx, tt.repo, tt.ref, tt.branch)
		if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) || !strings.Contains(err.Error(), tt.wantText) {
			t.Errorf("%s: Prepare(%q, %q, %q) = %v, %v; want %v mentioning %q", tt.name, tt.repo, tt.ref, tt.branch, tree, err, tt.want, tt.wantText)
		}
	}
	if entries, _ := os.ReadDir(m.Root()); len(entries) != 0 {
		t.Errorf("failed Prepare left %d entries under root", len(entries))
	}
}

// TestPrepareConcurrent runs three workers preparing, editing, committing
// and removing trees of one repository at once: through one Manager (the
// daemon's case, serialized by its lock) and through three Managers (no
// shared lock: git's own lock collisions must be retried).
func TestPrepareConcurrent(t *testing.T) {
	for _, shared := range []bool{true, false} {
		name := map[bool]string{true: "one manager", false: "three managers"}[shared]
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			repo := newRepo(t, true)
			root := t.TempDir()
			one := NewManager(root, nil)
			var wg sync.WaitGroup
			errs := make([]error, 3)
			trees := make([]*Tree, 3)
			for i := range 3 {
				m := one
				if !shared {
					m = NewManager(root, nil)
				}
				wg.Go(func() {
					branch := BranchName(int64(i+1), "worker")
					tree, err := m.Prepare(ctx, repo, "main", branch)
					if err != nil {
						errs[i] = err
						return
					}
					trees[i] = tree
					if err := os.WriteFile(filepath.Join(tree.Dir, "w.txt"), []byte(branch), 0o644); err != nil {
						errs[i] = err
						return
					}
					if _, err := tree.Commit(ctx, "work of "+branch); err != nil {
						errs[i] = err
						return
					}
					errs[i] = m.Remove(ctx, tree, true)
				})
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("worker %d: %v", i, err)
				}
			}
			seen := map[string]bool{}
			for _, tree := range trees {
				if tree != nil {
					if seen[tree.Dir] {
						t.Errorf("two workers got dir %s", tree.Dir)
					}
					seen[tree.Dir] = true
				}
			}
			for i := range 3 {
				branch := BranchName(int64(i+1), "worker")
				if got := git(t, repo, "show", branch+":w.txt"); got != branch {
					t.Errorf("branch %s holds w.txt %q", branch, got)
				}
			}
		})
	}
}

func TestCollectLeftovers(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, true)
	root := t.TempDir()

	crashed := NewManager(root, nil)
	left, err := crashed.Prepare(ctx, repo, "main", "ticketd/3-crashed")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(left.Dir, "half.py"), "unfinished\n")
	vanished, err := crashed.Prepare(ctx, repo, "main", "ticketd/4-vanished")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(vanished.Dir); err != nil {
		t.Fatal(err)
	}
	// A crash inside Remove: the .git file is gone with half the files, so `worktree
	// prune` forgets the tree while its directory stays.
	half, err := crashed.Prepare(ctx, repo, "main", "ticketd/7-half-removed")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(half.Dir, "still-here.py"), "x\n")
	if err := os.Remove(filepath.Join(half.Dir, ".git")); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(root, "sample-5-empty-123")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "elsewhere")
	git(t, repo, "worktree", "add", "--quiet", "-b", "user-branch", other, "main")

	restarted := NewManager(root, nil)
	live, err := restarted.Prepare(ctx, repo, "main", "ticketd/6-live")
	if err != nil {
		t.Fatal(err)
	}
	removed, err := restarted.CollectLeftovers(ctx, repo)
	if err != nil {
		t.Fatalf("CollectLeftovers: %v", err)
	}
	slices.Sort(removed)
	want := []string{left.Dir, half.Dir, empty}
	slices.Sort(want)
	if !slices.Equal(removed, want) {
		t.Errorf("CollectLeftovers removed\n %q\nwant\n %q", removed, want)
	}
	list := git(t, repo, "worktree", "list", "--porcelain")
	for _, gone := range []string{left.Dir, vanished.Dir} {
		if strings.Contains(list, gone) {
			t.Errorf("worktree %s still registered:\n%s", gone, list)
		}
	}
	for _, kept := range []string{live.Dir, other} {
		if !strings.Contains(list, kept) {
			t.Errorf("worktree %s was removed but is not a leftover:\n%s", kept, list)
		}
	}
	if got := git(t, repo, "branch", "--list", "ticketd/3-crashed"); got == "" {
		t.Errorf("CollectLeftovers deleted the leftover's branch")
	}
	// The crashed ticket's branch can be prepared again.
	retry, err := restarted.Prepare(ctx, repo, "main", "ticketd/4-vanished")
	if err != nil {
		t.Fatalf("Prepare after CollectLeftovers: %v", err)
	}
	if err := restarted.Remove(ctx, retry, false); err != nil {
		t.Fatal(err)
	}
	if _, err := restarted.CollectLeftovers(ctx, filepath.Join(root, "missing")); !errors.Is(err, ErrNotRepository) {
		t.Errorf("CollectLeftovers of a missing repo: %v, want ErrNotRepository", err)
	}
}

// TestCommitWithoutGlobalIdentity pins that commits never depend on the
// machine's git config: no global or system config, no local identity.
func TestCommitWithoutGlobalIdentity(t *testing.T) {
	repo := newRepo(t, false)
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_CONFIG_GLOBAL", "/dev/null")
	t.Setenv("GIT_AUTHOR_NAME", "Leaked From Env")
	t.Setenv("EMAIL", "")
	ctx := context.Background()
	m := NewManager(t.TempDir(), nil)
	m.AuthorName, m.AuthorEmail = "Night Bot", "bot@example.org"
	tree, err := m.Prepare(ctx, repo, "main", "ticketd/9-id")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(tree.Dir, "stats.py"), "changed\n")
	commit, err := tree.Commit(ctx, "change")
	if err != nil {
		t.Fatalf("Commit without identity config: %v", err)
	}
	if got := git(t, repo, "log", "-1", "--format=%an <%ae>", commit); got != "Night Bot <bot@example.org>" {
		t.Errorf("author = %q, want Night Bot <bot@example.org>", got)
	}
}

// TestLockCollisionDetected pins the message git prints when another process
// holds index.lock, which runGitRetry relies on to retry.
func TestLockCollisionDetected(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, true)
	writeFile(t, filepath.Join(repo, "new.py"), "z = 3\n")
	lock := filepath.Join(repo, ".git", "index.lock")
	writeFile(t, lock, "")
	dirs := repoDirs{GitDir: filepath.Join(repo, ".git"), CommonDir: filepath.Join(repo, ".git"), WorkTree: repo}
	_, err := dirs.git(ctx, nil, "add", "new.py")
	if err == nil || !lockCollision(err) {
		t.Fatalf("git add with index.lock held: err %v, lockCollision %v; want a detected collision", err, lockCollision(err))
	}
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	if _, err := dirs.gitRetry(ctx, nil, "add", "new.py"); err != nil {
		t.Fatalf("git add after the lock is gone: %v", err)
	}
	_, err = dirs.git(ctx, nil, "rev-parse", "--verify", "no-such-ref")
	if lockCollision(err) {
		t.Errorf("an unknown ref counted as a lock collision: %v", err)
	}
}

// TestStaleLockIsErrLocked: a git lock file left in the repository (a git process killed
// while it held it) outlasts the retries. Before, the error was git's alone, which the
// daemon read as the endpoint's (a transport release, parked as "the endpoint kept failing
// them") or as the fix's (a charged commit). Now it is ErrLocked, naming the file to remove;
// a lock that goes away within the retries is still waited out.
func TestStaleLockIsErrLocked(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, true)
	lock := filepath.Join(repo, ".git", "refs", "heads", "ticketd", "3-stale.lock")
	writeFile(t, lock, "")
	m := NewManager(t.TempDir(), nil)
	_, err := m.Prepare(ctx, repo, "main", "ticketd/3-stale")
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), lock) || !strings.Contains(err.Error(), "remove the file") {
		t.Fatalf("Prepare with a stale lock on its branch: %v; want ErrLocked naming %s and what to do", err, lock)
	}
	// Not a stale lock: an unknown ref is no ErrLocked.
	if _, err := m.Prepare(ctx, repo, "no-such-ref", "ticketd/4-other"); errors.Is(err, ErrLocked) {
		t.Errorf("Prepare at an unknown ref: %v; want no ErrLocked", err)
	}
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Prepare(ctx, repo, "main", "ticketd/3-stale"); err != nil {
		t.Fatalf("Prepare once the lock is gone: %v", err)
	}
}

// TestRemoveAfterRepoDeleted pins that a tree's directory is cleaned up even
// when its repository vanished, and that the error says so.
func TestRemoveAfterRepoDeleted(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, true)
	m := NewManager(t.TempDir(), nil)
	tree, err := m.Prepare(ctx, repo, "main", "ticketd/5-gone")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(repo); err != nil {
		t.Fatal(err)
	}
	err = m.Remove(ctx, tree, false)
	if !errors.Is(err, ErrNotRepository) || !strings.Contains(err.Error(), "directory removed") {
		t.Errorf("Remove with the repo gone: %v", err)
	}
	if _, err := os.Stat(tree.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("tree dir left behind: %v", err)
	}
}

// under reports whether path lies strictly inside dir.
func under(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// TestCollectLeftoversStaysOutOfLiveTrees: worktree records are writable from
// a worktree; one naming a directory inside a live tree must not get it
// deleted.
func TestCollectLeftoversStaysOutOfLiveTrees(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, true)
	m := NewManager(t.TempDir(), nil)
	live, err := m.Prepare(ctx, repo, "main", "ticketd/7-live")
	if err != nil {
		t.Fatal(err)
	}
	inner := filepath.Join(live.Dir, "pkg")
	writeFile(t, filepath.Join(inner, "keep.py"), "x = 1\n")
	writeFile(t, filepath.Join(inner, ".git"), "gitdir: "+filepath.Join(repo, ".git", "worktrees", "forged")+"\n")
	writeFile(t, filepath.Join(repo, ".git", "worktrees", "forged", "gitdir"), filepath.Join(inner, ".git")+"\n")
	writeFile(t, filepath.Join(repo, ".git", "worktrees", "forged", "HEAD"), live.BaseCommit+"\n")
	writeFile(t, filepath.Join(repo, ".git", "worktrees", "forged", "commondir"), "../..\n")
	removed, err := m.CollectLeftovers(ctx, repo)
	if err != nil {
		t.Fatalf("CollectLeftovers: %v", err)
	}
	if _, err := os.Stat(filepath.Join(inner, "keep.py")); err != nil || len(removed) != 0 {
		t.Errorf("CollectLeftovers removed %q; the live tree's pkg/keep.py: %v", removed, err)
	}
}

// TestPrepareCallsReady checks the Ready hook's place: on the new folder while it is still
// empty (what the daemon's root-run sandbox makes its checks' group's before the checkout),
// with the .git file git writes there made 0644 after it, and a failing hook not failing
// the worktree.
func TestPrepareCallsReady(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(map[bool]string{false: "ready", true: "failing"}[fail], func(t *testing.T) {
			ctx := context.Background()
			repo := newRepo(t, true)
			m := NewManager(filepath.Join(t.TempDir(), "trees"), nil)
			var called []string
			m.Ready = func(dir string) error {
				entries, err := os.ReadDir(dir)
				if err != nil || len(entries) != 0 {
					t.Errorf("Ready(%s) on a folder holding %d entries (err %v), want it empty", dir, len(entries), err)
				}
				called = append(called, dir)
				// Stands for sandbox.ReadyForChecks: a default ACL giving all rwx, so what git
				// creates next keeps its 0666, whatever the umask.
				acl := []byte{2, 0, 0, 0}
				for _, tag := range []byte{0x01, 0x04, 0x20} {
					acl = append(acl, tag, 0, 7, 0, 0xff, 0xff, 0xff, 0xff)
				}
				if err := syscall.Setxattr(dir, "system.posix_acl_default", acl, 0); err != nil {
					t.Skipf("this file system takes no POSIX ACLs: %v", err)
				}
				if fail {
					return errors.New("no ACLs here")
				}
				return nil
			}
			tree, err := m.Prepare(ctx, repo, "main", "ticketd/3-ready")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { m.Remove(context.WithoutCancel(ctx), tree, false) })
			if len(called) != 1 || called[0] != tree.Dir {
				t.Fatalf("Ready called with %v, want once with %s", called, tree.Dir)
			}
			if _, err := os.Stat(filepath.Join(tree.Dir, "stats.py")); err != nil {
				t.Errorf("the worktree was not checked out after Ready: %v", err)
			}
			fi, err := os.Lstat(filepath.Join(tree.Dir, ".git"))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o644 {
				t.Errorf(".git is %s, want 0644: git metadata is never the checks' to write", fi.Mode().Perm())
			}
		})
	}
}
