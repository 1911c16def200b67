package storepgxv5

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ticketd/ticketd/store/storedriver"
)

// ptx is a write transaction on one connection. It sends BEGIN together with its first
// statement, in one round trip (a pipelined batch), instead of waiting for BEGIN's answer
// first: a transition costs its statements and its COMMIT, nothing more.
type ptx struct {
	e       *Engine
	conn    *pgx.Conn
	started bool
	// committed: a claim or a last statement committed the transaction with its own
	// (claimAndCommit, ExecLast).
	committed bool
}

var _ storedriver.Tx = (*ptx)(nil)

// first sends BEGIN and sql as one batch and returns the batch with BEGIN's result read;
// the caller reads sql's result and closes it. nil once the transaction has begun.
func (t *ptx) first(ctx context.Context, sql string, args []any) (pgx.BatchResults, error) {
	if t.started {
		return nil, nil
	}
	t.started = true
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(sql, args...)
	br := t.conn.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		br.Close()
		return nil, err
	}
	return br, nil
}

func (t *ptx) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	br, err := t.first(ctx, sql, args)
	if err != nil {
		return 0, err
	}
	if br == nil {
		tag, err := t.conn.Exec(ctx, sql, args...)
		return tag.RowsAffected(), err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag.RowsAffected(), err
}

func (t *ptx) Query(ctx context.Context, sql string, args ...any) (storedriver.Rows, error) {
	br, err := t.first(ctx, sql, args)
	if err != nil {
		return nil, err
	}
	if br == nil {
		return querier{t.conn}.Query(ctx, sql, args...)
	}
	rows, err := br.Query()
	if err != nil {
		br.Close()
		return nil, err
	}
	return &prows{r: rows, after: br.Close}, nil
}

func (t *ptx) QueryRow(ctx context.Context, sql string, args ...any) storedriver.Row {
	br, err := t.first(ctx, sql, args)
	if err != nil {
		return errRow{err}
	}
	if br == nil {
		return prow{t.conn.QueryRow(ctx, sql, args...)}
	}
	return batchRow{r: br.QueryRow(), br: br}
}

// Insert runs an INSERT ... RETURNING id.
func (t *ptx) Insert(ctx context.Context, sql string, args ...any) (int64, error) {
	var id int64
	err := t.QueryRow(ctx, sql, args...).Scan(&id)
	return id, err
}

// Claim is one statement: the pick (FOR UPDATE SKIP LOCKED), the lease and a fresh claim's
// event. Before the lease horizon no lease can have expired, so the pick reads only queued
// tickets; should that find none, the full claim (rescues included) runs, so a lease the
// horizon missed (another node's, taken since the last refresh and shorter than
// refreshEvery) is rescued after the ready queued tickets, never left behind. A queued-only
// claim that opens the transaction of a caller who runs nothing after it (p.Last) commits
// with it: the claim is sent alone, a transaction of its own, in one round trip.
func (t *ptx) Claim(ctx context.Context, p storedriver.ClaimParams) (storedriver.Row, error) {
	e := t.e
	if last := e.lastRefresh.Load(); p.Now-last >= refreshEvery || p.Now < last {
		if err := e.refreshLeaseHorizon(ctx, p.Now); err != nil {
			return nil, err
		}
	}
	// Taken in before the claim runs: the horizon may only come early, never late.
	e.lowerLeaseHorizon(p.Expires)
	paused := 0
	args := []any{p.Now, p.MaxRescues, p.Worker, p.Node, p.Expires, p.Event.Kind, p.Event.From, p.Event.To, p.Event.Reason}
	switch {
	case p.Avoid != "":
		paused = 2
		args = append(args, cmp.Or(p.Paused, "[]"), p.Avoid) // $10 and $11
	case p.Paused != "":
		paused = 1
		args = append(args, p.Paused) // $10, only in the paused shapes
	}
	q := &claimQueries[b2i(p.Unpredicted)][paused]
	full := func() storedriver.Row { return t.QueryRow(ctx, q[1], args...) }
	if p.Now >= e.leaseHorizon.Load() {
		return full(), nil
	}
	return &claimRow{t: t, ctx: ctx, sql: q[0], args: args, commit: p.Last && !t.started, full: full}, nil
}

