package worktree

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
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
