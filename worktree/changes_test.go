package worktree

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestCommitChangesOnlyToolPaths: what a check wrote into the working copy — a new file (the
// stolen keys, in issue 19's probe), an edit of a tracked file, an edit of a file the maker
// changed, a FIFO in place of a tracked file — never reaches the commit or the patch; they are
// exactly the maker's changes, and Leftovers lists the rest.
func TestCommitChangesOnlyToolPaths(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, true)
	m := NewManager(filepath.Join(t.TempDir(), "trees"), nil)
	tree, err := m.Prepare(ctx, repo, "main", "ticketd/1-mean")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tree.CommitChanges(ctx, "nothing", nil); !errors.Is(err, ErrNothingToCommit) {
		t.Fatalf("CommitChanges without changes: %v, want ErrNothingToCommit", err)
	}
	fixed := "def mean(xs):\n    if not xs:\n        return 0.0\n    return sum(xs) / len(xs)\n"
	changes := []Change{
		{Path: "stats.py", Data: []byte(fixed)},
		{Path: "tests/test_stats.py", Data: []byte("from stats import mean\n")},
		{Path: "tools/run.sh", Data: []byte("#!/bin/sh\n"), Executable: true},
	}
	// The maker's files as written, then what the checks did on top.
	for _, c := range changes {
		writeFile(t, filepath.Join(tree.Dir, c.Path), string(c.Data))
	}
	writeFile(t, filepath.Join(tree.Dir, "stolen.txt"), "OPENAI_API_KEY=sk-...\n")
	writeFile(t, filepath.Join(tree.Dir, "old.py"), "x = 2  # a check edited a tracked file\n")
	writeFile(t, filepath.Join(tree.Dir, "tests", "test_stats.py"), "from stats import mean\nimport os  # edited by a check after the maker\n")
	writeFile(t, filepath.Join(tree.Dir, "run.log"), "ignored\n")
	os.Remove(filepath.Join(tree.Dir, ".gitignore"))
	if err := syscall.Mkfifo(filepath.Join(tree.Dir, "pipe.py"), 0o644); err != nil {
		t.Fatal(err)
	}

	diff, err := tree.DiffChanges(ctx, changes)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"+    if not xs:", "b/tests/test_stats.py", "new file mode 100755"} {
		if !strings.Contains(diff, want) {
			t.Errorf("the patch lacks %q:\n%s", want, diff)
		}
	}
	for _, bad := range []string{"stolen", "x = 2", "import os", ".gitignore", "pipe.py", "run.log"} {
		if strings.Contains(diff, bad) {
			t.Errorf("the patch holds what a check wrote (%q):\n%s", bad, diff)
		}
	}
	left, err := tree.Leftovers(ctx, changes)
	if want := []string{".gitignore", "old.py", "run.log", "stolen.txt", "tests/test_stats.py"}; err != nil || !slices.Equal(left, want) {
		t.Errorf("Leftovers = %q, %v; want %q", left, err, want)
	}
	commit, err := tree.CommitChanges(ctx, "Fix the mean  \n\n\nof nothing\n", changes)
	if err != nil {
		t.Fatal(err)
	}
	files := git(t, repo, "diff-tree", "-r", "--name-only", "--no-commit-id", commit)
	if files != "stats.py\ntests/test_stats.py\ntools/run.sh" {
		t.Errorf("the commit changes %q, want exactly the maker's three paths", files)
	}
	if got := git(t, repo, "rev-parse", "ticketd/1-mean"); got != commit {
		t.Errorf("the branch is at %s, want the new commit %s", got, commit)
	}
	if msg := git(t, repo, "log", "-1", "--format=%B", commit); msg != "Fix the mean\n\nof nothing" {
		t.Errorf("commit message %q, want it cleaned like git commit does", msg)
	}
	if got := git(t, repo, "show", commit+":tests/test_stats.py"); got != "from stats import mean" {
		t.Errorf("the committed test is %q, want the maker's version, not the check's", got)
	}
	if diff2, err := tree.DiffChanges(ctx, changes); err != nil || diff2 != diff {
		t.Errorf("the patch after the commit differs: %v", err)
	}
	for _, bad := range []Change{{Path: "../x"}, {Path: ".git/config"}, {Path: "/etc/passwd"}, {Path: "a/../b"}, {Path: "sub/.GIT/hooks/x"}} {
		if _, err := tree.DiffChanges(ctx, []Change{bad}); err == nil {
			t.Errorf("DiffChanges accepted the path %q", bad.Path)
		}
	}
}