var _ storedriver.LastExecer = (*ptx)(nil)

// ExecLast runs sql as the transaction's last statement (storedriver.LastExecer): opening
// the transaction, it is sent alone, as an implicit transaction of its own (one statement,
// atomic, committed and durable before the server says it is ready again), in one round
// trip and without BEGIN and COMMIT for the server to run.
func (t *ptx) ExecLast(ctx context.Context, sql string, args ...any) (int64, error) {
	if t.started {
		return t.Exec(ctx, sql, args...)
	}
	tag, err := t.conn.Exec(ctx, sql, args...)
	if err != nil {
		return 0, t.sent(err) // nothing is open: the statement's own transaction ended with it
	}
	t.committed = true // what follows is a transaction of its own
	return tag.RowsAffected(), nil
}

var _ storedriver.BatchClaimer = (*ptx)(nil)

// ClaimBatch leases several queued tickets in one statement (storedriver.BatchClaimer).
func (t *ptx) ClaimBatch(ctx context.Context, p storedriver.ClaimParams, workers []string) (storedriver.Rows, error) {
	t.e.lowerLeaseHorizon(p.Expires) // taken in before the claim runs, as Claim's
	args := []any{p.Now, p.MaxRescues, workers, p.Node, p.Expires, p.Event.Kind, p.Event.From, p.Event.To, p.Event.Reason}
	q := claimBatches[0]
	if p.Paused != "" {
		q, args = claimBatches[1], append(args, p.Paused)
	}
	return t.Query(ctx, q, args...)
}

var _ storedriver.BatchCompleter = (*ptx)(nil)

// CompleteBatch completes several leased tickets in one statement (storedriver.BatchCompleter).
func (t *ptx) CompleteBatch(ctx context.Context, p storedriver.CompleteBatchParams) (map[int64]int64, error) {
	rows, err := t.Query(ctx, completeBatch, p.Args()...)
	if err != nil {
		return nil, err
	}
	done := map[int64]int64{}
	for rows.Next() {
		var id, token int64
		if err := rows.Scan(&id, &token); err != nil {
			rows.Close()
			return nil, err
		}
		done[id] = token
	}
	return done, rows.Close()
}

var _ storedriver.EndClaimer = (*ptx)(nil)

// CompleteAndClaim completes tickets and leases fresh ones in one statement
// (storedriver.EndClaimer). Opening the transaction, it is sent alone, as an implicit
// transaction of its own, in one round trip.
func (t *ptx) CompleteAndClaim(ctx context.Context, c storedriver.CompleteBatchParams, p storedriver.ClaimParams, workers []string, ends []int64) (storedriver.Rows, error) {
	t.e.lowerLeaseHorizon(p.Expires) // taken in before the claim runs, as Claim's
	args := []any{p.Now, p.MaxRescues, workers, p.Node, p.Expires, p.Event.Kind, p.Event.From, p.Event.To, p.Event.Reason}
	q := completeAndClaims[0]
	if p.Paused != "" {
		q, args = completeAndClaims[1], append(args, p.Paused)
	}
	args = append(append(args, c.Args()[1:]...), ends) // the time is p.Now's $1
	if t.started {
		return t.Query(ctx, q, args...)
	}
	rows, err := t.conn.Query(ctx, q, args...)
	if err != nil {
		return nil, t.sent(err) // nothing is open: the statement's own transaction ended with it
	}
	return &ownRows{r: rows, t: t}, nil
}

// ownRows are the rows of a statement that is its own transaction: read to the end without
// an error, it committed, and what follows is a transaction of its own.
type ownRows struct {
	r pgx.Rows
	t *ptx
}

