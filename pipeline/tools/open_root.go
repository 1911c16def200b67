package tools

import (
	"fmt"
	"io/fs"
	"os"
)

// openWithRoot opens rel below root through os.Root, which follows symlinks only while they
// stay inside root.
func openWithRoot(root, rel string, flag int, perm fs.FileMode) (*os.File, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("open worktree %s: %w", root, err)
	}
	defer r.Close()
	return r.OpenFile(rel, flag, perm)
}
