package worktree

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCheckoutForms: a change's bytes become what a checkout of its commit writes under the
// repository's rules (line endings, encodings, ident), and a change those rules leave alone
// is not listed. The checks then run on what the branch will hold.
func TestCheckoutForms(t *testing.T) {
	repo := newRepo(t, false)
	writeFile(t, filepath.Join(repo, ".gitattributes"), "*.txt text\n*.bat text eol=crlf\n*.bin -text\n*.id ident\n")
	git(t, repo, "add", "-A")
	git(t, repo, "-c", "user.name=Setup", "-c", "user.email=setup@example.com", "commit", "--quiet", "-m", "rules")
	ctx := context.Background()
	tree, err := NewManager(filepath.Join(t.TempDir(), "trees"), nil).Prepare(ctx, repo, "main", "ticketd/1-forms")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path, data string
		want       string // "" when the checkout gives the data back as it is
	}{
		{"data.txt", "hello\r\nworld\r\n", "hello\nworld\n"},
		{"run.bat", "@echo off\nexit /b 0\n", "@echo off\r\nexit /b 0\r\n"},
		{"blob.bin", "raw\r\nbytes\r\n", ""},
		{"stats.py", "def mean(xs):\r\n    return 0\r\n", ""}, // no rule: stored as written
		{"stats.py", "def mean(xs):\n    return 0\n", ""},
		{"version.id", "$Id$\n", "$Id: 055c8729cdcc372500a08db659c045e16c4409fb $\n"}, // the blob's id
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			writeFile(t, filepath.Join(tree.Dir, tt.path), tt.data)
			forms, err := tree.CheckoutForms(ctx, []Change{{Path: tt.path, Data: []byte(tt.data)}})
			if err != nil {
				t.Fatal(err)
			}
			got, listed := forms[tt.path]
			if listed != (tt.want != "") || string(got) != tt.want {
				t.Errorf("CheckoutForms(%s, %q) = %q (listed %v), want %q", tt.path, tt.data, got, listed, tt.want)
			}
		})
	}
	// Another version in place (a view of the base's): left as it is.
	writeFile(t, filepath.Join(tree.Dir, "data.txt"), "the base's\n")
	if forms, err := tree.CheckoutForms(ctx, []Change{{Path: "data.txt", Data: []byte("x\r\n")}}); err != nil || len(forms) > 0 {
		t.Errorf("a change the working copy does not hold: forms %q (%v), want none", forms, err)
	}
	if _, err := tree.CheckoutForms(ctx, []Change{{Path: "../outside.txt", Data: []byte("x\n")}}); err == nil {
		t.Error("a path outside the tree was accepted")
	}
}

// TestCheckoutFormsKept: asked again with the same files and the same rules, CheckoutForms
// answers as git did without running it (a gate asks before each of its runs of checks);
// a change of any input of the rules — a .gitattributes the maker writes in a folder on the
// path, the repository's config, info/attributes — or of the bytes asks git again, and the
// answer follows.
func TestCheckoutFormsKept(t *testing.T) {
	repo := newRepo(t, false)
	ctx := context.Background()
	tree, err := NewManager(filepath.Join(t.TempDir(), "trees"), nil).Prepare(ctx, repo, "main", "ticketd/1-kept")
	if err != nil {
		t.Fatal(err)
	}
	runs := gitCounter(t)
	in := func(p string) string { return filepath.Join(tree.Dir, filepath.FromSlash(p)) }
	const crlf = "a\r\nb\r\n"
	steps := []struct {
		name     string
		change   func(t *testing.T) // what happens before the ask
		path     string
		data     string
		want     string // "" when the checkout gives the data back as it is
		wantRuns int    // git processes the ask costs
	}{
		{"first ask", nil, "pkg/data.txt", crlf, "", 2},
		{"same again: kept", nil, "pkg/data.txt", crlf, "", 0},
		{"a .gitattributes in a folder on the path", func(t *testing.T) {
			writeFile(t, in("pkg/.gitattributes"), "*.txt text\n")
		}, "pkg/data.txt", crlf, "a\nb\n", 2},
		{"same again: kept", nil, "pkg/data.txt", crlf, "a\nb\n", 0},
		{"the rule removed", func(t *testing.T) {
			if err := os.Remove(in("pkg/.gitattributes")); err != nil {
				t.Fatal(err)
			}
		}, "pkg/data.txt", crlf, "", 0}, // the inputs of the first ask again
		{"other bytes", nil, "pkg/data.txt", "c\r\n", "", 2},
		{"the repository's config", func(t *testing.T) {
			git(t, repo, "config", "core.autocrlf", "input")
		}, "pkg/data.txt", "c\r\n", "c\n", 2},
		{"same again: kept", nil, "pkg/data.txt", "c\r\n", "c\n", 0},
		{"info/attributes", func(t *testing.T) {
			git(t, repo, "config", "--unset", "core.autocrlf")
			writeFile(t, filepath.Join(repo, ".git", "info", "attributes"), "*.txt -text\n")
		}, "pkg/data.txt", "c\r\n", "", 2},
		{"an include in the config: never kept", func(t *testing.T) {
			git(t, repo, "config", "include.path", "/nonexistent/ticketd-test")
		}, "pkg/data.txt", "c\r\n", "", 4}, // and the filter drivers are listed (filterOverrides)
		{"still asked each time", nil, "pkg/data.txt", "c\r\n", "", 4},
	}
	for _, st := range steps {
		if st.change != nil {
			st.change(t)
		}
		writeFile(t, in(st.path), st.data)
		before := runs()
		forms, err := tree.CheckoutForms(ctx, []Change{{Path: st.path, Data: []byte(st.data)}})
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		got, listed := forms[st.path]
		if listed != (st.want != "") || string(got) != st.want {
			t.Errorf("%s: CheckoutForms = %q (listed %v), want %q", st.name, got, listed, st.want)
		}
		if n := runs() - before; n != st.wantRuns {
			t.Errorf("%s: %d git processes, want %d", st.name, n, st.wantRuns)
		}
	}
}

