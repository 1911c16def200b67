// Package diskfault tells a machine's storage failing (a disk full, over quota, read-only,
// or returning I/O errors) from everything else that can go wrong with a file: an attempt
// that meets one must end as the machine's fault, never be charged to its ticket nor handed
// to the model as a mistake of its own to work around.
package diskfault

import (
	"errors"
	"strings"
	"syscall"
)

// errnos are the storage failures, with the words an operator reads.
var errnos = []struct {
	errno syscall.Errno
	words string
}{
	{syscall.ENOSPC, "no space left on device"},
	{syscall.EDQUOT, "disk quota exceeded"},
	{syscall.EROFS, "read-only file system"},
	{syscall.EIO, "input/output error"},
}

// Is says whether err is a storage failure: one of the errnos in its chain, or, for what
// came back as text from another program (git's stderr), its words.
func Is(err error) bool { return Describe(err) != "" }

// Describe names the storage failure in err ("no space left on device"), "" when it is none.
func Describe(err error) string {
	if err == nil {
		return ""
	}
	for _, e := range errnos {
		if errors.Is(err, e.errno) {
			return e.words
		}
	}
	msg := strings.ToLower(err.Error())
	for _, e := range errnos {
		if strings.Contains(msg, e.words) {
			return e.words
		}
	}
	// SQLite says it in words of its own, and so does git when an object or index file does
	// not fit ("sha1 file '...index.lock' write error. Out of diskspace").
	if strings.Contains(msg, "database or disk is full") || strings.Contains(msg, "sqlite_full") ||
		strings.Contains(msg, "out of diskspace") {
		return "no space left on device"
	}
	return ""
}
