//go:build !linux

package tools

import (
	"io/fs"
	"os"
)

// openInRoot opens rel below root; without openat2 the confinement is os.Root's.
func openInRoot(root, rel string, flag int, perm fs.FileMode) (*os.File, error) {
	return openWithRoot(root, rel, flag, perm)
}
