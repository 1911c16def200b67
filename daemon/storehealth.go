package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/ticketd/ticketd/store"
)

// storeHealth tracks whether the ticket database takes writes. A write that fails (disk full,
// read-only file system, I/O error) marks it down: claims stop, every worker keeps its
// ticket's last known state (its final write is retried, not dropped), and the reason goes
// to the log at once and to each affected ticket's events once the database takes writes
// again. Safe for concurrent use.
type storeHealth struct {
	st  *store.Store
	now func() time.Time
	// lease is how far a held lease is extended once the database takes writes again.
	lease time.Duration
	// calls are the night's model calls, flushed once it takes writes again; nil: none.
	calls *callRecorder
	// stop ends when work in flight must stop (shutdown, the grace period): a write the
	// database did not take is retried until then. nil: never.
	stop context.Context
	// waiting, when set (tests), hears each wait on the database (see wait).
	waiting func()

	mu      sync.Mutex
	down    bool
	since   time.Time
	reason  string
	pending map[int64]string // ticket → note to add once writable again
	// past are the night's past outages, in words, for its outcome.
	past []string
	// held are the leases this pool's workers hold now (ticket → token), extended first
	// when the database takes writes again, before anyone may claim.
	held map[int64]int64
}

func (h *storeHealth) hold(l store.Lease) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held == nil {
		h.held = map[int64]int64{}
	}
	h.held[l.Ticket.ID] = l.Token
}

func (h *storeHealth) unhold(id int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.held, id)
}

// heldLeases returns the leases held now.
func (h *storeHealth) heldLeases() map[int64]int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.held)
}

// isStoreFault says whether err from a store write means the database did not take it, as
// opposed to the write being refused (a lost lease, a ticket that moved on) or cancelled.
func isStoreFault(err error) bool { return store.IsWriteFault(err) }

// writeFailed records a failed write of op (for ticket id, 0 for none) and says whether it
// took the store down (the first failure, logged as an error).
func (h *storeHealth) writeFailed(log *slog.Logger, op string, id int64, err error) {
	h.mu.Lock()
	first := !h.down
	if first {
		h.down, h.since, h.reason = true, h.now(), fmt.Sprintf("%s: %v", op, err)
	}
	if id != 0 {
		if h.pending == nil {
			h.pending = map[int64]string{}
		}
		if _, ok := h.pending[id]; !ok {
			h.pending[id] = fmt.Sprintf("the ticket database did not take a write at %s (%s: %v); this ticket kept its last recorded state meanwhile, and its worker retried",
				h.now().UTC().Format(time.RFC3339), op, err)
		}
	}
	h.mu.Unlock()
	if first {
		log.Error("ticket database write failed: no new claims until it takes writes again (disk full or read-only?)",
			"op", op, "ticket", id, "err", err, "db", h.st.Path())
	}
}

// writeOK records that a write went through; the first after a failure extends every lease
// this pool holds (one that expired while the database was down is still this worker's if
// nobody claimed it, and must not be taken over now by a claim), then logs the recovery,
// lets claims resume and adds the pending notes to their tickets' events.
func (h *storeHealth) writeOK(ctx context.Context, log *slog.Logger) {
	h.mu.Lock()
	down := h.down
	h.mu.Unlock()
	if !down {
		return
	}
	bg := context.WithoutCancel(ctx)
	for id, token := range h.heldLeases() {
		if _, err := h.st.Heartbeat(bg, id, token, h.lease); isStoreFault(err) {
			h.writeFailed(log, "heartbeat", id, err)
			return // still down: the next write that lands tries again
		}
	}
	h.mu.Lock()
	if !h.down {
		h.mu.Unlock()
		return
	}
	h.down = false
	since, reason := h.since, h.reason
	notes := h.pending
	h.pending = nil
	h.past = append(h.past, fmt.Sprintf("the ticket database took no writes for %s from %s (first failure: %s)",
		h.now().Sub(since).Round(time.Second), since.UTC().Format(time.RFC3339), reason))
	h.mu.Unlock()
	log.Info("ticket database takes writes again: claims resume", "down_for_s", seconds(h.now().Sub(since)), "first_failure", reason)
	if h.calls != nil {
		h.calls.flush(bg, log)
	}
	for _, id := range slices.Sorted(maps.Keys(notes)) {
		if err := h.st.AddNote(context.WithoutCancel(ctx), id, "ticketd", notes[id]); err != nil {
			log.Warn("note the failed database write on ticket", "ticket", id, "err", err)
			h.writeFailed(log, "add note", id, err)
		}
	}
}

// wait announces that a worker waits on the database (declines to claim, or pauses before
// writing again) to whoever listens (Daemon.onStoreWait).
func (h *storeHealth) wait() {
	if h.waiting != nil {
		h.waiting()
	}
}

func (h *storeHealth) isDown() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.down
}

// persist runs a ticket's write; one the database did not take is retried with a growing
// pause (up to 5 s) until it lands, the lease is lost, or h.stop ends (shutdown, the grace
// period): then the ticket is left as last recorded, and its lease expiring gives it back
// without spending an attempt.
func (h *storeHealth) persist(log *slog.Logger, op string, id int64, write func(context.Context) error) error {
	workCtx := h.stop
	if workCtx == nil {
		workCtx = context.Background()
	}
	bg := context.WithoutCancel(workCtx)
	pause := 100 * time.Millisecond
	for {
		err := write(bg)
		if !isStoreFault(err) {
			if err == nil {
				h.writeOK(bg, log)
			}
			return err
		}
		h.writeFailed(log, op, id, err)
		h.wait()
		if !sleep(workCtx, pause) {
			log.Error("ticket database still not taking writes at shutdown: the ticket keeps its last recorded state until its lease expires",
				"op", op, "err", err)
			return err
		}
		pause = min(2*pause, 5*time.Second)
	}
}

// outages says when the database took no writes tonight: each outage that ended, and one
// still going on.
func (h *storeHealth) outages() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := append([]string(nil), h.past...)
	if h.down {
		out = append(out, fmt.Sprintf("the ticket database took no writes from %s to the night's end (first failure: %s)",
			h.since.UTC().Format(time.RFC3339), h.reason))
	}
	return out
}
