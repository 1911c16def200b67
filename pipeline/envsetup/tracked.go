package envsetup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// errNotInTree says a tracked path does not lead to an entry of the checkout without
// following a symlink: a folder on its way is a symlink (or no folder at all). A clean
// checkout has none: git keeps a tracked symlink as a file and puts nothing below it. Code
// under test can leave one in a worktree (a folder swapped for a link to /etc or /proc); the
// daemon, root perhaps, must then not read through it and hand what it found to a recipe.
var errNotInTree = errors.New("a folder on its way is a symlink or no folder")

// trackedEntry is one tracked path of a checkout, opened without following any symlink.
type trackedEntry struct {
	mode   fs.FileMode // fs.ModeSymlink, 0 (regular) or another type
	perm   fs.FileMode
	target string   // a symlink's
	file   *os.File // a regular file's, open for reading; the caller closes it
}

// openTracked opens rel (slash-separated) below dir without following a symlink anywhere
// on its way: each folder is opened from its parent's descriptor with O_NOFOLLOW, and the
// entry itself is read as a link or opened O_NOFOLLOW|O_NONBLOCK and kept only if it is a
// regular file (a FIFO is never waited on). A path through a symlinked folder is
// errNotInTree; an absent one fs.ErrNotExist.
func openTracked(dir, rel string) (trackedEntry, error) {
	parts := strings.Split(filepath.ToSlash(filepath.Clean(filepath.FromSlash(rel))), "/")
	for _, p := range parts {
		if p == ".." || p == "." || p == "" {
			return trackedEntry{}, fmt.Errorf("%s: %w", rel, errNotInTree)
		}
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return trackedEntry{}, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	defer func() { unix.Close(fd) }()
	for _, p := range parts[:len(parts)-1] {
		next, err := unix.Openat(fd, p, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		switch {
		case errors.Is(err, unix.ENOENT):
			return trackedEntry{}, &fs.PathError{Op: "open", Path: rel, Err: fs.ErrNotExist}
		case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR):
			return trackedEntry{}, fmt.Errorf("%s: %w", rel, errNotInTree)
		case err != nil:
			return trackedEntry{}, &fs.PathError{Op: "open", Path: rel, Err: err}
		}
		unix.Close(fd)
		fd = next
	}
	name := parts[len(parts)-1]
	var st unix.Stat_t
	if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return trackedEntry{}, &fs.PathError{Op: "lstat", Path: rel, Err: fs.ErrNotExist}
		}
		return trackedEntry{}, &fs.PathError{Op: "lstat", Path: rel, Err: err}
	}
	e := trackedEntry{perm: fs.FileMode(st.Mode & 0o777)}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		e.mode = fs.ModeSymlink
		buf := make([]byte, unix.PathMax)
		n, err := unix.Readlinkat(fd, name, buf)
		if err != nil {
			return trackedEntry{}, &fs.PathError{Op: "readlink", Path: rel, Err: err}
		}
		e.target = string(buf[:n])
		return e, nil
	case unix.S_IFREG:
	default:
		e.mode = fs.ModeIrregular
		return e, nil
	}
	ffd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return trackedEntry{}, &fs.PathError{Op: "open", Path: rel, Err: err}
	}
	if err := unix.Fstat(ffd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(ffd) // swapped since the look above
		e.mode = fs.ModeIrregular
		return e, nil
	}
	if err := unix.SetNonblock(ffd, false); err != nil {
		unix.Close(ffd)
		return trackedEntry{}, &fs.PathError{Op: "open", Path: rel, Err: err}
	}
	e.file = os.NewFile(uintptr(ffd), filepath.Join(dir, filepath.FromSlash(rel)))
	return e, nil
}
