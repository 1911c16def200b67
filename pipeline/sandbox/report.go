package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// ErrReportNotFile is returned by ReadReport for anything but a regular file at the report's
// path: a FIFO (whose open would block the daemon until a writer came), a symlink (to
// /dev/zero, which would fill its memory), a device, a directory.
var ErrReportNotFile = errors.New("the check's report was not a file")

// ErrReportTooLarge is returned by ReadReport for a report over its cap.
var ErrReportTooLarge = errors.New("the check's report is larger than ticketd reads")

// ReadReport reads a file a check wrote (pytest's JUnit XML, any output file) without
// trusting it: opened with O_NOFOLLOW|O_NONBLOCK, so neither a symlink nor a FIFO can make the
// open follow or wait, accepted only when the opened file is regular, and read up to max
// bytes. A missing file is fs.ErrNotExist, as from os.ReadFile.
func ReadReport(path string, max int64) ([]byte, error) {
	f, err := OpenReport(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read report %s: %w", path, err)
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s: %w (%d bytes, cap %d)", path, ErrReportTooLarge, fi.Size(), max)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("read report %s: %w", path, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: %w (grew past %d bytes while read)", path, ErrReportTooLarge, max)
	}
	return data, nil
}

// OpenReport opens a file a check may have written for reading as ReadReport does: never
// following a symlink in the last element, never waiting on a FIFO, and only when the opened
// file is regular. The caller bounds what it reads.
func OpenReport(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC|syscall.O_NOCTTY, 0)
	if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.ENXIO) {
		return nil, fmt.Errorf("%s: %w (a symlink or a socket)", path, ErrReportNotFile)
	}
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open report %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: %w (%s)", path, ErrReportNotFile, fi.Mode().Type())
	}
	return f, nil
}