// TestBuiltChangesKept: the patch of the same changes is built once per tree (a submit's, then
// the result's), and a commit of them reuses the tree that patch built: same patch, same
// commit tree, fewer git processes. A .gitattributes written on the path, other bytes or
// another mode build again, and the patch follows them.
func TestBuiltChangesKept(t *testing.T) {
	repo := newRepo(t, false)
	ctx := context.Background()
	tree, err := NewManager(filepath.Join(t.TempDir(), "trees"), nil).Prepare(ctx, repo, "main", "ticketd/1-built")
	if err != nil {
		t.Fatal(err)
	}
	runs := gitCounter(t)
	fix := []Change{{Path: "stats.py", Data: []byte("def mean(xs):\n    return sum(xs) / len(xs) if xs else 0.0\n")}, {Path: "notes/data.txt", Data: []byte("a\r\nb\r\n")}}
	diff := func(name string, changes []Change, wantRuns int) string {
		t.Helper()
		before := runs()
		patch, err := tree.DiffChanges(ctx, changes)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if n := runs() - before; (wantRuns == 0) != (n == 0) {
			t.Errorf("%s: %d git processes, want %s", name, n, map[bool]string{true: "none", false: "some"}[wantRuns == 0])
		}
		return patch
	}
	first := diff("first patch", fix, 1)
	if !strings.Contains(first, "+b\r\n") {
		t.Fatalf("first patch keeps no CRLF in data.txt:\n%s", first)
	}
	if again := diff("same changes again", fix, 0); again != first {
		t.Errorf("kept patch differs:\n%s\nwant\n%s", again, first)
	}
	// The commit builds on HEAD, the base: the tree the patch built.
	before := runs()
	commit, err := tree.CommitChanges(ctx, "fix mean", fix)
	if err != nil {
		t.Fatal(err)
	}
	if n := runs() - before; n != 4 { // rev-parse HEAD, rev-parse its tree, commit-tree, update-ref
		t.Errorf("commit of the changes the patch built: %d git processes, want 4", n)
	}
	if got := git(t, repo, "diff", "--binary", tree.BaseCommit, commit); strings.TrimSpace(got) != strings.TrimSpace(first) {
		t.Errorf("the commit's changes:\n%s\nwant the patch's:\n%s", got, first)
	}
	writeFile(t, filepath.Join(tree.Dir, "notes", ".gitattributes"), "*.txt text\n")
	ruled := diff("a .gitattributes on the path", fix, 1)
	if strings.Contains(ruled, "\r") || !strings.Contains(ruled, "+b\n") {
		t.Errorf("patch after the rule keeps CRLF:\n%s", ruled)
	}
	exec := slices.Clone(fix)
	exec[0].Executable = true
	if p := diff("another mode", exec, 1); !strings.Contains(p, "new mode 100755") && !strings.Contains(p, "100755") {
		t.Errorf("patch of an executable stats.py names no mode 100755:\n%s", p)
	}
	other := slices.Clone(fix)
	other[0].Data = []byte("x = 2\n")
	if p := diff("other bytes", other, 1); !strings.Contains(p, "+x = 2") {
		t.Errorf("patch of other bytes:\n%s", p)
	}
}
