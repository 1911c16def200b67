//go:build linux

package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// openInRoot opens rel, a path resolve already found free of symlinks, below root with
// openat2: no symlink anywhere on the way (RESOLVE_NO_SYMLINKS) and never above root
// (RESOLVE_BENEATH). A symlink found now was swapped in after resolution and is refused.
// Kernels before 5.6 (or sandboxes that filter openat2) fall back to os.Root.
func openInRoot(root, rel string, flag int, perm fs.FileMode) (*os.File, error) {
	dir, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open worktree %s: %w", root, err)
	}
	defer unix.Close(dir)
	how := &unix.OpenHow{
		Flags:   uint64(flag) | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	if flag&os.O_CREATE != 0 {
		how.Mode = uint64(perm.Perm())
	}
	fd, err := unix.Openat2(dir, rel, how)
	switch {
	case errors.Is(err, unix.ENOSYS) || (errors.Is(err, unix.EPERM) && flag&os.O_CREATE == 0):
		return openWithRoot(root, rel, flag, perm)
	case errors.Is(err, unix.ELOOP):
		return nil, fmt.Errorf("%s: a symlink appeared on the way since the path was checked; the tools do not follow it", rel)
	case errors.Is(err, unix.EXDEV):
		return nil, fmt.Errorf("%s: %w", rel, ErrOutside)
	case err != nil:
		return nil, &fs.PathError{Op: "open", Path: rel, Err: err}
	}
	return os.NewFile(uintptr(fd), filepath.Join(root, rel)), nil
}
