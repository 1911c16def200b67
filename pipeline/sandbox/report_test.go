package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadReport: a FIFO, a symlink to /dev/zero, a directory and an oversized file at a
// report's path are refused at once (the FIFO without a writer would block open(2) forever,
// /dev/zero would fill the daemon's memory); a regular file is read.
func TestReadReport(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.xml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.xml")
	os.Symlink("/dev/zero", zero)
	big := filepath.Join(dir, "big.xml")
	os.WriteFile(big, []byte(strings.Repeat("x", 2000)), 0o644)
	ok := filepath.Join(dir, "ok.xml")
	os.WriteFile(ok, []byte("<testsuites/>"), 0o644)
	os.Mkdir(filepath.Join(dir, "dir.xml"), 0o755)
	tests := []struct {
		path string
		want error
	}{
		{fifo, ErrReportNotFile}, {zero, ErrReportNotFile}, {filepath.Join(dir, "dir.xml"), ErrReportNotFile},
		{"/dev/zero", ErrReportNotFile}, {big, ErrReportTooLarge}, {filepath.Join(dir, "absent"), fs.ErrNotExist}, {ok, nil},
	}
	for _, tt := range tests {
		done := make(chan struct{})
		var data []byte
		var err error
		go func() { data, err = ReadReport(tt.path, 1000); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Minute): // a hang is the failure under test, not a timing assertion
			t.Fatalf("ReadReport(%s) blocked", tt.path)
		}
		if !errors.Is(err, tt.want) || tt.want == nil && string(data) != "<testsuites/>" {
			t.Errorf("ReadReport(%s) = %q, %v; want %v", filepath.Base(tt.path), data, err, tt.want)
		}
	}
}
