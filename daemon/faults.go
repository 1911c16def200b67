package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/ticketd/ticketd/pipeline/diskfault"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/worktree"
)

// ErrMachineFault ends an attempt the machine failed, not its ticket: the workspace's or the
// results' storage (a disk full, over quota, read-only, I/O errors), or a ticket database
// that did not take a write the attempt needed. The ticket is released uncharged; a storage
// fault pauses this node for the rest of the night; the night says so (partial, exit 3).
var ErrMachineFault = errors.New("the machine failed the attempt")

// machineFaults are what the machine failed during a night: the reasons, for the night's
// ending, and the storage faults met by each ticket's attempt, for its worker. Safe for
// concurrent use.
type machineFaults struct {
	// stopClaims ends this node's claims after a storage fault (once); nil: never.
	stopClaims context.CancelCauseFunc
	pauseOnce  sync.Once

	mu      sync.Mutex
	reasons []string
	seen    map[string]bool
	tickets map[int64]error
}

// add records a reason once.
func (m *machineFaults) add(reason string) {
	reason = strings.TrimPrefix(reason, ErrMachineFault.Error()+": ")
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen == nil {
		m.seen = map[string]bool{}
	}
	if !m.seen[reason] {
		m.seen[reason] = true
		m.reasons = append(m.reasons, reason)
	}
}

func (m *machineFaults) list() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.reasons...)
}

// noteTicket keeps the first storage fault a ticket's attempt met outside the model's view
// (its results, its commit); take returns and forgets it.
func (m *machineFaults) noteTicket(id int64, err error) {
	if !diskfault.Is(err) {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tickets == nil {
		m.tickets = map[int64]error{}
	}
	if m.tickets[id] == nil {
		m.tickets[id] = err
	}
}

func (m *machineFaults) take(id int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	err := m.tickets[id]
	delete(m.tickets, id)
	return err
}

// machineCause says whether err is the machine's fault, and wraps it in ErrMachineFault
// when it is: a storage fault, a ticket database that did not take a write (or could not be
// read), a git lock file left in the repository, or one already wrapped.
func machineCause(err error) (error, bool) {
	switch {
	case err == nil:
		return nil, false
	case errors.Is(err, ErrMachineFault):
		return err, true
	case diskfault.Is(err):
		return fmt.Errorf("%w: %s: %w", ErrMachineFault, diskfault.Describe(err), err), true
	case errors.Is(err, store.ErrDatabaseGone), errors.Is(err, worktree.ErrLocked):
		return fmt.Errorf("%w: %w", ErrMachineFault, err), true
	}
	return err, false
}

// errDatabaseWrite marks a machine fault that is the ticket database's (SQLite says "database
// or disk is full" for its own disk): the store's health watch already stops claims until the
// database takes writes again, and resumes them, so it pauses nothing for the rest of the
// night, unlike a full workspace, which every attempt would meet again.
var errDatabaseWrite = errors.New("the ticket database did not take a write")

// workspaceFault says whether err is a storage fault that pauses the node: one of the
// workspace or results, not of the ticket database.
func workspaceFault(err error) bool {
	return diskfault.Is(err) && !errors.Is(err, errDatabaseWrite)
}

// diskFaultHook is the pipeline's DiskFault for one attempt: a tool call that met a storage
// fault stops the attempt at once as the machine's fault, before the model reads the error
// as a mistake of its own (and spends its loop on it).
func diskFaultHook(log *slog.Logger, cancel context.CancelCauseFunc) func(error) {
	return func(err error) {
		log.Error("a tool call met a storage fault: the attempt ends as the machine's fault", "err", err)
		cancel(fmt.Errorf("%w: the workspace: %s: %w", ErrMachineFault, diskfault.Describe(err), err))
	}
}

// pauseNode stops this node's claims for the rest of the night after a storage fault: every
// attempt would meet it again. The reason goes to the night's ending.
func (m *machineFaults) pauseNode(log *slog.Logger, reason string) {
	m.add(reason)
	if m.stopClaims == nil {
		return
	}
	m.pauseOnce.Do(func() {
		log.Error("storage fault: this node claims no more tickets tonight", "reason", reason)
		m.stopClaims(fmt.Errorf("%w: %s; this node claimed no more tickets", ErrMachineFault, strings.TrimPrefix(reason, ErrMachineFault.Error()+": ")))
	})
}
