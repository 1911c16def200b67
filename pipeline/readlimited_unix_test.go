//go:build unix

package pipeline

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestReadLimited: what the worktree holds at a path is read only when it is a regular
// file; a symlink (to a file outside, or to /dev/zero) and a FIFO give nothing, at once.
func TestReadLimited(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret.py")
	if err := os.WriteFile(outside, []byte("KEY = 'x'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.py"), []byte("def f():\n    pass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"out.py": outside, "zero.py": "/dev/zero"} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.py"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "pkg.py"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		file, want string
	}{
		{"a.py", "def f():\n    pass\n"},
		{"out.py", ""},
		{"zero.py", ""},
		{"fifo.py", ""},
		{"pkg.py", ""},
		{"missing.py", ""},
	} {
		if got := string(readLimited(filepath.Join(dir, tt.file), 1<<20)); got != tt.want {
			t.Errorf("readLimited(%s) = %q, want %q", tt.file, got, tt.want)
		}
	}
}
