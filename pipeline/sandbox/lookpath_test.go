package sandbox

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestLookPath finds a program as the sandbox's execvp does: the first executable regular
// file in PATH's absolute folders, skipping relative folders (the host cannot see where
// they point in the sandbox), folders named like the program, files without an execute bit
// and FIFOs, which execvp cannot run either.
func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	mk := func(sub string, mode os.FileMode) string {
		t.Helper()
		d := filepath.Join(dir, sub)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "tool"), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
		return d
	}
	plain := mk("plain", 0o644)
	exe := mk("exe", 0o755)
	folder := filepath.Join(dir, "folder")
	if err := os.MkdirAll(filepath.Join(folder, "tool"), 0o755); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := os.MkdirAll(fifo, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(fifo, "tool"), 0o777); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, want string
	}{
		{"first executable wins", exe + ":" + mk("later", 0o755), filepath.Join(exe, "tool")},
		{"no execute bit skipped", plain + ":" + exe, filepath.Join(exe, "tool")},
		{"folder skipped", folder + ":" + exe, filepath.Join(exe, "tool")},
		{"fifo skipped", fifo + ":" + exe, filepath.Join(exe, "tool")},
		{"relative folder skipped", "exe:" + plain, ""},
		{"empty path", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := LookPath("tool", tc.path); got != tc.want {
				t.Errorf("LookPath(tool, %q) = %q, want %q", tc.path, got, tc.want)
			}
		})
	}
}
