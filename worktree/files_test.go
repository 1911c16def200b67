package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store/clock/clocktest"
)

func TestFilesAt(t *testing.T) {
	repo := newRepo(t, false)
	base := git(t, repo, "rev-parse", "HEAD")
	m := NewManager(t.TempDir(), nil)
	tree, err := m.Prepare(context.Background(), repo, "main", "ticketd/1-x")
	if err != nil {
		t.Fatal(err)
	}
	// Changes in a worktree, committed or not, do not change what the base commit holds.
	writeFile(t, filepath.Join(tree.Dir, "new.py"), "y = 2\n")
	tests := []struct {
		path, commit string
		want         []string
		wantErr      string
	}{
		{path: repo, commit: base, want: []string{".gitignore", "old.py", "stats.py"}},
		{path: tree.Dir, commit: base, want: []string{".gitignore", "old.py", "stats.py"}},
		{path: repo, commit: strings.Repeat("0", 40), wantErr: "read commit"},
		{path: t.TempDir(), commit: base, wantErr: "open repository"},
	}
	for _, tt := range tests {
		got, err := FilesAt(tt.path, tt.commit)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("FilesAt(%s, %s) error = %v, want %q", tt.path, tt.commit, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("FilesAt(%s, %s) = %v, %v; want %v", tt.path, tt.commit, got, err, tt.want)
		}
	}
}

// TestDiffSeesSameSizeEditRightAfterPrepare: an edit that keeps the file's size, made in the
// same second as the checkout, must show in a diff taken in a later second. Git trusts an
// index entry's stat data (mtime and ctime to the second here) unless the entry is "racily
// clean", not older than the index file; a scratch copy of the index with a fresh mtime
// hid such edits. The wait is for the file system's clock to reach the next second, which is
// the condition under test, not a guess at how long something takes.
func TestDiffSeesSameSizeEditRightAfterPrepare(t *testing.T) {
	repo := newRepo(t, false)
	m := NewManager(t.TempDir(), nil)
	for i := range 3 {
		start := time.Now()
		tree, err := m.Prepare(context.Background(), repo, "main", fmt.Sprintf("ticketd/%d-x", i))
		if err != nil {
			t.Fatal(err)
		}
		// stats.py: "return sum(xs) / len(xs)" -> same length, different text.
		writeFile(t, filepath.Join(tree.Dir, "stats.py"), "def mean(xs):\n    return sum(xs) * len(xs)\n")
		if time.Now().Unix() != start.Unix() {
			continue // crossed a second boundary: not the case under test, try again
		}
		waitNextSecond(t, start)
		diff, err := tree.Diff(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(diff, "+    return sum(xs) * len(xs)") {
			t.Fatalf("round %d: diff misses a same-size edit made in the checkout's second:\n%q", i, diff)
		}
		return
	}
	t.Fatal("could not make the edit within the checkout's second in 3 tries")
}

// waitNextSecond returns once the clock has passed the second of start: the condition
// these tests are about (git trusts stat data to the second), not a guess at how long
// something takes.
func waitNextSecond(t *testing.T, start time.Time) {
	t.Helper()
	next := start.Truncate(time.Second).Add(time.Second + 10*time.Millisecond)
	clocktest.WaitFor(t, 10*time.Second, "the next second", func() bool { return !time.Now().Before(next) })
}

// TestFilesAtListsBlobsOnly: nested directories, names git would quote,
// symlinks; a submodule (gitlink) is not a file of the commit.
func TestFilesAtListsBlobsOnly(t *testing.T) {
	repo := newRepo(t, true)
	for _, f := range []string{"pkg/sub/deep.py", "with space.txt", "ünï cödé.md", "tab\tname", "a-b", "a/z", "a0"} {
		writeFile(t, filepath.Join(repo, filepath.FromSlash(f)), f+"\n")
	}
	if err := os.Symlink("stats.py", filepath.Join(repo, "link.py")); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "add", "-A")
	head := git(t, repo, "rev-parse", "HEAD")
	git(t, repo, "update-index", "--add", "--cacheinfo", "160000,"+head+",vendor/sub")
	git(t, repo, "commit", "--quiet", "-m", "more")
	got, err := FilesAt(repo, git(t, repo, "rev-parse", "HEAD"))
	want := []string{".gitignore", "a-b", "a/z", "a0", "link.py", "old.py", "pkg/sub/deep.py", "stats.py", "tab\tname", "with space.txt", "ünï cödé.md"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("FilesAt = %q, %v\nwant %q", got, err, want)
	}
}

func FuzzParseLsTree(f *testing.F) {
	f.Add("100644 blob e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\ta.py\x00160000 commit e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\tsub\x00")
	f.Add("120000 blob e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\tl\tx\x00garbage\x00\x00")
	f.Fuzz(func(t *testing.T, out string) {
		files := parseLsTree(out)
		if !slices.IsSorted(files) {
			t.Fatalf("parseLsTree(%q) = %q: not sorted", out, files)
		}
		for _, p := range files {
			if !strings.Contains(out, "\t"+p) {
				t.Fatalf("parseLsTree(%q) invented %q", out, p)
			}
		}
	})
}

