package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

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
// coordinates them. The locks go when the process ends, however it ends, and once what it
// forked has let go of them too (takeLock). It fails with ErrAnotherInstance naming the
// other's pid; release drops them. clk (default the machine's) times the wait for an ended
// holder's forks.
func LockInstance(cfg config.Config, clk ...Clock) (release func(), err error) {
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
		r, holder, err := takeLock(clockOf(clk), func() (func(), string, error) {
			r, err := lockFile(l.path)
			if errors.Is(err, errLocked) {
				return nil, holderPID(l.path), err
			}
			return r, "", err
		})
		if errors.Is(err, errLocked) {
			release()
			if processEnded(holder) {
				return nil, fmt.Errorf("%w: the %s is locked (%s) by a process that ticketd pid %s, which has ended, left behind; find it with `fuser -v %s` and stop it",
					ErrAnotherInstance, l.what, l.path, holder, l.path)
			}
			return nil, fmt.Errorf("%w: the %s is in use by ticketd pid %s (lock %s); stop that process first, or give this one its own workspace and store.path",
				ErrAnotherInstance, l.what, holder, l.path)
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

// holderGoneWait bounds the wait for a lock whose holder has ended, polled every
// holderGonePoll. A process is seen to end (its parent's wait returns) before the processes
// it forked have run their programs or exited: until then each holds a copy of the lock's
// descriptor, and so the flock. Go forks a child of a user namespace (the sandbox's, as
// root) in full and has it wait for its ID maps first, so a SIGKILLed ticketd leaves its
// lock held for milliseconds (tens at load 12, measured), more on a loaded machine, and a
// ticketd started at once after it would be refused as "another ticketd".
const (
	holderGoneWait = 10 * time.Second
	holderGonePoll = 20 * time.Millisecond
)

// takeLock calls take until it takes the lock, fails otherwise, or finds the lock held
// while its holder (a pid, as take names it) is alive; while the holder has ended, it tries
// again for up to holderGoneWait. It returns take's last answer.
func takeLock(clk Clock, take func() (release func(), holder string, err error)) (func(), string, error) {
	deadline := clk.Now().Add(holderGoneWait)
	for {
		release, holder, err := take()
		if !errors.Is(err, errLocked) || !processEnded(holder) || !clk.Now().Before(deadline) {
			return release, holder, err
		}
		<-clk.After(holderGonePoll)
	}
}

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
// on the file, SQLite's among them. Like LockInstance, it waits out an ended holder's forks.
func LockDatabase(cfg config.Config, clk ...Clock) (release func(), err error) {
	if cfg.Store.Shared() {
		return func() {}, nil
	}
	r, pid, err := takeLock(clockOf(clk), func() (func(), string, error) { return lockDatabaseFile(cfg.Store.Path) })
	if errors.Is(err, errLocked) && processEnded(pid) {
		return nil, fmt.Errorf("%w: the database %s is locked by a process that ticketd pid %s, which has ended, left behind; find it with `fuser -v %s` and stop it",
			ErrAnotherInstance, cfg.Store.Path, pid, cfg.Store.Path)
	}
	if errors.Is(err, errLocked) {
		return nil, fmt.Errorf("%w: the database %s (this very file, however it is reached: a link, another path) is in use by ticketd pid %s; stop that process first, or give this one its own store.path",
			ErrAnotherInstance, cfg.Store.Path, pid)
	}
	if err != nil {
		return nil, fmt.Errorf("lock the database %s: %w", cfg.Store.Path, err)
	}
	return r, nil
}