// TestRemoveUnreadableDirs: directories a check made unreadable (0300) or unwritable (0500)
// do not keep a worktree on disk, neither at Remove nor in the next start's clean-up. As root
// nothing is unreadable, so run the test binary as a user (setpriv --reuid=nobody) to see the
// case issue 19 found.
func TestRemoveUnreadableDirs(t *testing.T) {
	ctx := context.Background()
	litter := func(t *testing.T, dir string) {
		t.Helper()
		writeFile(t, filepath.Join(dir, "hide", "sealed", "big.bin"), "data")
		for _, d := range []struct {
			p    string
			mode os.FileMode
		}{{filepath.Join(dir, "hide", "sealed"), 0o500}, {filepath.Join(dir, "hide"), 0o300}} {
			if err := os.Chmod(d.p, d.mode); err != nil {
				t.Fatal(err)
			}
		}
		t.Cleanup(func() {
			os.Chmod(filepath.Join(dir, "hide"), 0o700)
			os.Chmod(filepath.Join(dir, "hide", "sealed"), 0o700)
		})
	}
	repo := newRepo(t, true)
	m := NewManager(filepath.Join(t.TempDir(), "trees"), nil)
	tree, err := m.Prepare(ctx, repo, "main", "ticketd/1-a")
	if err != nil {
		t.Fatal(err)
	}
	litter(t, tree.Dir)
	if err := m.Remove(ctx, tree, false); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if _, err := os.Stat(tree.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the worktree is still on disk after Remove: %v", err)
	}
	// A crash leaves one behind: the next start's Manager removes it.
	tree, err = m.Prepare(ctx, repo, "main", "ticketd/2-b")
	if err != nil {
		t.Fatal(err)
	}
	litter(t, tree.Dir)
	next := NewManager(m.Root(), nil)
	if _, err := next.CollectLeftovers(ctx, repo); err != nil {
		t.Fatalf("CollectLeftovers: %v", err)
	}
	if _, err := os.Stat(tree.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the crashed attempt's worktree is still on disk after the clean-up: %v", err)
	}
}

