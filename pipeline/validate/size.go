package validate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ticketd/ticketd/pipeline/sandbox"
)

// watchSize measures what the check stores (u.measure) until ctx ends and returns why the
// check must stop as soon as it passes limit; "" when ctx ended first.
func watchSize(ctx context.Context, poll time.Duration, limit int64, u usage) string {
	return watchEvery(ctx, poll, limit, u.measure)
}

// sizeVerdict is why a look of the size watch stops the check ("" when it does not): a tree
// it cannot watch (deep, from measure), or total past limit.
func sizeVerdict(total int64, deep string, limit int64) string {
	if deep != "" {
		return deep + ": the check was stopped and the attempt is abandoned"
	}
	if total > limit {
		return fmt.Sprintf("the worktree grew past its size limit during the check (more than %s with the check's /tmp, $HOME, /dev/shm, reports and deleted files it kept open, limit %s): the check was stopped and the attempt is abandoned; raise max_worktree_size in the config if the repository's checks legitimately need more",
			formatBytes(total), formatBytes(limit))
	}
	return ""
}

// Pacing of the size watch's looks: the first at once, the next minSizePoll later, and from
// there twice the wait each time while nothing grows, up to the poll (a second): a check
// that writes from its first millisecond is seen within tens of them, not after a whole
// poll, and an idle one costs a few more looks in its first second only. While the usage
// grows the wait is half the time left at that pace before the limit (never under
// minSizePoll), so a fast writer is stopped near the limit, not a poll's worth past it. A
// look never waits less than sizeCostFactor times the last look took (a large tree's
// walk), so the watch takes at most a fifth of a core, and never more than the poll.
const (
	minSizePoll    = 50 * time.Millisecond
	sizeCostFactor = 4
)

// watchEvery is watchSize with its measure apart, paced as the constants above say.
func watchEvery(ctx context.Context, poll time.Duration, limit int64, measure func(context.Context, int64) (int64, string)) string {
	wait := min(minSizePoll, poll)
	var last int64
	var lastAt time.Time
	for n := 0; ; n++ {
		start := time.Now()
		total, deep := measure(ctx, limit)
		if ctx.Err() != nil {
			return ""
		}
		cost := time.Since(start)
		if why := sizeVerdict(total, deep, limit); why != "" {
			return why
		}
		switch {
		case n == 0:
		case total > last:
			// At this pace the limit is eta away: look again halfway there.
			elapsed := max(start.Sub(lastAt), time.Millisecond)
			half := float64(limit-total) / float64(total-last) * float64(elapsed) / 2
			wait = poll
			if half < float64(poll) {
				wait = time.Duration(half)
			}
		default:
			wait = min(wait*2, poll)
		}
		wait = max(wait, min(minSizePoll, poll), min(sizeCostFactor*cost, poll))
		last, lastAt = total, start
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ""
		case <-t.C:
		}
	}
}

// usage is what one running check can store, measured so that it cannot hide: the disk
// blocks of the host directories it writes (the worktree and its reports folder; a directory
// it made unreadable is made readable first, and counts as over the limit when it stays
// unreadable), the used size of the private /tmp and /dev/shm file systems of its sandbox,
// and the blocks of files on those host disks that it deleted but still holds open.
type usage struct {
	dirs []string // host directories the check writes
	pid  int      // the check's process (bwrap under the sandbox)
}

// measure returns the total in bytes, stopping early once it passes budget, and what makes a
// tree of u.dirs unwatchable, if anything: folders nested deeper than maxTreeDepth, or a path
// longer than maxPathBytes.
func (u usage) measure(ctx context.Context, budget int64) (int64, string) {
	seen := map[fileID]bool{}
	devs := map[uint64]bool{}
	var total int64
	for _, d := range u.dirs {
		var st syscall.Stat_t
		if syscall.Stat(d, &st) == nil {
			devs[uint64(st.Dev)] = true
		}
		n, deep := treeBlocks(ctx, d, budget-total, seen)
		if deep != "" {
			return total, deep
		}
		total += n
		if total > budget {
			return total, ""
		}
	}
	if u.pid <= 0 {
		return total, ""
	}
	pids := sandbox.Descendants(u.pid)
	total += privateFS(pids)
	return total + deletedOpen(pids, devs, seen), ""
}

