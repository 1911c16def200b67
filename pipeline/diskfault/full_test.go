//go:build unix

package diskfault

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// fullDisk mounts a small tmpfs and fills it; it skips where a tmpfs cannot be mounted.
func fullDisk(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size=2m"); err != nil {
		t.Skipf("cannot mount a tmpfs (needs root or CAP_SYS_ADMIN), so a full disk cannot be tested here: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for chunk := make([]byte, 64<<10); ; {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v, want ENOSPC", dir, err)
			}
			if len(chunk) == 1 {
				return dir
			}
			chunk = chunk[:len(chunk)/2]
		}
	}
}

func TestFull(t *testing.T) {
	if Full(t.TempDir()) {
		t.Errorf("Full(a fresh temporary folder) = true; want false (the test machine's disk is not full)")
	}
	if Full(filepath.Join(t.TempDir(), "missing")) {
		t.Errorf("Full(a missing folder) = true; want false (cannot tell)")
	}
	if dir := fullDisk(t); !Full(dir) {
		t.Errorf("Full(a filled tmpfs) = false; want true")
	}
}
