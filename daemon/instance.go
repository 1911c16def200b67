package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ticketd/ticketd/daemon/config"
)

// ErrAnotherInstance means another ticketd process holds the workspace or the database: two
// daemons on one workspace would remove each other's live worktrees as leftovers.
var ErrAnotherInstance = errors.New("another ticketd is running on the same workspace or database")

// instanceLockName is the lock file in the workspace; the SQLite database's lock is its path
// with ".lock" appended.
const instanceLockName = "ticketd.lock"

// LockInstance takes the single-instance locks of ticketd once and run: one on the workspace
// (every node has its own), and one beside a SQLite database, each an exclusive flock on a
// file that holds the holder's pid (LockDatabase adds one on the database file itself). A
// PostgreSQL store has no database lock: several nodes share it by design, and the store
// coordinates them. The locks go when the process ends, however it ends. It fails with
// ErrAnotherInstance naming the other's pid; release drops them.
func LockInstance(cfg config.Config) (release func(), err error) {
	if err := os.MkdirAll(cfg.Workspace, 0o755); err != nil {
		return nil, fmt.Errorf("create workspace %s: %w", cfg.Workspace, err)
	}
	locks := []struct{ path, what string }{{filepath.Join(cfg.Workspace, instanceLockName), "workspace " + cfg.Workspace}}
	if !cfg.Store.Shared() {
		if err := os.MkdirAll(filepath.Dir(cfg.Store.Path), 0o755); err != nil {
			return nil, fmt.Errorf("create folder for store.path %s: %w", cfg.Store.Path, err)
		}
		locks = append(locks, struct{ path, what string }{cfg.Store.Path + ".lock", "database " + cfg.Store.Path})
	}
	var held []func()
	release = func() {
		for _, r := range held {
			r()
		}
	}
	for _, l := range locks {
		r, err := lockFile(l.path)
		if errors.Is(err, errLocked) {
			release()
			return nil, fmt.Errorf("%w: the %s is in use by ticketd pid %s (lock %s); stop that process first, or give this one its own workspace and store.path",
				ErrAnotherInstance, l.what, holderPID(l.path), l.path)
		}
		if err != nil {
			release()
			return nil, fmt.Errorf("lock the %s: %w", l.what, err)
		}
		held = append(held, r)
	}
	return release, nil
}

// errLocked is lockFile's answer when another process holds the lock.
var errLocked = errors.New("locked by another process")

// holderPID reads the pid a lock's holder wrote, "unknown" when unreadable.
func holderPID(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "unknown"
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && pid > 0 {
		return strconv.Itoa(pid)
	}
	return "unknown"
}

// LockDatabase takes the lock on a SQLite database file itself, once the store has opened
// (and so made) it: the lock is on the file's identity (device and inode), so a second
// ticketd reaching the same database through a symbolic or a hard link, which the lock
// beside the path cannot see, is refused too. A PostgreSQL store takes none. Call release
// after the store is closed: closing the lock's descriptor drops the process's other locks
// on the file, SQLite's among them.
func LockDatabase(cfg config.Config) (release func(), err error) {
	if cfg.Store.Shared() {
		return func() {}, nil
	}
	r, pid, err := lockDatabaseFile(cfg.Store.Path)
	if errors.Is(err, errLocked) {
		return nil, fmt.Errorf("%w: the database %s (this very file, however it is reached: a link, another path) is in use by ticketd pid %s; stop that process first, or give this one its own store.path",
			ErrAnotherInstance, cfg.Store.Path, pid)
	}
	if err != nil {
		return nil, fmt.Errorf("lock the database %s: %w", cfg.Store.Path, err)
	}
	return r, nil
}
