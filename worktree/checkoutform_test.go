package worktree

import (
	"context"
	"path/filepath"
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