// minEntryBytes is the least a file, folder or link counts for, a block as most file
// systems store one: an empty file takes no block at all, so without it a check could make
// millions of them within the limit, using up the host file system's inodes (the daemon's
// database and git then cannot create a file) or, in its tmpfs /tmp, kernel memory.
const minEntryBytes = 4096

// fileID names a file across hard links.
type fileID struct{ dev, ino uint64 }

// maxTreeDepth is how deep folders may nest in what a check writes before the tree counts as
// over the limit: no project nests a hundred deep, and a check that makes a chain of
// thousands (milliseconds of mkdir) must not make each look of the watch take minutes, during
// which it could write anything unseen.
const maxTreeDepth = 256

// maxPathBytes is how long a path (on the host, from /) of what a check writes may be: git
// cannot look at a path longer than PATH_MAX (4096 bytes), so a tree of folders with long
// names a few levels deep is invisible to its status, and what the check stored there would
// outlive the check, undone by nothing, for the next check and the next ticket to read.
// No project's paths come near.
const maxPathBytes = 4000

// treeBlocks adds up the disk blocks of everything under dir (each inode once), stopping
// early once it passes budget. A directory it cannot read is made readable (the check, running
// as the daemon's user, may have made it 0300 to hide what it holds) and read again; if that
// fails too, the tree counts as over the budget. A tree nested deeper than maxTreeDepth, or
// holding a path longer than maxPathBytes, is reported as such (deep) instead.
// Each folder is opened from its parent's descriptor (os.Root.OpenRoot), so a walk costs the
// same at any depth, and a directory swapped for a symlink while it is walked cannot send the
// walk, or its chmod, outside dir.
func treeBlocks(ctx context.Context, dir string, budget int64, seen map[fileID]bool) (total int64, deep string) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return 0, "" // gone, or not made yet
	}
	defer root.Close()
	var walk func(r *os.Root, depth, plen int) bool
	walk = func(r *os.Root, depth, plen int) bool {
		if ctx.Err() != nil || total > budget {
			return false
		}
		if depth > maxTreeDepth {
			deep = fmt.Sprintf("the check nested folders more than %d deep in %s (no project's files nest so deep, and the size limit cannot be watched in such a tree)", maxTreeDepth, dir)
			return false
		}
		f, err := r.Open(".")
		if errors.Is(err, fs.ErrPermission) {
			if r.Chmod(".", 0o700) == nil {
				f, err = r.Open(".")
			}
		}
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return true // removed meanwhile
			}
			total = budget + 1
			return false
		}
		names, err := f.Readdirnames(-1)
		f.Close()
		if err != nil {
			total = budget + 1
			return false
		}
		for _, name := range names {
			if plen+1+len(name) > maxPathBytes {
				deep = fmt.Sprintf("the check made a path of more than %d bytes in %s (git cannot see a path longer than 4096 bytes, so what the check stored there would outlive it; no project's paths are so long)", maxPathBytes, dir)
				return false
			}
			fi, err := r.Lstat(name)
			if err != nil {
				continue
			}
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				id := fileID{uint64(st.Dev), st.Ino}
				if !seen[id] {
					seen[id] = true
					total += max(st.Blocks*512, minEntryBytes)
				}
			}
			if !fi.IsDir() {
				continue
			}
			sub, err := r.OpenRoot(name)
			if errors.Is(err, fs.ErrPermission) && r.Chmod(name, 0o700) == nil {
				sub, err = r.OpenRoot(name)
			}
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed meanwhile
			}
			if err != nil {
				total = budget + 1
				return false
			}
			ok := walk(sub, depth+1, plen+1+len(name))
			sub.Close()
			if !ok {
				return false
			}
		}
		return true
	}
	walk(root, 0, len(dir))
	return total, deep
}

