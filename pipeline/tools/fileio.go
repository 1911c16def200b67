package tools

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"syscall"
)

// kindOf names a file type the tools refuse, for the error message.
func kindOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m.IsRegular():
		return "a regular file"
	}
	return "not a regular file"
}

// openRegular opens an existing regular file for reading. The type is checked on the Lstat
// result before opening, so a FIFO, socket or device is never opened; the open itself is
// non-blocking and refuses any symlink on the way (openInRoot) as a second net, and the opened file is
// checked again with fstat in case it was swapped in between.
func (w *Workspace) openRegular(t target) (*os.File, fs.FileInfo, error) {
	if !t.exists() {
		return nil, nil, fmt.Errorf("%s: %w", t.given, fs.ErrNotExist)
	}
	if !t.info.Mode().IsRegular() {
		return nil, nil, notRegular(t.given, t.info.Mode())
	}
	f, err := openInRoot(w.root, t.rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", t.given, err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("stat %s: %w", t.given, err)
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, nil, notRegular(t.given, info.Mode())
	}
	return f, info, nil
}

func notRegular(p string, m fs.FileMode) error {
	hint := "the tools only read and write regular files"
	if m.IsDir() {
		hint = "use list_files to see what it holds"
	}
	return fmt.Errorf("%s is %s, not a regular file: %s", p, kindOf(m), hint)
}

// readWhole reads a regular file of at most limit bytes, counting what it reads.
func (w *Workspace) readWhole(t target, limit int64, verb string) ([]byte, fs.FileInfo, error) {
	f, info, err := w.openRegular(t)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if info.Size() > limit {
		return nil, info, fmt.Errorf("%s is %s; %s handles files up to %s", t.given, humanBytes(info.Size()), verb, humanBytes(limit))
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	w.bytesRead.Add(int64(len(data)))
	if err != nil {
		return nil, info, fmt.Errorf("read %s: %w", t.given, err)
	}
	if int64(len(data)) > limit {
		return nil, info, fmt.Errorf("%s grew past %s while being read; try again", t.given, humanBytes(limit))
	}
	return data, info, nil
}

// writeAtomic replaces (or creates) the file at t with data: a temporary file in the same
// directory, then a rename. The rename replaces the directory entry, so a hard link from the
// worktree to a file elsewhere is never written through, and a reader never sees half a file.
func (w *Workspace) writeAtomic(t target, data []byte, perm fs.FileMode) error {
	root, err := os.OpenRoot(w.root)
	if err != nil {
		return fmt.Errorf("open worktree %s: %w", w.root, err)
	}
	defer root.Close()
	dir := path.Dir(t.rel)
	if dir != "." {
		// 0777 less the umask, as git makes folders (group-writable in a worktree made
		// ready for the checks: sandbox.ReadyForChecks).
		if err := root.MkdirAll(dir, 0o777); err != nil {
			return fmt.Errorf("create directory %s: %w", dir, err)
		}
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := path.Join(dir, "."+path.Base(t.rel)+".ticketd-"+hex.EncodeToString(rnd[:]))
	f, err := openInRoot(w.root, tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, perm)
	if err != nil {
		return fmt.Errorf("write %s: %w", t.given, err)
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = root.Remove(tmp)
		return fmt.Errorf("write %s: %w", t.given, err)
	}
	if err := root.Chmod(tmp, perm); err != nil { // the umask may have cut the mode
		_ = root.Remove(tmp)
		return fmt.Errorf("write %s: %w", t.given, err)
	}
	if err := root.Rename(tmp, t.rel); err != nil {
		_ = root.Remove(tmp)
		return fmt.Errorf("write %s: %w", t.given, err)
	}
	w.markWritten(t.rel, data, perm)
	return nil
}

func hashOf(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
