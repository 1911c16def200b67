package pipeline

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ticketd/ticketd/pipeline/validate"
)

// TestChecksOutOfSpace: a check that failed saying its disk is full is the machine's failure
// only when the worktree's disk is indeed full; the words alone (a test that prints or
// asserts on them) and a check that outgrew the worktree's limit stay the change's.
func TestChecksOutOfSpace(t *testing.T) {
	full := t.TempDir()
	if err := syscall.Mount("tmpfs", full, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs (needs root or CAP_SYS_ADMIN), so a full disk cannot be tested here: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(full, syscall.MNT_DETACH) })
	if err := os.WriteFile(filepath.Join(full, "filler"), make([]byte, 2<<20), 0o644); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("fill %s: %v, want ENOSPC", full, err)
	}
	roomy := t.TempDir()
	enospc := validate.Result{Name: "tests", Summary: "pytest exited 3 without a test report",
		Output: "INTERNALERROR> OSError: [Errno 28] No space left on device"}
	inFinding := validate.Result{Name: "tests", Summary: "1 failed",
		Findings: []validate.Finding{{Test: "tests/test_io.py::test_save", Message: "OSError: [Errno 28] No space left on device"}}}
	aborted := enospc
	aborted.Abort = "the worktree outgrew max_worktree_size"
	passed := enospc
	passed.Passed = true
	for _, tc := range []struct {
		name    string
		results []validate.Result
		dir     string
		want    bool
	}{
		{"output says so, disk full", []validate.Result{enospc}, full, true},
		{"a finding says so, disk full", []validate.Result{inFinding}, full, true},
		{"output says so, disk has room", []validate.Result{enospc}, roomy, false},
		{"the check filled it past the limit", []validate.Result{aborted}, full, false},
		{"passed", []validate.Result{passed}, full, false},
		{"other failure, disk full", []validate.Result{{Name: "tests", Summary: "1 failed", Output: "assert 101 == 100"}}, full, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checksOutOfSpace(tc.results, tc.dir)
			if got := err != nil; got != tc.want || (got && !errors.Is(err, syscall.ENOSPC)) {
				t.Errorf("checksOutOfSpace(%+v, %s) = %v; want machine's fault %v", tc.results, tc.dir, err, tc.want)
			}
		})
	}
}