// BenchmarkSnapshotUndoBig measures what the daemon adds around every run of checks on a
// repository of 5,000 and 10,000 files: Snapshot before it (git status, the maker's file
// read), Undo after it (git status, a file a check wrote removed) and the Clean before the
// next check (issue 37: this should not grow with the repository's size).
func BenchmarkSnapshotUndoBig(b *testing.B) {
	for _, n := range []int{bigRepoFiles, 2 * bigRepoFiles} {
		b.Run(fmt.Sprint(n, "files"), func(b *testing.B) {
			ctx := context.Background()
			repo := bigRepo(b, n)
			m := NewManager(filepath.Join(b.TempDir(), "trees"), nil)
			tree, err := m.Prepare(ctx, repo, "main", "ticketd/1-bench")
			if err != nil {
				b.Fatal(err)
			}
			writeFile(b, filepath.Join(tree.Dir, "pkg00", "mod00", "file00.py"), "x = 1\n")
			for b.Loop() {
				snap, err := tree.Snapshot(ctx)
				if err != nil {
					b.Fatal(err)
				}
				writeFile(b, filepath.Join(tree.Dir, "left.txt"), "a check was here\n")
				writeFile(b, filepath.Join(tree.Dir, "pkg01", "__pycache__", "x.pyc"), "cache\n")
				if _, err := tree.Undo(ctx, snap); err != nil {
					b.Fatal(err)
				}
				if _, err := tree.Clean(ctx, []string{"pkg00/mod00/file00.py"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCommitChanges measures building the fix commit from the maker's files on a
// 5,000-file repository (hash-object, a private index, write-tree, commit-tree, update-ref).
func BenchmarkCommitChanges(b *testing.B) {
	ctx := context.Background()
	repo := bigRepo(b, bigRepoFiles)
	m := NewManager(filepath.Join(b.TempDir(), "trees"), nil)
	tree, err := m.Prepare(ctx, repo, "main", "ticketd/1-bench")
	if err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		i++
		changes := []Change{{Path: "pkg00/mod00/file00.py", Data: []byte(fmt.Sprintf("x = %d\n", i))}}
		if _, err := tree.CommitChanges(ctx, "bench", changes); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSnapshotUndo: what ran between Snapshot and Undo (a check) is undone, and nothing else:
// the maker's files and a file put at its base content beforehand (the evidence step's
// revert) keep their state, ignored files stay, and the paths put back are returned.
func TestSnapshotUndo(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, true)
	m := NewManager(filepath.Join(t.TempDir(), "trees"), nil)
	tree, err := m.Prepare(ctx, repo, "main", "ticketd/1-mean")
	if err != nil {
		t.Fatal(err)
	}
	// Before the checks: the maker's fix and a new test, and a tool file made executable.
	writeFile(t, filepath.Join(tree.Dir, "stats.py"), "def mean(xs):\n    return sum(xs) / len(xs) if xs else 0.0\n")
	writeFile(t, filepath.Join(tree.Dir, "tests", "test_stats.py"), "from stats import mean\n")
	writeFile(t, filepath.Join(tree.Dir, "run.sh"), "#!/bin/sh\n")
	os.Chmod(filepath.Join(tree.Dir, "run.sh"), 0o755)
	snap, err := tree.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The checks: a new file, an edit of a tracked file, an edit of the maker's file, a
	// deleted tracked file, the executable bit dropped, an ignored file, a FIFO.
	writeFile(t, filepath.Join(tree.Dir, "stolen.txt"), "keys\n")
	writeFile(t, filepath.Join(tree.Dir, "old.py"), "x = 2\n")
	writeFile(t, filepath.Join(tree.Dir, "tests", "test_stats.py"), "import os\n")
	os.Remove(filepath.Join(tree.Dir, ".gitignore"))
	os.Chmod(filepath.Join(tree.Dir, "run.sh"), 0o644)
	writeFile(t, filepath.Join(tree.Dir, "cache", "x.log"), "ignored\n")
	put, err := tree.Undo(ctx, snap)
	if want := []string{".gitignore", "old.py", "run.sh", "stolen.txt", "tests/test_stats.py"}; err != nil || !slices.Equal(put, want) {
		t.Errorf("Undo put back %q, %v; want %q", put, err, want)
	}
	after, err := tree.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(after.files) != len(snap.files) {
		t.Errorf("after Undo the changed paths are %d, want the %d of the snapshot", len(after.files), len(snap.files))
	}
	for p, want := range snap.files {
		if got := after.files[p]; got.present != want.present || got.mode != want.mode || string(got.data) != string(want.data) {
			t.Errorf("%s after Undo: %+v, want %+v", p, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(tree.Dir, "cache", "x.log")); err != nil {
		t.Errorf("Undo removed an ignored file, the checks' own state: %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(tree.Dir, "old.py")); string(data) != "x = 1\n" {
		t.Errorf("old.py after Undo: %q, want its base content", data)
	}
}

// TestChangesFollowLineEndingRules: a repository that checks files out with CRLF (an eol
// attribute, core.autocrlf) stores them with LF, so the maker reads and writes CRLF. The
// commit and the patch must hold what `git add` of the maker's file stores: only the line
// the maker changed differs, not every line's ending. Where no rule converts, the bytes are
// kept as written.
func TestChangesFollowLineEndingRules(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		setup  func(t *testing.T, repo string)
		write  string // the maker's stats.py
		stored string // what the commit must hold
	}{
		{"eol=crlf attribute", func(t *testing.T, repo string) {
			writeFile(t, filepath.Join(repo, ".gitattributes"), "*.py text eol=crlf\n")
			git(t, repo, "add", "-A")
			git(t, repo, "commit", "--quiet", "-m", "attributes")
		}, "def mean(xs):\r\n    return sum(xs) / max(len(xs), 1)\r\n", "def mean(xs):\n    return sum(xs) / max(len(xs), 1)\n"},
		{"core.autocrlf=true", func(t *testing.T, repo string) {
			git(t, repo, "config", "core.autocrlf", "true")
		}, "def mean(xs):\r\n    return sum(xs) / max(len(xs), 1)\r\n", "def mean(xs):\n    return sum(xs) / max(len(xs), 1)\n"},
		{"no rule: CRLF kept", func(t *testing.T, repo string) {},
			"def mean(xs):\r\n    return sum(xs) / max(len(xs), 1)\r\n", "def mean(xs):\r\n    return sum(xs) / max(len(xs), 1)\r\n"},
		{"-text attribute: CRLF kept", func(t *testing.T, repo string) {
			writeFile(t, filepath.Join(repo, ".gitattributes"), "*.py -text\n")
			git(t, repo, "add", "-A")
			git(t, repo, "commit", "--quiet", "-m", "attributes")
			git(t, repo, "config", "core.autocrlf", "true")
		}, "def mean(xs):\r\n    return sum(xs) / max(len(xs), 1)\r\n", "def mean(xs):\r\n    return sum(xs) / max(len(xs), 1)\r\n"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo := newRepo(t, true)
			tt.setup(t, repo)
			m := NewManager(t.TempDir(), nil)
			tree, err := m.Prepare(ctx, repo, "main", BranchName(int64(i+1), "eol"))
			if err != nil {
				t.Fatal(err)
			}
			changes := []Change{{Path: "stats.py", Data: []byte(tt.write)}}
			writeFile(t, filepath.Join(tree.Dir, "stats.py"), tt.write)
			diff, err := tree.DiffChanges(ctx, changes)
			if err != nil {
				t.Fatalf("DiffChanges: %v", err)
			}
			if tt.stored != tt.write {
				if strings.Contains(diff, "-def mean") || strings.Contains(diff, "\r") {
					t.Errorf("DiffChanges of %q changes every line ending, want only the edited line:\n%q", tt.write, diff)
				}
				if viaAdd, err := tree.Diff(ctx); err != nil || viaAdd != diff {
					t.Errorf("DiffChanges differs from Diff (git add of the same file):\n%q\n%q (%v)", diff, viaAdd, err)
				}
			}
			commit, err := tree.CommitChanges(ctx, "fix", changes)
			if err != nil {
				t.Fatalf("CommitChanges: %v", err)
			}
			if got := gitRaw(t, repo, "cat-file", "blob", commit+":stats.py"); got != tt.stored {
				t.Errorf("committed stats.py = %q after the maker wrote %q; want %q", got, tt.write, tt.stored)
			}
		})
	}
}

// gitRaw is git for test set-up, returning stdout untrimmed.
func gitRaw(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = userGitEnv()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s in %s: %v", strings.Join(args, " "), dir, err)
	}
	return string(out)
}

// TestTrackedNamesThatLookLikePathspecs: file names git would read as pathspec magic or a
// glob (":(glob)x.py", ":!x.py", "*.py") are plain names to ticketd. FileAtBase and FileOn
// read them, and Undo puts a tracked one a check edited back to its base content instead of
// deleting it as if it were new.
func TestTrackedNamesThatLookLikePathspecs(t *testing.T) {
	ctx := context.Background()
	names := []string{":(glob)x.py", ":!x.py", ":/top.py", "*.py", "[ab].py"}
	repo := newRepo(t, true)
	for _, n := range names {
		writeFile(t, filepath.Join(repo, n), "name = "+fmt.Sprintf("%q", n)+"\n")
	}
	writeFile(t, filepath.Join(repo, "a.py"), "a = 1\n")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "--quiet", "-m", "odd names")
	m := NewManager(t.TempDir(), nil)
	tree, err := m.Prepare(ctx, repo, "main", "ticketd/1-names")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := tree.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		want := "name = " + fmt.Sprintf("%q", n) + "\n"
		if data, found, err := tree.FileAtBase(ctx, n); err != nil || !found || string(data) != want {
			t.Errorf("FileAtBase(%q) = %q, %v, %v; want %q", n, data, found, err, want)
		}
		if data, found, err := tree.FileOn(ctx, "main", n); err != nil || !found || string(data) != want {
			t.Errorf("FileOn(main, %q) = %q, %v, %v; want %q", n, data, found, err, want)
		}
		writeFile(t, filepath.Join(tree.Dir, n), "edited by a check\n")
	}
	if _, err := tree.Undo(ctx, snap); err != nil {
		t.Errorf("Undo: %v", err)
	}
	for _, n := range names {
		want := "name = " + fmt.Sprintf("%q", n) + "\n"
		if data, err := os.ReadFile(filepath.Join(tree.Dir, n)); err != nil || string(data) != want {
			t.Errorf("tracked %q after Undo: %q, %v; want its base content %q", n, data, err, want)
		}
	}
	if data, err := os.ReadFile(filepath.Join(tree.Dir, "a.py")); err != nil || string(data) != "a = 1\n" {
		t.Errorf("a.py (matched by the glob names) after Undo: %q, %v; want it untouched", data, err)
	}
}

// TestChangesInsideSubmoduleRefused: a submodule's folder is empty in a worktree (ticketd
// never initialises one), so the maker's tools can write a file there. Staged over the
// base, that file replaced the gitlink: the commit silently removed the submodule. A change
// at or under a submodule is refused, naming it; the branch does not move.
func TestChangesInsideSubmoduleRefused(t *testing.T) {
	ctx := context.Background()
	lib := newRepo(t, true)
	repo := newRepo(t, true)
	git(t, repo, "-c", "protocol.file.allow=always", "submodule", "--quiet", "add", lib, "vendor/lib")
	git(t, repo, "commit", "--quiet", "-m", "submodule")
	m := NewManager(t.TempDir(), nil)
	tree, err := m.Prepare(ctx, repo, "main", "ticketd/1-sub")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		changes []Change
		wantErr string // "": accepted
	}{
		{"file inside the submodule", []Change{{Path: "vendor/lib/stats.py", Data: []byte("x\n")}}, "vendor/lib"},
		{"deep inside the submodule", []Change{{Path: "stats.py", Data: []byte("x\n")}, {Path: "vendor/lib/pkg/m.py", Data: []byte("x\n")}}, "vendor/lib"},
		{"file over the submodule", []Change{{Path: "vendor/lib", Data: []byte("x\n")}}, "vendor/lib"},
		{"beside the submodule", []Change{{Path: "vendor/libx.py", Data: []byte("x\n")}, {Path: "vendor/other/m.py", Data: []byte("x\n")}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			head := git(t, repo, "rev-parse", tree.Branch)
			diff, diffErr := tree.DiffChanges(ctx, tt.changes)
			commit, commitErr := tree.CommitChanges(ctx, tt.name, tt.changes)
			if tt.wantErr == "" {
				if diffErr != nil || commitErr != nil {
					t.Fatalf("DiffChanges/CommitChanges of %v: %v, %v; want them accepted", tt.changes, diffErr, commitErr)
				}
				if got := git(t, repo, "ls-tree", commit, "vendor/lib"); !strings.HasPrefix(got, "160000 commit ") {
					t.Errorf("after the commit vendor/lib is %q, want the submodule kept", got)
				}
				return
			}
			for _, err := range []error{diffErr, commitErr} {
				if err == nil || !strings.Contains(err.Error(), "submodule "+tt.wantErr) {
					t.Errorf("DiffChanges/CommitChanges of %v: %v; want an error naming the submodule %s (diff:\n%s)", tt.changes, err, tt.wantErr, diff)
				}
			}
			if got := git(t, repo, "rev-parse", tree.Branch); got != head {
				t.Errorf("the branch moved to %s (commit %s), want it left at %s", got, commit, head)
			}
		})
	}
}

// TestUndoPutsBackWhatTheIndexHolds: a path no snapshot recorded goes back to what the
// tree's index holds, whatever kind of entry it is there and whatever a check put in its
// place. Looked up as a regular file of the base commit, a tracked symlink a check removed
// stayed removed, and in a round a file the earlier fix added (in HEAD, not in the base) was
// deleted once a check edited it, so the next check ran without it.
func TestUndoPutsBackWhatTheIndexHolds(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, true)
	if err := os.Symlink("stats.py", filepath.Join(repo, "link.py")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(repo, "pkg", "mod.py"), "y = 1\n")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "a symlink and a package")
	git(t, repo, "checkout", "-q", "-b", "ticketd/1-fix")
	writeFile(t, filepath.Join(repo, "added.py"), "new = 1\n")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "the earlier fix")
	git(t, repo, "checkout", "-q", "main")
	outside := t.TempDir()

	m := NewManager(filepath.Join(t.TempDir(), "trees"), nil)
	tree, err := m.PrepareFrom(ctx, repo, "main", "ticketd/1-fix-r2", "ticketd/1-fix")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := tree.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The check: the tracked symlink removed, the earlier fix's file edited, a tracked
	// folder replaced by a symlink to a folder outside.
	in := func(p string) string { return filepath.Join(tree.Dir, p) }
	if err := os.Remove(in("link.py")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, in("added.py"), "edited by a check\n")
	if err := os.RemoveAll(in("pkg")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, in("pkg")); err != nil {
		t.Fatal(err)
	}
	put, err := tree.Undo(ctx, snap)
	if want := []string{"added.py", "link.py", "pkg/mod.py"}; err != nil || !slices.Equal(put, want) {
		t.Errorf("Undo put back %q, %v; want %q", put, err, want)
	}
	if got, err := os.Readlink(in("link.py")); err != nil || got != "stats.py" {
		t.Errorf("link.py after Undo: -> %q, %v; want the tracked symlink to stats.py", got, err)
	}
	if data, err := os.ReadFile(in("added.py")); err != nil || string(data) != "new = 1\n" {
		t.Errorf("added.py after Undo: %q, %v; want the earlier fix's content", data, err)
	}
	if fi, err := os.Lstat(in("pkg")); err != nil || !fi.IsDir() {
		t.Errorf("pkg after Undo: %v, %v; want the tracked folder", fi, err)
	}
	if data, err := os.ReadFile(in("pkg/mod.py")); err != nil || string(data) != "y = 1\n" {
		t.Errorf("pkg/mod.py after Undo: %q, %v; want its content", data, err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("Undo wrote through the check's symlink into %s: %v", outside, entries)
	}
	if after, err := tree.Snapshot(ctx); err != nil || len(after.files) != 0 {
		t.Errorf("after Undo the changed paths are %v, %v; want none", slices.Collect(maps.Keys(after.files)), err)
	}
}

// gitCounter puts a git first on PATH that counts its runs and runs the real one, and returns
// a function reading the count.
func gitCounter(t *testing.T) func() int {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "runs")
	script := "#!/bin/sh\necho run >> '" + log + "'\nexec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return func() int {
		data, _ := os.ReadFile(log)
		return strings.Count(string(data), "run\n")
	}
}

