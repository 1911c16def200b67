package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrDatabaseGone means the database this store opened is no longer the one at its location:
// the SQLite file was deleted or replaced (another file, another database copied over it),
// or the PostgreSQL database lost its schema or holds another ticketd database. Writes may
// still "succeed" into the old file, read by nobody: a night that sees this stops.
var ErrDatabaseGone = errors.New("the ticket database this process opened is gone")

// fileChecker is implemented by engines whose database is a file that can be deleted or
// replaced under them (SQLite): CheckFile says how it changed since it was opened.
type fileChecker interface{ CheckFile() error }

// tableMisser is implemented by engines that can tell "this table does not exist" from any
// other failure of a read (a server that is down is not a database that is gone).
type tableMisser interface{ MissingTable(err error) bool }

// Identity is the database's identity, made when its schema was created (or copied with it
// by CopyTo): another database at the same location has another one.
func (s *Store) Identity(ctx context.Context) (string, error) {
	var id string
	if err := s.rd.QueryRow(ctx, s.q.Identity).Scan(&id); err != nil {
		return "", fmt.Errorf("identity of %s: %w", s.Path(), err)
	}
	return id, nil
}

// Verify says whether the database at the store's location is still the one it opened: the
// same file (device and inode) for SQLite, and the same identity for both engines. It
// returns an error wrapping ErrDatabaseGone when not; another error when it could not tell
// (a server down). Once gone, the store stays gone (WriteHealth).
func (s *Store) Verify(ctx context.Context) error {
	if s.gone.Load() != nil {
		return s.gone.Load().err
	}
	if fc, ok := s.eng.(fileChecker); ok {
		if err := fc.CheckFile(); err != nil {
			return s.setGone(err)
		}
	}
	id, err := s.Identity(ctx)
	if err != nil {
		if tm, ok := s.eng.(tableMisser); ok && tm.MissingTable(err) {
			return s.setGone(fmt.Errorf("it has no ticketd schema any more (%v)", err))
		}
		return err
	}
	if s.identity != "" && id != s.identity {
		return s.setGone(fmt.Errorf("it holds another ticketd database now (identity %s, opened as %s)", short8(id), short8(s.identity)))
	}
	return nil
}

func short8(s string) string {
	if len(s) > 8 {
		return s[:8]
	}
	return s
}

type goneErr struct{ err error }

func (s *Store) setGone(why error) error {
	err := fmt.Errorf("%w: %s: %w", ErrDatabaseGone, s.Path(), why)
	s.gone.CompareAndSwap(nil, &goneErr{err})
	return s.gone.Load().err
}

// writeHealth is what the store's own writes say of the database.
type writeHealth struct {
	mu      sync.Mutex
	down    bool
	since   time.Time
	lastErr string
}

// WriteHealth says whether the database takes this process's writes: down since the first
// of a run of failed writes (disk full, read-only, I/O error, a server that is down) until
// one goes through, or for good once Verify found the database gone. A write refused for a
// reason of the queue (a lost lease, a ticket in another state) is not a failure.
func (s *Store) WriteHealth() (up bool, since time.Time, lastErr string) {
	if g := s.gone.Load(); g != nil {
		return false, time.Time{}, g.err.Error()
	}
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	return !s.health.down, s.health.since, s.health.lastErr
}

// noteWrite records how a write ended.
func (s *Store) noteWrite(err error) {
	fault := IsWriteFault(err)
	if err != nil && !fault {
		return
	}
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	switch {
	case !fault:
		s.health.down, s.health.lastErr = false, ""
	case !s.health.down:
		s.health.down, s.health.since, s.health.lastErr = true, s.now(), err.Error()
	default:
		s.health.lastErr = err.Error()
	}
}

// IsWriteFault says whether err from a store write means the database did not take it
// (disk full, read-only, I/O error, a server down, busy through every retry, gone), as
// opposed to a write the queue refused (a lost lease, a ticket that moved on, a missing
// run) or one the caller cancelled.
func IsWriteFault(err error) bool {
	return err != nil && !errors.Is(err, ErrLeaseLost) && !errors.Is(err, ErrNotFound) &&
		!errors.Is(err, ErrInvalidTransition) && !errors.Is(err, ErrNoTicket) && !errors.Is(err, ErrRunNotFound) &&
		!errors.Is(err, ErrConfirmDone) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}
