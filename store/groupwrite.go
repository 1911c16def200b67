package store

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/ticketd/ticketd/store/storedriver"
)

// Group commit of attempt endings on engines that commit each write alone (PostgreSQL):
// endings that arrive while one is committing are committed together in the next
// transaction, one WAL flush for all of them. Each caller still returns only once its own
// transition is durable; an ending that fails in a shared transaction makes the group rerun
// one ending per transaction, so no ending rides on another's failure. Without a
// background goroutine: the first caller leads, and hands the lead to the oldest waiting
// one when its own ending is done.

// WriteGrouper is implemented by an engine whose Write already commits concurrent writes
// together (SQLite's): the store then groups nothing itself.
type WriteGrouper interface{ GroupsWrites() bool }

// maxGroup bounds how many endings share one transaction.
const maxGroup = 64

// writeGroup is the endings waiting for the next group's transaction.
type writeGroup struct {
	mu      sync.Mutex
	waiting []*groupReq
	leading bool
}

type groupReq struct {
	fn   func(ctx context.Context, tx storedriver.Tx) error
	done chan groupAnswer // buffered: the leader never blocks on it
}

type groupAnswer struct {
	err  error
	lead bool
}

// errSplitGroup rolls a group's transaction back when one of its writes failed.
var errSplitGroup = errors.New("a write of the group failed")

// groupedWrite is s.write for fn, committed together with the concurrent callers'.
func (s *Store) groupedWrite(ctx context.Context, op string, fn func(ctx context.Context, tx storedriver.Tx) error) error {
	if g, ok := s.eng.(WriteGrouper); ok && g.GroupsWrites() {
		return s.write(ctx, op, fn)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	r := &groupReq{fn: fn, done: make(chan groupAnswer, 1)}
	g := &s.group
	g.mu.Lock()
	g.waiting = append(g.waiting, r)
	lead := !g.leading
	g.leading = true
	g.mu.Unlock()
	for {
		if lead {
			s.runGroup(context.WithoutCancel(ctx), op)
		}
		a := <-r.done
		if !a.lead {
			return a.err
		}
		lead = true
	}
}

// runGroup commits the writes waiting now, answers each, and passes the lead to the oldest
// write that arrived meanwhile (or ends the leading when none did).
func (s *Store) runGroup(ctx context.Context, op string) {
	g := &s.group
	g.mu.Lock()
	n := min(len(g.waiting), maxGroup)
	batch := append([]*groupReq(nil), g.waiting[:n]...)
	g.waiting = g.waiting[n:]
	g.mu.Unlock()
	results := make([]error, len(batch))
	if len(batch) > 1 {
		err := s.write(ctx, fmt.Sprintf("%s (with %d other endings)", op, len(batch)-1), func(ctx context.Context, tx storedriver.Tx) error {
			for i, r := range batch {
				if results[i] = r.fn(ctx, tx); results[i] != nil {
					return errSplitGroup
				}
			}
			return nil
		})
		switch {
		case errors.Is(err, errSplitGroup):
			for i, r := range batch {
				results[i] = s.write(ctx, op, r.fn)
			}
		case err != nil:
			for i := range results {
				results[i] = err
			}
		}
	} else {
		results[0] = s.write(ctx, op, batch[0].fn)
	}
	for i, r := range batch {
		r.done <- groupAnswer{err: results[i]}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.waiting) == 0 {
		g.leading = false
		return
	}
	g.waiting[0].done <- groupAnswer{lead: true}
}
