package diskfault

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"
)

func TestDescribe(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"ENOSPC wrapped", fmt.Errorf("write a.py: %w", &fs.PathError{Op: "write", Path: "a.py", Err: syscall.ENOSPC}), "no space left on device"},
		{"EDQUOT", syscall.EDQUOT, "disk quota exceeded"},
		{"EROFS", &fs.PathError{Op: "open", Path: "x", Err: syscall.EROFS}, "read-only file system"},
		{"EIO", syscall.EIO, "input/output error"},
		{"git's words", errors.New("git commit: exit status 128: fatal: unable to write new index file: No space left on device"), "no space left on device"},
		{"git's object write", errors.New("git read-tree 8bf753c: fatal: sha1 file '/r/.git/worktrees/w/index.lock' write error. Out of diskspace"), "no space left on device"},
		{"sqlite full", errors.New("database or disk is full (13)"), "no space left on device"},
		{"not found is the ticket's", &fs.PathError{Op: "open", Path: "x", Err: syscall.ENOENT}, ""},
		{"permission is not the disk", &fs.PathError{Op: "open", Path: "x", Err: syscall.EACCES}, ""},
	}
	for _, tc := range tests {
		if got := Describe(tc.err); got != tc.want {
			t.Errorf("%s: Describe(%v) = %q; want %q", tc.name, tc.err, got, tc.want)
		}
		if Is(tc.err) != (tc.want != "") {
			t.Errorf("%s: Is = %v", tc.name, Is(tc.err))
		}
	}
}