// TestUndoCostDoesNotGrowWithFiles: a check that leaves thousands of files (a test writing
// its output into the worktree) costs Undo a few git processes, not one or two per file:
// with one per file, 3,000 files took 7 s, after every check of every submit.
func TestUndoCostDoesNotGrowWithFiles(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, true)
	m := NewManager(filepath.Join(t.TempDir(), "trees"), nil)
	tree, err := m.Prepare(ctx, repo, "main", "ticketd/1-many")
	if err != nil {
		t.Fatal(err)
	}
	snap, err := tree.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const files = 300
	for i := range files {
		writeFile(t, filepath.Join(tree.Dir, "out", fmt.Sprintf("d%d", i%10), fmt.Sprintf("f%04d.txt", i)), "x\n")
	}
	writeFile(t, filepath.Join(tree.Dir, "old.py"), "x = 2\n")
	runs := gitCounter(t)
	put, err := tree.Undo(ctx, snap)
	if err != nil || len(put) != files+1 {
		t.Fatalf("Undo put back %d paths, %v; want %d", len(put), err, files+1)
	}
	if n := runs(); n > 10 {
		t.Errorf("Undo of %d files ran git %d times, want a handful", files+1, n)
	}
	if data, _ := os.ReadFile(filepath.Join(tree.Dir, "old.py")); string(data) != "x = 1\n" {
		t.Errorf("old.py after Undo: %q, want its base content", data)
	}
	if left, _ := tree.status(ctx); len(left) != 0 {
		t.Errorf("after Undo git status lists %q, want nothing", left)
	}
}