func (r *ownRows) Next() bool             { return r.r.Next() }
func (r *ownRows) Scan(dest ...any) error { return r.r.Scan(dest...) }
func (r *ownRows) Err() error             { return r.r.Err() }
func (r *ownRows) Close() error {
	r.r.Close()
	if err := r.r.Err(); err != nil {
		return r.t.sent(err)
	}
	r.t.committed = true
	return nil
}

// refreshEvery bounds how often (store time, ms) Claim rereads the lease horizon: leases
// taken by other nodes enter it then.
const refreshEvery = 1000

// refreshLeaseHorizon rereads the earliest lease expiry of the running tickets, at store
// time now.
func (e *Engine) refreshLeaseHorizon(ctx context.Context, now int64) error {
	var h int64
	if err := e.pool.QueryRow(ctx, leaseHorizonQuery).Scan(&h); err != nil {
		return fmt.Errorf("lease horizon: %w", err)
	}
	e.leaseHorizon.Store(h)
	e.lastRefresh.Store(now)
	return nil
}

var _ storedriver.LeaseHorizon = (*ptx)(nil)

// LeasesMayHaveExpired rereads the lease horizon (storedriver.LeaseHorizon). The claim
// that follows uses what it read and does not read it again: a claim that is due to
// settle costs the horizon's round trip and its own, where settling would have added
// two (BEGIN with the settle, and COMMIT).
func (t *ptx) LeasesMayHaveExpired(ctx context.Context, now int64) (bool, error) {
	if err := t.e.refreshLeaseHorizon(ctx, now); err != nil {
		return false, err
	}
	return now >= t.e.leaseHorizon.Load(), nil
}

// lowerLeaseHorizon takes in a lease this engine is granting.
func (e *Engine) lowerLeaseHorizon(exp int64) {
	for {
		h := e.leaseHorizon.Load()
		if exp >= h || e.leaseHorizon.CompareAndSwap(h, exp) {
			return
		}
	}
}

// claimRow runs a queued-only claim when scanned (committing with it when commit is set),
// and the full claim when that found no ticket.
type claimRow struct {
	t      *ptx
	ctx    context.Context
	sql    string
	args   []any
	commit bool
	full   func() storedriver.Row
}

func (r *claimRow) Scan(dest ...any) error {
	var err error
	if r.commit {
		err = r.t.claimAndCommit(r.ctx, r.sql, r.args, dest)
	} else {
		err = r.t.QueryRow(r.ctx, r.sql, r.args...).Scan(dest...)
	}
	if errors.Is(err, storedriver.ErrNoRows) {
		return r.full().Scan(dest...)
	}
	return err
}

// claimAndCommit sends the claim alone, as an implicit transaction of its own (see
// ExecLast), and scans its row. Without a row it committed nothing and the next statement
// begins another transaction. With one, the transaction is over: the write commits nothing
// more.
func (t *ptx) claimAndCommit(ctx context.Context, sql string, args []any, dest []any) error {
	serr := prow{t.conn.QueryRow(ctx, sql, args...)}.Scan(dest...)
	if serr != nil && !errors.Is(serr, storedriver.ErrNoRows) {
		return t.sent(serr) // nothing is open: the statement's own transaction ended with it
	}
	if serr == nil {
		t.committed = true // what follows is a transaction of its own
	}
	return serr
}

// sent is the error of a COMMIT, or of a statement that is its own transaction, once it may
// have reached the server: it may have committed, so the write must not be rerun on a new
// connection, unless pgx knows nothing was sent.
func (t *ptx) sent(err error) error {
	if t.conn.IsClosed() && !pgconn.SafeToRetry(err) {
		return &commitUnknown{err}
	}
	return err
}

// commitUnknown is a write whose connection went away after its COMMIT may have been sent.
type commitUnknown struct{ err error }

func (c *commitUnknown) Error() string {
	return "commit may or may not have happened: " + c.err.Error()
}
func (c *commitUnknown) Unwrap() error { return c.err }

// batchRow is the first statement's row: scanning it also closes the batch.
type batchRow struct {
	r  pgx.Row
	br pgx.BatchResults
}

func (r batchRow) Scan(dest ...any) error {
	err := prow{r.r}.Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
