package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// maxBatch bounds how many writes share one transaction.
const maxBatch = 64

// writeReq is one caller's transaction body waiting for the committer.
type writeReq struct {
	ctx  context.Context
	op   string
	fn   func(ctx context.Context, tx *sql.Tx) error
	done chan error
}

var errClosed = errors.New("store is closed")

// write runs fn in a BEGIN IMMEDIATE transaction on the writer connection and returns its
// error once the transaction is durable (per Options.Synchronous).
//
// Writes are group-committed: one committer goroutine owns the writer connection and runs
// the requests waiting at that moment in one transaction, each inside its own SAVEPOINT,
// so one request's failure rolls back only its own changes. A busy database rolls back
// the whole batch and reruns it (every fn is safe to rerun). With one caller this is a
// plain transaction per write; with several it divides the WAL writes and lock round trips
// among them, which is what lets three workers outrun one.
func (s *Store) write(ctx context.Context, op string, fn func(ctx context.Context, tx *sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	req := &writeReq{ctx: ctx, op: op, fn: fn, done: make(chan error, 1)}
	select {
	case s.reqs <- req:
	case <-s.quit:
		return fmt.Errorf("%s: %w", op, errClosed)
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", op, ctx.Err())
	}
	// Once queued the request runs to its end: waiting for it keeps the caller's view
	// (error or success) true even if its context ends meanwhile.
	return <-req.done
}

// committer serves write requests until quit closes.
func (s *Store) committer() {
	defer close(s.stopped)
	for {
		var first *writeReq
		select {
		case first = <-s.reqs:
		case <-s.quit:
			return
		}
		batch := []*writeReq{first}
	drain:
		for len(batch) < maxBatch {
			select {
			case r := <-s.reqs:
				batch = append(batch, r)
			default:
				break drain
			}
		}
		s.runBatch(batch)
	}
}

// runBatch commits batch, retrying it on busy, and answers every request.
func (s *Store) runBatch(batch []*writeReq) {
	results := make([]error, len(batch))
	op := batch[0].op
	if len(batch) > 1 {
		op = fmt.Sprintf("%s (with %d other writes)", op, len(batch)-1)
	}
	err := s.retry(context.Background(), op, func() error {
		return s.tryBatch(batch, results)
	})
	for i, r := range batch {
		if err != nil {
			r.done <- fmt.Errorf("%s: %w", r.op, err)
			continue
		}
		r.done <- results[i]
	}
	if s.hasPending.Load() {
		s.preparePending(context.Background())
	}
}

// tryBatch runs batch in one transaction. A busy error anywhere aborts the transaction and
// is returned for retry. When a request in a shared transaction fails otherwise, its partial
// changes cannot be told apart from the others', so the transaction is rolled back and every
// request reruns in a transaction of its own.
func (s *Store) tryBatch(batch []*writeReq, results []error) error {
	if len(batch) > 1 {
		err := s.tryTx(batch, results)
		if !errors.Is(err, errSplit) {
			return err
		}
	}
	for i := range batch {
		if err := s.tryTx(batch[i:i+1], results[i:i+1]); err != nil {
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
func (s *Store) tryTx(reqs []*writeReq, results []error) error {
	bg := context.Background()
	tx, err := s.w.BeginTx(bg, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
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
			tx.Rollback()
			if isBusy(err) {
				return err
			}
			return errSplit
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
