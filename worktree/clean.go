package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Clean removes every untracked file and folder of the working copy, ignored and empty ones
// included, except the paths in keep (the files the maker's tools wrote); it returns
// what it removed, sorted. Between two checks this is what makes each start from exactly the
// maker's tree: a cache, build output or a planted module (pytest.pyc in an ignored folder)
// that one check left can never be loaded by the next. It reads the working copy with git
// ls-files, which follows no symlink, and removes through an os.Root of the tree, so no path
// leads outside it. A nested repository a check made is removed whole.
func (t *Tree) Clean(ctx context.Context, keep []string) ([]string, error) {
	if err := reopenTop(t.Dir); err != nil {
		return nil, fmt.Errorf("clean worktree %s: %w", t.Dir, err)
	}
	root, err := os.OpenRoot(t.Dir)
	if err != nil {
		return nil, fmt.Errorf("clean worktree %s: %w", t.Dir, err)
	}
	defer root.Close()
	var errs []error
	if os.Geteuid() != 0 {
		errs = append(errs, reopenDirs(ctx, root))
	}
	// Empty folders too: one a check made, or emptied by Undo, is still a namespace package
	// Python imports (an "import foo" a test expects to fail succeeds).
	out, err := t.dirs().git(ctx, nil, "ls-files", "-z", "--others", "--directory")
	if err != nil {
		return nil, fmt.Errorf("list what the checks left in worktree %s: %w", t.Dir, err)
	}
	var removed []string
	for _, entry := range strings.Split(out, "\x00") {
		if entry == "" {
			continue
		}
		p := strings.TrimSuffix(entry, "/")
		if strings.HasSuffix(entry, "/") && coversKept(p, keep) {
			// A folder that holds a kept file: go through it file by file.
			got, err := cleanDir(root, p, keep)
			removed = append(removed, got...)
			if err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if slices.Contains(keep, p) {
			continue
		}
		if err := root.RemoveAll(filepath.FromSlash(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove %s: %w", p, err))
			continue
		}
		removed = append(removed, p)
	}
	slices.Sort(removed)
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("clean worktree %s: %w", t.Dir, err)
	}
	return removed, nil
}

// reopenTop gives the owner back read, write and search on the worktree's own folder dir
// when a check closed it (chmod 000): a check run as the daemon's user owns it, and nothing
// inside (git status, a removal, reopenDirs) can be reached until it is open again. A
// symlink (never made by ticketd) is left alone.
func reopenTop(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o700 == 0o700 {
		return nil
	}
	if err := os.Chmod(dir, fi.Mode().Perm()|0o700|fi.Mode()&(fs.ModeSetgid|fs.ModeSticky)); err != nil {
		return fmt.Errorf("reopen the worktree's folder a check closed: %w", err)
	}
	return nil
}

// reopenDirs gives the owner back read, write and search on every folder of the working
// copy (its .git aside) that a check closed (chmod 000, 0300). git lists nothing in a folder
// it cannot read, so what a check hid there survived Clean, and the next check, run as the
// same user, could open it again and load it. Symlinks are not followed. Only a daemon that
// is not root needs it: root's git and removals see into every folder.
func reopenDirs(ctx context.Context, root *os.Root) error {
	var errs []error
	_ = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil || !d.IsDir():
			return nil
		case p == ".git":
			return fs.SkipDir
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if perm := info.Mode().Perm(); perm&0o700 != 0o700 {
			if err := root.Chmod(filepath.FromSlash(p), perm|0o700); err != nil {
				errs = append(errs, fmt.Errorf("reopen folder %s a check closed: %w", p, err))
				return fs.SkipDir
			}
		}
		return nil
	})
	return errors.Join(errs...)
}

// coversKept reports whether folder dir holds one of keep.
func coversKept(dir string, keep []string) bool {
	return slices.ContainsFunc(keep, func(k string) bool { return strings.HasPrefix(k, dir+"/") })
}

// cleanDir removes what folder dir (untracked) holds besides keep, depth first, and the
// folders it empties. Symlinks are removed as entries, never followed.
func cleanDir(root *os.Root, dir string, keep []string) ([]string, error) {
	f, err := root.Open(filepath.FromSlash(dir))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	entries, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		p := path.Join(dir, e.Name())
		switch {
		case slices.Contains(keep, p):
			continue
		case e.IsDir() && coversKept(p, keep):
			got, err := cleanDir(root, p, keep)
			removed = append(removed, got...)
			if err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if err := root.RemoveAll(filepath.FromSlash(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove %s: %w", p, err))
			continue
		}
		removed = append(removed, p)
	}
	return removed, errors.Join(errs...)
}

// BranchChanges lists the paths branch changes since it left base (their merge base), as
// git diff --name-only base...branch prints them, in the repository at dir. What a push is
// about to publish is read from git's objects, never from a working copy.
func BranchChanges(ctx context.Context, dir, base, branch string) ([]string, error) {
	if strings.HasPrefix(base, "-") || strings.HasPrefix(branch, "-") {
		return nil, fmt.Errorf("list the changes of %q since %q: a name may not start with a dash", branch, base)
	}
	repo, err := openRepo(ctx, dir)
	if err != nil {
		return nil, err
	}
	out, err := repo.git(ctx, nil, "diff", "--name-only", "-z", "--no-renames", "--no-ext-diff", "--no-textconv", base+"..."+branch, "--")
	if err != nil {
		return nil, fmt.Errorf("list the changes of %s since %s in %s: %w", branch, base, dir, err)
	}
	var paths []string
	for _, p := range strings.Split(out, "\x00") {
		if p != "" {
			paths = append(paths, p)
		}
	}
	return paths, nil
}
