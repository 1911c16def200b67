package storesqlite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/ticketd/ticketd/store/storedriver"
)

// maxBatch bounds how many writes share one transaction.
const maxBatch = 64

// writeReq is one caller's transaction body waiting to be committed.
type writeReq struct {
	ctx  context.Context
	op   string
	fn   func(ctx context.Context, tx storedriver.Tx) error
	done chan error    // the outcome, once committed or refused
	lead chan struct{} // closed when this caller must take over as leader
}

// Write runs fn in a BEGIN IMMEDIATE transaction on the writer connection and returns its
// outcome once the transaction is durable (per Options.Synchronous).
//
// Writes are group-committed without a background goroutine: the first caller to find no
// leader becomes the leader and runs the requests queued at that moment in one
// transaction, then the next group, until its own request is done; it then hands leadership
// to the oldest waiting caller. One caller alone pays no handoff; several share the WAL
// writes and lock round trips of one commit, which is what lets three workers outrun one.
// A request that fails (other than busy) makes its group rerun one request per
// transaction, so no caller's changes ride on another's failure.
func (e *Engine) Write(ctx context.Context, op string, fn func(ctx context.Context, tx storedriver.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	req := &writeReq{ctx: ctx, op: op, fn: fn, done: make(chan error, 1), lead: make(chan struct{})}
	e.qmu.Lock()
	if e.closed {
		e.qmu.Unlock()
		return fmt.Errorf("%s: %w", op, storedriver.ErrClosed)
	}
	e.queue = append(e.queue, req)
	e.inflight.Add(1)
	defer e.inflight.Done()
	if !e.leading {
		e.leading = true
		e.qmu.Unlock()
		return e.leadUntilDone(req)
	}
	e.qmu.Unlock()
	select {
	case err := <-req.done:
		return err
	case <-req.lead:
		return e.leadUntilDone(req)
	case <-ctx.Done():
		e.qmu.Lock()
		for i, r := range e.queue {
			if r == req { // not started: withdraw it
				e.queue = append(e.queue[:i:i], e.queue[i+1:]...)
				e.qmu.Unlock()
				return fmt.Errorf("%s: %w", op, ctx.Err())
			}
		}
		e.qmu.Unlock()
		// Already in a transaction: its outcome is the truth, wait for it (or to lead).
		select {
		case err := <-req.done:
			return err
		case <-req.lead:
			return e.leadUntilDone(req)
		}
	}
}

// leadUntilDone commits queued groups until own is answered, then passes leadership on.
func (e *Engine) leadUntilDone(own *writeReq) error {
	for {
		// Yield once before taking the queue when writes have been overlapping: the callers
		// the previous group just answered are runnable and about to submit their next write,
		// and a group that takes them along saves them a commit each (three workers: 1.45 ->
		// 2.6 writes per commit). A lone writer skips it: the yield wakes an idle thread to
		// find nothing to run, about an eighth of a one-worker queue cycle's CPU.
		if e.overlapping.Load() {
			runtime.Gosched()
		}
		e.qmu.Lock()
		n := min(len(e.queue), maxBatch)
		e.overlapping.Store(n > 1 || len(e.queue) > n)
		batch := append([]*writeReq(nil), e.queue[:n]...)
		e.queue = e.queue[n:]
		e.qmu.Unlock()
		if len(batch) > 0 {
			e.runBatch(batch)
		}
		select {
		case err := <-own.done:
			e.qmu.Lock()
			if len(e.queue) > 0 {
				e.overlapping.Store(true)
				close(e.queue[0].lead)
			} else {
				e.leading = false
			}
			e.qmu.Unlock()
			return err
		default:
		}
	}
}

// runBatch commits batch, retrying it on busy, and answers every request.
func (e *Engine) runBatch(batch []*writeReq) {
	results := make([]error, len(batch))
	op := batch[0].op
	if len(batch) > 1 {
		op = fmt.Sprintf("%s (with %d other writes)", op, len(batch)-1)
	}
	err := e.retry(context.Background(), op, func() error {
		return e.tryBatch(batch, results)
	})
	for i, r := range batch {
		if err != nil {
			r.done <- fmt.Errorf("%s: %w", r.op, err)
			continue
		}
		r.done <- results[i]
	}
}

// tryBatch runs batch in one transaction. A busy error anywhere aborts the transaction and
// is returned for retry. When a request in a shared transaction fails otherwise, its partial
// changes cannot be told apart from the others', so the transaction is rolled back and every
// request reruns in a transaction of its own.
func (e *Engine) tryBatch(batch []*writeReq, results []error) error {
	if len(batch) > 1 {
		err := e.tryTx(batch, results)
		if !errors.Is(err, errSplit) {
			return err
		}
	}
	for i := range batch {
		if err := e.tryTx(batch[i:i+1], results[i:i+1]); err != nil {
			if errors.Is(err, errSplit) {
				continue // the request's own error is in results[i]
			}
			return err
		}
	}
	return nil
}

var errSplit = errors.New("a request in the batch failed")

// tryTx runs reqs in one transaction and commits it unless one fails (errSplit, rolled back).
func (e *Engine) tryTx(reqs []*writeReq, results []error) error {
	bg := context.Background()
	e.wmu.Lock()
	defer e.wmu.Unlock()
	err := e.onWriter(func(tx *wtx) error {
		if err := e.begin(bg, tx); err != nil {
			return err
		}
		for i, r := range reqs {
			if err := r.ctx.Err(); err != nil {
				results[i] = fmt.Errorf("%s: %w", r.op, err)
				continue
			}
			// Statements run without the caller's cancellation: interrupting a write inside a
			// shared transaction would roll back the other callers' work too.
			err := r.fn(context.WithoutCancel(r.ctx), tx)
			results[i] = err
			if err != nil {
				e.rollback(bg, tx)
				if isBusy(err) {
					return err
				}
				return errSplit
			}
		}
		if _, err := e.exec(bg, tx, `COMMIT`); err != nil {
			e.rollback(bg, tx) // a COMMIT that failed (busy) leaves the transaction open
			return fmt.Errorf("commit: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if e.commits++; e.commits%checkpointEvery == 0 {
		e.ckpt.poke()
	}
	if e.commits%walCheckEvery == 0 && e.commits >= e.nextRestart {
		e.boundWAL()
	}
	return nil
}

// walCheckEvery is how many commits pass between boundWAL's looks at the WAL file: a stat
// per 8 commits costs nothing measurable, and 8 commits add a few dozen pages.
const walCheckEvery = 8

// restartRetryEvery is how many commits boundWAL waits after a RESTART that readers
// outlasted.
const restartRetryEvery = 4 * walCheckEvery

// boundWAL restarts the WAL when its file has grown past walRestartBytes; the caller holds
// wmu, so none of the store's own writes can append meanwhile.
//
// Every other checkpoint is PASSIVE and waits for nothing: it copies only the frames older
// than the oldest reader's snapshot, and the log restarts only after one that copied all
// of them. Under sustained writes none does: while readers overlap, one of them always holds
// an older snapshot, and the writer's own auto-checkpoint gives up at once when it finds a
// background pass holding the checkpoint lock. Measured on 14,000 commits of 11 pages, the
// WAL file grew without bound with three readers on a big ticket's events (400 MB, linear)
// and to 49-64 MB with three on a small one or none, against 17 MB with neither. A RESTART
// checkpoint waits (busy_timeout) for the readers of older snapshots to finish (newer ones
// read the database file), after the background pass in progress, so the next write starts
// the log from its beginning and journal_size_limit cuts the file back.
func (e *Engine) boundWAL() {
	st, err := os.Stat(e.path + "-wal")
	if err != nil || st.Size() <= walRestartBytes {
		return
	}
	var busy, logFrames, done int
	e.ckpt.mu.Lock() // a second checkpointer would get SQLITE_BUSY without waiting
	err = e.wc.QueryRowContext(context.Background(), `PRAGMA wal_checkpoint(RESTART)`).Scan(&busy, &logFrames, &done)
	e.ckpt.mu.Unlock()
	if err != nil || busy != 0 {
		// A reader held its snapshot through busy_timeout: stalling every write behind
		// another wait at once would not end it sooner. Try again a few dozen pages on
		// (each failure lets the file grow by that much; measured under -race at a load
		// of 10, a few per 4,500 commits).
		e.nextRestart = e.commits + restartRetryEvery
		return
	}
	e.walRestarts.Add(1)
}

// begin opens the write transaction, first ending one a failed ROLLBACK left open.
func (e *Engine) begin(ctx context.Context, tx *wtx) error {
	if e.inTx {
		if err := e.rollbackOnce(ctx, tx); err != nil {
			return fmt.Errorf("roll back the previous transaction: %w", err)
		}
	}
	if _, err := e.exec(ctx, tx, `BEGIN IMMEDIATE`); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	return nil
}

// rollback ends the open transaction. Should ROLLBACK itself fail, inTx stays set and the
// next begin rolls back before anything else runs, so no write can ride on a dead one.
func (e *Engine) rollback(ctx context.Context, tx *wtx) {
	e.inTx = true
	for range 3 {
		if e.rollbackOnce(ctx, tx) == nil {
			return
		}
	}
}

func (e *Engine) rollbackOnce(ctx context.Context, tx *wtx) error {
	_, err := e.exec(ctx, tx, `ROLLBACK`)
	if err != nil && strings.Contains(err.Error(), "no transaction is active") {
		err = nil // SQLite already rolled it back (it does on some errors)
	}
	if err == nil {
		e.inTx = false
	}
	return err
}
