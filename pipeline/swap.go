package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
)

// swapToBase runs fn with each of paths as it is at the base commit — its base content, or
// absent when the change added it — and then puts each back as the change left it. Only
// regular files are touched, through an os.Root of the worktree, so no path (a symlink a
// check planted) leads outside it. A failure to put a file back is a *restoreError.
func (t *testTree) swapToBase(ctx context.Context, paths []string, fn func()) error {
	if t.baseFile == nil {
		return errNoBaseReader
	}
	root, err := os.OpenRoot(t.dir)
	if err != nil {
		return fmt.Errorf("open worktree: %w", err)
	}
	defer root.Close()
	type swap struct {
		path            string
		now, base       []byte
		mode            fs.FileMode
		existed, inBase bool
	}
	var swaps []swap
	for _, p := range paths {
		if hasGitElement(p) {
			continue
		}
		s := swap{path: p, mode: 0o644}
		fi, err := root.Lstat(p)
		switch {
		case err == nil && fi.Mode().IsRegular():
			if s.now, err = root.ReadFile(p); err != nil {
				return fmt.Errorf("read %s: %w", p, err)
			}
			s.existed, s.mode = true, fi.Mode().Perm()
		case err == nil:
			return fmt.Errorf("%s is not a regular file (%s); not touched", p, fi.Mode().Type())
		case !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("stat %s: %w", p, err)
		}
		if s.base, s.inBase, err = t.baseFile(ctx, p); err != nil {
			return fmt.Errorf("read %s at the base commit: %w", p, err)
		}
		if s.existed || s.inBase {
			swaps = append(swaps, s)
		}
	}
	put := func(p string, data []byte, mode fs.FileMode, present bool) error {
		if !present {
			if err := root.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			return nil
		}
		if dir := path.Dir(p); dir != "." {
			if err := root.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
		if err := root.WriteFile(p, data, mode); err != nil {
			return err
		}
		return root.Chmod(p, mode) // WriteFile keeps an existing file's mode
	}
	var errs []error
	done := 0
	for _, s := range swaps {
		if err := put(s.path, s.base, s.mode, s.inBase); err != nil {
			errs = append(errs, fmt.Errorf("set %s to the base commit: %w", s.path, err))
			break
		}
		done++
	}
	if len(errs) == 0 {
		fn()
	}
	var restore []error
	for _, s := range swaps[:min(done+1, len(swaps))] {
		if err := put(s.path, s.now, s.mode, s.existed); err != nil {
			restore = append(restore, fmt.Errorf("%s: %w", s.path, err))
		}
	}
	if len(restore) > 0 {
		return &restoreError{errors.Join(restore...)}
	}
	return errors.Join(errs...)
}
