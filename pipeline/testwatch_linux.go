package pipeline

import (
	"io/fs"
	"syscall"
)

// inodeChange is fi's inode and change time.
func inodeChange(fi fs.FileInfo) (uint64, int64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino, st.Ctim.Nano()
	}
	return 0, 0
}
