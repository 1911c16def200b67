package storesqlite

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// fileLock is one named lock: a mutex for this process's callers, and an flock on a file
// beside the database for the other processes on the same file.
type fileLock struct{ mu chan struct{} }

var lockName = regexp.MustCompile(`^[a-z0-9_-]+$`)

// Lock takes the named lock shared by every process on this database file: an exclusive
// flock on <database>.<name>.lock, which the kernel releases when the process dies.
func (e *Engine) Lock(ctx context.Context, name string) (func(), error) {
	if !lockName.MatchString(name) {
		return nil, fmt.Errorf("lock %q: want lowercase letters, digits, - and _", name)
	}
	v, _ := e.locks.LoadOrStore(name, &fileLock{mu: make(chan struct{}, 1)})
	l := v.(*fileLock)
	select {
	case l.mu <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("lock %s: %w", name, ctx.Err())
	}
	path := e.path + "." + name + ".lock"
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		<-l.mu
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	// flock has no deadline: poll the non-blocking form, so ctx can end the wait.
	pause := time.Millisecond
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if err != unix.EWOULDBLOCK && err != unix.EINTR {
			f.Close()
			<-l.mu
			return nil, fmt.Errorf("lock %s (%s): %w", name, path, err)
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			<-l.mu
			return nil, fmt.Errorf("lock %s: %w", name, ctx.Err())
		case <-t.C:
		}
		pause = min(2*pause, 100*time.Millisecond)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			unix.Flock(int(f.Fd()), unix.LOCK_UN)
			f.Close()
			<-l.mu
		})
	}, nil
}