// privateFS is the used size of the sandbox's private /tmp and /dev/shm, read through the
// root of one of its processes (/proc/<pid>/root). A process that still sees the host's /tmp
// (bwrap itself, or its child before the mounts are made) is skipped.
func privateFS(pids []int) int64 {
	var hostTmp, hostShm syscall.Stat_t
	syscall.Stat("/tmp", &hostTmp)
	syscall.Stat("/dev/shm", &hostShm)
	for _, pid := range pids {
		base := "/proc/" + strconv.Itoa(pid) + "/root"
		var total int64
		found := false
		for _, m := range []struct {
			path string
			host uint64
		}{{"/tmp", uint64(hostTmp.Dev)}, {"/dev/shm", uint64(hostShm.Dev)}} {
			if used, ok := privateTmpfsUsed(base+m.path, m.host); ok {
				found = true
				total += used
			}
		}
		if found {
			return total
		}
	}
	return 0
}

// tmpfsMagic is statfs's f_type of a tmpfs (linux/magic.h TMPFS_MAGIC).
const tmpfsMagic = 0x01021994

// privateTmpfsUsed is the used size of the file system at path when it is a private tmpfs:
// a tmpfs, and not the host's own (hostDev) at that path. The sandbox's /tmp and /dev/shm are
// nothing else, so no other file system is counted. Stat and statfs read one descriptor:
// looked up by path twice, a process still building its sandbox (bwrap moves its root and
// mounts meanwhile) once showed its staging tmpfs to the stat and the host's disk to the
// statfs, and the check was stopped for the 21 GiB that disk held.
func privateTmpfsUsed(path string, hostDev uint64) (int64, bool) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	var sfs unix.Statfs_t
	if unix.Fstat(fd, &st) != nil || unix.Fstatfs(fd, &sfs) != nil {
		return 0, false
	}
	return tmpfsUsed(uint64(st.Dev), hostDev, sfs)
}

// tmpfsUsed is privateTmpfsUsed's verdict on what one descriptor's stat and statfs said: the
// blocks in use, or the inodes in use at minEntryBytes each when that is more.
func tmpfsUsed(dev, hostDev uint64, sfs unix.Statfs_t) (int64, bool) {
	if dev == hostDev || uint64(sfs.Type) != tmpfsMagic {
		return 0, false
	}
	return max(int64(sfs.Blocks-sfs.Bfree)*sfs.Bsize, int64(sfs.Files-sfs.Ffree)*minEntryBytes), true
}

// deletedOpen adds the blocks of files on the devices devs that one of pids holds open
// although they were deleted, and of its memfds: invisible to any walk, they fill the disk
// (or, as tmpfs pages that are in no process's RSS, the memory) all the same.
func deletedOpen(pids []int, devs map[uint64]bool, seen map[fileID]bool) int64 {
	var total int64
	for _, pid := range pids {
		fdDir := "/proc/" + strconv.Itoa(pid) + "/fd"
		entries, err := os.ReadDir(fdDir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			p := fdDir + "/" + e.Name()
			target, err := os.Readlink(p)
			if err != nil || !strings.HasSuffix(target, " (deleted)") {
				continue
			}
			// A memfd lives in the kernel's own tmpfs, in no folder: counted wherever it is.
			memfd := strings.HasPrefix(target, "/memfd:")
			var st syscall.Stat_t
			if syscall.Stat(p, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG || !devs[uint64(st.Dev)] && !memfd {
				continue
			}
			id := fileID{uint64(st.Dev), st.Ino}
			if !seen[id] {
				seen[id] = true
				total += st.Blocks * 512
			}
		}
	}
	return total
}

// formatBytes writes n in binary units, e.g. "1.0 GiB".
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