// TestDiffKinds: the diff of a tree carries mode changes, binary files (new,
// changed, deleted) and symlinks, applies with `git apply` to the base and
// reproduces the tree; ignored files stay out.
func TestDiffKinds(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, true)
	writeFile(t, filepath.Join(repo, "logo.bin"), "\x00\x01\x02binary\x00")
	writeFile(t, filepath.Join(repo, "gone.bin"), "\x00gone\x00")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "--quiet", "-m", "binaries")
	m := NewManager(t.TempDir(), nil)
	tree, err := m.Prepare(ctx, repo, "main", "ticketd/1-kinds")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(tree.Dir, "stats.py"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(tree.Dir, "logo.bin"), "\x00\x01\x02changed\x00\xff")
	writeFile(t, filepath.Join(tree.Dir, "new.bin"), "\x00new\x00")
	if err := os.Remove(filepath.Join(tree.Dir, "gone.bin")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("stats.py", filepath.Join(tree.Dir, "link.py")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(tree.Dir, "build", "out.log"), "ignored\n")
	diff, err := tree.Diff(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"old mode 100644\nnew mode 100755", "GIT binary patch", "diff --git a/new.bin b/new.bin", "deleted file mode 100644", "new file mode 120000"} {
		if !strings.Contains(diff, want) {
			t.Errorf("Diff lacks %q:\n%s", want, diff)
		}
	}
	if strings.Contains(diff, "out.log") {
		t.Errorf("Diff includes an ignored file:\n%s", diff)
	}
	check := filepath.Join(t.TempDir(), "check")
	git(t, repo, "worktree", "add", "--quiet", "--detach", check, tree.BaseCommit)
	cmd := exec.Command("git", "apply", "--index", "-")
	cmd.Dir, cmd.Stdin, cmd.Env = check, strings.NewReader(diff), userGitEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply of Diff output: %v\n%s", err, out)
	}
	if got := git(t, check, "write-tree"); got != treeOf(t, tree) {
		t.Errorf("applying Diff to the base gives tree %s, the worktree holds %s", got, treeOf(t, tree))
	}
}

// treeOf is the tree object the worktree's files would be committed as.
func treeOf(t *testing.T, tree *Tree) string {
	t.Helper()
	idx := filepath.Join(t.TempDir(), "index")
	cmd := exec.Command("git", "add", "-A")
	cmd.Dir, cmd.Env = tree.Dir, append(userGitEnv(), "GIT_INDEX_FILE="+idx)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git add: %v\n%s", err, out)
	}
	cmd = exec.Command("git", "write-tree")
	cmd.Dir, cmd.Env = tree.Dir, append(userGitEnv(), "GIT_INDEX_FILE="+idx)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// TestDiffSeesSameSizeEditAfterDiff: the scratch index persists across
// Diffs; an edit keeping the size, made in the second a Diff wrote that
// index, must show in the next Diff taken a second later.
func TestDiffSeesSameSizeEditAfterDiff(t *testing.T) {
	repo := newRepo(t, false)
	m := NewManager(t.TempDir(), nil)
	ctx := context.Background()
	for i := range 10 {
		tree, err := m.Prepare(ctx, repo, "main", fmt.Sprintf("ticketd/%d-again", i))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(tree.Dir, "stats.py"), "def mean(xs):\n    return sum(xs) - len(xs)\n")
		start := time.Now()
		if d, err := tree.Diff(ctx); err != nil || !strings.Contains(d, "sum(xs) - len(xs)") {
			t.Fatalf("first Diff = %v\n%s", err, d)
		}
		writeFile(t, filepath.Join(tree.Dir, "stats.py"), "def mean(xs):\n    return sum(xs) + len(xs)\n")
		if time.Now().Unix() != start.Unix() {
			continue // crossed a second boundary: not the case under test, try again
		}
		waitNextSecond(t, start)
		diff, err := tree.Diff(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(diff, "+    return sum(xs) + len(xs)") {
			t.Fatalf("round %d: second Diff misses a same-size edit made in the first Diff's second:\n%s", i, diff)
		}
		return
	}
	t.Fatal("could not make the edit within the first Diff's second in 10 tries")
}

// TestFileAtBaseBounded: a committed blob can be gigabytes that compress to kilobytes (a
// zip bomb in AGENTS.md or pyproject.toml); FileAtBase reads the daemon's copy of it whole,
// so one larger than MaxFileAtBase is refused by its size, never read. Files up to the
// bound, a missing path and a folder read as before.
func TestFileAtBaseBounded(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, true)
	big := strings.Repeat("# AGENTS\n", MaxFileAtBase/9+1)
	writeFile(t, filepath.Join(repo, "AGENTS.md"), big)
	writeFile(t, filepath.Join(repo, "edge.txt"), strings.Repeat("x", MaxFileAtBase))
	writeFile(t, filepath.Join(repo, "pkg", "m.py"), "m = 1\n")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "a large file")
	m := NewManager(t.TempDir(), nil)
	tree, err := m.Prepare(ctx, repo, "main", "ticketd/1-big")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path      string
		wantSize  int
		wantFound bool
		wantErr   error
	}{
		{"AGENTS.md", 0, false, ErrTooLargeAtBase},
		{"edge.txt", MaxFileAtBase, true, nil},
		{"pkg/m.py", 6, true, nil},
		{"pkg", 0, false, ErrNotRegularAtBase},
		{"missing.md", 0, false, nil},
	}
	for _, tt := range tests {
		data, found, err := tree.FileAtBase(ctx, tt.path)
		if len(data) != tt.wantSize || found != tt.wantFound || !errors.Is(err, tt.wantErr) {
			t.Errorf("FileAtBase(%q) = %d bytes, %v, %v; want %d bytes, %v, %v", tt.path, len(data), found, err, tt.wantSize, tt.wantFound, tt.wantErr)
		}
	}
}