// TestUndoReopensClosedDirs: a check that edits a tracked file and then closes its folder
// (chmod 000) hid the edit from git status and made the file unwritable, so Undo left it
// edited for the next check. As root every folder is open, so run the test binary as a user
// (setpriv --reuid=nobody) to see the case.
func TestUndoReopensClosedDirs(t *testing.T) {
	ctx := context.Background()
	tree := closedDirTree(t, "tests/test_mean.py", "def test_mean():\n    assert False\n")
	snap, err := tree.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tests := filepath.Join(tree.Dir, "tests")
	writeFile(t, filepath.Join(tests, "test_mean.py"), "def test_mean():\n    assert True\n")
	if err := os.Chmod(tests, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(tests, 0o755) })
	put, err := tree.Undo(ctx, snap)
	if err != nil || !slices.Equal(put, []string{"tests/test_mean.py"}) {
		t.Errorf("Undo put back %q, %v; want the edited test", put, err)
	}
	if data, err := os.ReadFile(filepath.Join(tests, "test_mean.py")); err != nil || !strings.Contains(string(data), "assert False") {
		t.Errorf("tests/test_mean.py after Undo: %q, %v; want its base content", data, err)
	}
}

// TestDiffShowsTextThatAttributesCallBinary: a repository's .gitattributes may call text
// binary (`*.py -diff`, `*.json binary`, common for lock files and fixtures); git then diffs a
// change to it as a base85 "GIT binary patch" that the checker, the judge and a human read
// nothing of, and a change hidden there would ship unread. DiffChanges shows such files as
// text and keeps a real binary (a NUL in it) binary; the patch still applies to the base and
// gives the commit's tree.
func TestDiffShowsTextThatAttributesCallBinary(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, true)
	writeFile(t, filepath.Join(repo, ".gitattributes"), "*.py -diff\n*.json binary\n")
	writeFile(t, filepath.Join(repo, "table.json"), "{\"a\": 1}\n")
	writeFile(t, filepath.Join(repo, "logo.bin"), "\x00\x01old")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "--quiet", "-m", "attributes")
	tree, err := NewManager(t.TempDir(), nil).Prepare(ctx, repo, "main", BranchName(1, "attrs"))
	if err != nil {
		t.Fatal(err)
	}
	changes := []Change{
		{Path: "stats.py", Data: []byte("def mean(xs):\n    return sum(xs) / max(len(xs), 1)\n")},
		{Path: "table.json", Data: []byte("{\"a\": 2}\n")},
		{Path: "logo.bin", Data: []byte("\x00\x01new")},
		{Path: "new.py", Data: []byte("HIDDEN = True\n")},
	}
	diff, err := tree.DiffChanges(ctx, changes)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"+    return sum(xs) / max(len(xs), 1)\n", "+{\"a\": 2}\n", "+HIDDEN = True\n"} {
		if !strings.Contains(diff, want) {
			t.Errorf("the diff does not show %q as text:\n%s", want, diff)
		}
	}
	if strings.Count(diff, "GIT binary patch") != 1 || !strings.Contains(diff, "diff --git a/logo.bin b/logo.bin\n") {
		t.Errorf("want logo.bin alone as a binary patch:\n%s", diff)
	}
	commit, err := tree.CommitChanges(ctx, "fix", changes)
	if err != nil {
		t.Fatal(err)
	}
	check := t.TempDir()
	git(t, "", "clone", "--quiet", "--branch", "main", repo, check)
	cmd := exec.Command("git", "apply", "--index", "-")
	cmd.Dir, cmd.Env, cmd.Stdin = check, userGitEnv(), strings.NewReader(diff)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply of the diff: %v\n%s", err, out)
	}
	if got, want := git(t, check, "write-tree"), git(t, repo, "rev-parse", commit+"^{tree}"); got != want {
		t.Errorf("the applied diff gives tree %s, the commit holds %s", got, want)
	}
}
