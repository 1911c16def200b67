//go:build unix

package diskfault

import "golang.org/x/sys/unix"

// fullBelow is the free space under which a file system counts as full: 1 MiB, or 1% of
// its size when that is less.
const fullBelow = 1 << 20

// Full says whether the file system holding dir has (almost) no room left for an
// unprivileged writer; false when that cannot be told. It confirms what a program's text
// says ("No space left on device" in a check's output), which anyone can print.
func Full(dir string) bool {
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil || fs.Blocks == 0 {
		return false
	}
	bsize := uint64(fs.Bsize)
	free, total := uint64(fs.Bavail)*bsize, uint64(fs.Blocks)*bsize
	return free < min(fullBelow, total/100)
}
