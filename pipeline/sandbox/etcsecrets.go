package sandbox

import (
	"io/fs"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"
)

// etcSecrets is what every sandboxed command hides of /etc (Spec.mounts).
var etcSecrets = &secretsCache{dir: "/etc", now: time.Now}

// secretsCache lists what under dir is not world-readable (a directory: not world-searchable
// too): /etc/shadow and /etc/gshadow, SSH host keys, /etc/ssl/private, sudoers, a
// ticketd.env kept there. Hidden from every check, so a daemon run as root, whose checks the
// kernel still treats as root's for files they can reach, does not hand them over.
//
// Every sandboxed command needs the list, and walking /etc (about 150 directories and 1,200
// entries on a Debian host) was a tenth of the daemon's own CPU in a night: each directory
// opened, read, sorted and allocated for again. The last walk is kept with a stamp of
// everything it saw, and it is reused only while every stamp still holds, checked on every
// call with one lstat per path and no directory read:
//   - a directory's device and inode (a mount over it), mode, link count, modification and change times: a name added,
//     removed or renamed in it changes its mtime, a chmod, chown or ACL change its ctime;
//   - a file's device, inode and mode: a chmod that makes it secret changes its mode, and a file
//     replaced by another is a name change in its directory.
//
// A directory whose mtime or ctime falls within racyWindow of the walk's start is not
// trusted: file systems stamp times from a coarse clock (a tick of milliseconds, a second on
// some), so a name added in the same tick as the walk's look would leave the time as it was.
// Such a walk is used once and the next call walks again, as is a walk that met any error.
type secretsCache struct {
	dir string
	now func() time.Time

	mu    sync.Mutex
	last  *secretsWalk // nil: walk on the next call
	walks int          // how many times dir was walked (tests)
}

// racyWindow is how recent a directory's change may be for a walk that saw it to be reused:
// wider than any file system's timestamp granularity ticketd may meet under /etc.
const racyWindow = 2 * time.Second

// secretsWalk is one walk's result and what it saw.
type secretsWalk struct {
	secrets []string
	stamps  []pathStamp
}

// pathStamp is what a walk's answer for one path depends on.
type pathStamp struct {
	path         string
	dir          bool
	dev, ino     uint64
	nlink        uint64
	mode         uint32
	mtime, ctime syscall.Timespec // directories only
}

// list returns the secret paths under the cache's dir, walking it again unless the last walk
// still holds. The caller must not modify the slice.
func (c *secretsCache) list() []string {
	c.mu.Lock()
	last := c.last
	c.mu.Unlock()
	if last != nil && last.holds() {
		return last.secrets
	}
	w, reusable := c.walk()
	c.mu.Lock()
	c.walks++
	c.last = nil
	if reusable {
		c.last = w
	}
	c.mu.Unlock()
	return w.secrets
}

// holds reports whether every path the walk saw is as it was.
func (w *secretsWalk) holds() bool {
	var st syscall.Stat_t
	for i := range w.stamps {
		s := &w.stamps[i]
		if err := syscall.Lstat(s.path, &st); err != nil {
			return false
		}
		if uint64(st.Dev) != s.dev || st.Ino != s.ino || st.Mode != s.mode {
			return false
		}
		if s.dir && (uint64(st.Nlink) != s.nlink || st.Mtim != s.mtime || st.Ctim != s.ctime) {
			return false
		}
	}
	return true
}

// walk walks c.dir; reusable is false when it met an error or a directory changed too
// recently to trust its times.
func (c *secretsCache) walk() (w *secretsWalk, reusable bool) {
	start := c.now()
	w = &secretsWalk{}
	reusable = true
	racy := func(ts syscall.Timespec) bool {
		return !time.Unix(ts.Unix()).Before(start.Add(-racyWindow))
	}
	filepath.WalkDir(c.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			reusable = false
			if d != nil && d.IsDir() && p != c.dir {
				w.secrets = append(w.secrets, p)
			}
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil // its name is its directory's: a change of it is the directory's mtime
		}
		fi, err := d.Info()
		if err != nil {
			reusable = false
			return nil
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			s := pathStamp{path: p, dir: d.IsDir(), dev: uint64(st.Dev), ino: st.Ino, mode: st.Mode}
			if s.dir {
				s.nlink, s.mtime, s.ctime = uint64(st.Nlink), st.Mtim, st.Ctim
				if racy(st.Mtim) || racy(st.Ctim) {
					reusable = false
				}
			}
			w.stamps = append(w.stamps, s)
		} else {
			reusable = false
		}
		perm := fi.Mode().Perm()
		switch {
		case d.IsDir() && perm&0o005 != 0o005 && p != c.dir:
			w.secrets = append(w.secrets, p)
			return filepath.SkipDir
		case !d.IsDir() && perm&0o004 == 0:
			w.secrets = append(w.secrets, p)
		}
		return nil
	})
	w.secrets = slices.Clip(w.secrets)
	return w, reusable
}
