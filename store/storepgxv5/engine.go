// Package storepgxv5 is the store's PostgreSQL engine (github.com/jackc/pgx/v5): one
// database several ticketd nodes share. A claim is one statement (FOR UPDATE SKIP LOCKED
// over the open tickets in claim order, then the lease), idle nodes wait on LISTEN/NOTIFY,
// named locks are session advisory locks, and a write is a READ COMMITTED transaction on a
// pooled connection, rerun when PostgreSQL refuses it as a serialization failure or
// deadlock.
package storepgxv5

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ticketd/ticketd/store/storedriver"
)

// Options tunes the engine; the zero value is the production default.
type Options struct {
	storedriver.Options
	// WriteTimeout bounds one write transaction, so a database that stopped answering
	// fails the write (the daemon retries it) instead of holding the worker; default 30s.
	WriteTimeout time.Duration
	// PollEvery is how long the listener waits before reconnecting after losing its
	// connection; default 1s.
	PollEvery time.Duration
	// MigrateTo stops migrations at this version (0: the latest), for tests.
	MigrateTo int
}

// Engine is the store on one PostgreSQL database.
type Engine struct {
	location string
	opts     Options
	pool     *pgxpool.Pool
	// schema is the schema the store's tables are in (current_schema()): notices and locks
	// are per schema, so two deployments in one database never meet.
	schema string

	// lastRefresh is the store clock (unix ms) of the last read of leaseHorizon, the
	// earliest expiry of a lease that may still be running: a claim before it reads only
	// the queued tickets.
	lastRefresh, leaseHorizon atomic.Int64

	// unreachable is set when a write gave up after WriteTimeout of a server that did not
	// answer, and cleared by the next write that commits (see Write).
	unreachable atomic.Pointer[unreachable]

	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
	stop   context.CancelFunc
	notify chan struct{} // buffered(1): Notify's pending notice for the notifier
}

var _ storedriver.Engine = (*Engine)(nil)

// idleInTransaction is the session setting idle_in_transaction_session_timeout (see Open).
const idleInTransaction = "60s"

// Open connects to the database at rawURL (postgres://user@host:port/db?...), migrates its
// schema under an advisory lock (several nodes may start at once) and starts listening for
// notices. The pool holds at most 16 connections unless the URL says pool_max_conns.
func Open(ctx context.Context, rawURL string, opts Options) (*Engine, error) {
	location := redact(rawURL)
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w (want postgres://user:password@host:port/database)", location, err)
	}
	if u, err := url.Parse(rawURL); err == nil && !u.Query().Has("pool_max_conns") {
		cfg.MaxConns = 16
	}
	// A claim must walk tickets_open in claim order and stop at the first free tickets.
	// Where the table's statistics are missing or stale (a fresh schema, a bulk intake
	// before autovacuum has analyzed it) the planner thinks few tickets are open and picks
	// a bitmap scan of every open ticket and a sort instead: each claim then costs the
	// whole queue (a 5,000-ticket drain ran at half the speed of a 2,000-ticket one). The
	// store's statements are lookups by key, walks of an index in its order and reports
	// over small sets, which index and sequential scans serve as well. The URL may still
	// set enable_bitmapscan.
	if _, set := cfg.ConnConfig.RuntimeParams["enable_bitmapscan"]; !set {
		cfg.ConnConfig.RuntimeParams["enable_bitmapscan"] = "off"
	}
	// A node stopped in the middle of a transaction (a paused VM, a SIGSTOP, a machine
	// swapping to death) keeps its row locks for as long as its session lives: the ticket
	// it leased can never be rescued by another node, whose claims skip locked rows, and a
	// write of another node to such a row waits without end. The server ends a session left
	// idle inside a transaction after this long, and its locks go with it. The store's
	// transactions send their statements one after another, milliseconds apart, so a minute
	// is never a live one's. The URL may set another value.
	if _, set := cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"]; !set {
		cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = idleInTransaction
	}
	if opts.Now == nil {
		opts.Now = func() int64 { return time.Now().UnixMilli() }
	}
	opts.BusyRetries = cmp.Or(opts.BusyRetries, 8)
	opts.WriteTimeout = cmp.Or(opts.WriteTimeout, 30*time.Second)
	opts.PollEvery = cmp.Or(opts.PollEvery, time.Second)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", location, err)
	}
	e := &Engine{location: location, opts: opts, pool: pool, notify: make(chan struct{}, 1)}
	if err := e.migrate(ctx, cmp.Or(opts.MigrateTo, SchemaVersion)); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open store %s: %w", location, err)
	}
	if err := pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&e.schema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open store %s: %w", location, err)
	}
	// Listening before Open returns: no notice after it is missed.
	lconn, err := e.listenConn(ctx, cfg.ConnConfig)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("open store %s: listen: %w", location, err)
	}
	lctx, stop := context.WithCancel(context.Background())
	e.stop = stop
	e.wg.Add(2)
	go e.listen(lctx, cfg.ConnConfig, lconn)
	go e.notifier(lctx)
	return e, nil
}

// redact is the URL without its password, for messages.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable PostgreSQL URL)"
	}
	return u.Redacted()
}

// Name is "postgres".
func (e *Engine) Name() string { return "postgres" }

// Location is the URL without its password.
func (e *Engine) Location() string { return e.location }

// SQL is PostgreSQL's statements.
func (e *Engine) SQL() *storedriver.SQL { return &statements }

// Read reads through the pool: PostgreSQL's MVCC never makes a read wait for a writer.
func (e *Engine) Read() storedriver.Reader { return querier{e.pool} }

// Pool is the connection pool, for tests and tools that read the database directly.
func (e *Engine) Pool() *pgxpool.Pool { return e.pool }

// SchemaVersion reads the version recorded in schema_migrations.
func (e *Engine) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	if err := e.pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

// Checkpoint has nothing to do: PostgreSQL checkpoints on its own.
func (e *Engine) Checkpoint(context.Context) error { return nil }

// Close stops the listener and closes the pool, after the writes in flight.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.mu.Unlock()
	e.stop()
	e.wg.Wait()
	e.pool.Close()
	return nil
}

// Write runs fn in a READ COMMITTED transaction, rerun on a serialization failure or a
// deadlock (with a short growing pause) until BusyRetries run out (storedriver.ErrBusy),
// and on a connection lost before COMMIT until WriteTimeout has passed.
//
// A write that waited WriteTimeout for a lost server and gave up marks the database
// unreachable: until a write commits again, each write is tried once (its connection
// bounded by probeTimeout) and fails at once saying since when the database is gone. A
// process whose server died (a night's end writing its last notes and its run) then fails
// each of its writes in turn instead of waiting WriteTimeout for each; a blip (a restart,
// a failover) still gets the whole WriteTimeout from the first write that meets it, and the
// write that ends the outage clears the mark.
func (e *Engine) Write(ctx context.Context, op string, fn func(ctx context.Context, tx storedriver.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return fmt.Errorf("%s: %w", op, storedriver.ErrClosed)
	}
	e.wg.Add(1)
	e.mu.Unlock()
	defer e.wg.Done()
	if gone := e.unreachable.Load(); gone != nil {
		err := e.tryWrite(ctx, fn, true)
		var lost *connLost
		if errors.As(err, &lost) {
			return fmt.Errorf("%s: the database at %s did not take the write: it has not answered since %s (a write waited %s for it and gave up), "+
				"so each write is tried once until one goes through (check that the server runs and this machine reaches it): %w",
				op, e.location, gone.since.UTC().Format(time.RFC3339), e.opts.WriteTimeout, lost.err)
		}
		if err == nil || !retryable(err) {
			e.noteReached(err)
			return err
		}
		// The server answered (refusing this transaction as busy): it is back, and the
		// write goes the usual way.
		e.unreachable.CompareAndSwap(gone, nil)
	}
	pause := 2 * time.Millisecond
	start := time.Now()
	for try := 0; ; try++ {
		err := e.tryWrite(ctx, fn, false)
		if err == nil || !retryable(err) {
			e.noteReached(err)
			return err
		}
		var lost *connLost
		isLost := errors.As(err, &lost)
		// A busy database gets BusyRetries quick reruns; a lost server (a restart, a
		// failover takes seconds) is waited for until WriteTimeout.
		if !isLost && try >= e.opts.BusyRetries || isLost && time.Since(start) > e.opts.WriteTimeout {
			if isLost { // unreachable, not busy: say what the server said
				e.unreachable.CompareAndSwap(nil, &unreachable{since: start})
				return fmt.Errorf("%s: the database at %s did not take the write in %d tries: %w", op, e.location, try+1, lost.err)
			}
			return fmt.Errorf("%s: %w (%d tries; last: %v)", op, storedriver.ErrBusy, try+1, err)
		}
		if e.opts.OnRetry != nil {
			e.opts.OnRetry(op, try+1, err)
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s: %w (while retrying: %v)", op, ctx.Err(), err)
		case <-t.C:
		}
		pause = min(2*pause, 250*time.Millisecond)
	}
}

// unreachable is since when writes have found no server (see Engine.Write).
type unreachable struct{ since time.Time }

// probeTimeout bounds the connection of a write tried once while the database is marked
// unreachable: a server whose machine went away (packets dropped, not refused) must not
// hold each such write for WriteTimeout.
const probeTimeout = 5 * time.Second

// noteReached clears the unreachable mark once a write reached the server: it committed, or
// the server itself refused it (a PostgreSQL error).
func (e *Engine) noteReached(err error) {
	if err == nil || errors.As(err, new(*pgconn.PgError)) {
		e.unreachable.Store(nil)
	}
}

// tryWrite is one transaction. Its statements run without ctx's cancellation, so a caller
// giving up never leaves half a write; WriteTimeout bounds it instead, or ctx's deadline
// when it has one. A probe (the database is marked unreachable) waits at most probeTimeout
// for its connection.
func (e *Engine) tryWrite(ctx context.Context, fn func(ctx context.Context, tx storedriver.Tx) error, probe bool) error {
	timeout := e.opts.WriteTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d) // a caller that set a deadline of its own (a long copy) gets it
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	actx := wctx
	if probe { // the database is marked unreachable: a connection does not get the whole timeout
		var cancelAcquire context.CancelFunc
		actx, cancelAcquire = context.WithTimeout(wctx, min(timeout, probeTimeout))
		defer cancelAcquire()
	}
	conn, err := e.pool.Acquire(actx)
	if err != nil {
		// Nothing ran: a connection the server dropped (restart, failover, idle cut) is
		// discarded by the pool and the next try takes another.
		return &connLost{fmt.Errorf("begin: %w", err)}
	}
	defer conn.Release()
	tx := &ptx{e: e, conn: conn.Conn()}
	if err := fn(wctx, tx); err != nil {
		if tx.started && !tx.conn.IsClosed() {
			if _, rerr := tx.conn.Exec(wctx, "ROLLBACK"); rerr != nil {
				tx.conn.Close(context.Background()) // the pool must not reuse a session in a transaction
			}
		}
		if unknown := (*commitUnknown)(nil); errors.As(err, &unknown) || tx.committed {
			return err // a claim's COMMIT may have happened, or did: never rerun
		}
		if tx.conn.IsClosed() {
			// The connection died before COMMIT was sent: the server rolled the transaction
			// back, so running it again is safe.
			return &connLost{err}
		}
		return err
	}
	if !tx.started {
		return nil // fn ran no statement, or a claim committed with its own
	}
	// A COMMIT whose answer was lost may or may not have happened: never rerun it.
	if _, err := tx.conn.Exec(wctx, "COMMIT"); err != nil {
		tx.conn.Close(context.Background())
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// connLost is a write that failed because its connection went away before it committed.
type connLost struct{ err error }

func (c *connLost) Error() string { return c.err.Error() }
func (c *connLost) Unwrap() error { return c.err }

// MissingTable says whether err is PostgreSQL's undefined_table (42P01): the schema is not
// there, as opposed to a server that cannot be reached.
func (e *Engine) MissingTable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42P01"
}

// retryable reports whether the transaction failed in a way that a rerun can succeed:
// PostgreSQL refused it (serialization_failure, deadlock_detected, lock_not_available), or
// its connection went away before it committed.
func retryable(err error) bool {
	var lost *connLost
	if errors.As(err, &lost) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "40001", "40P01", "55P03":
			return true
		}
	}
	return false
}

// pgxQuerier is what a pool and a transaction share.
type pgxQuerier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// querier runs the store's statements on a pool or a transaction.
type querier struct{ q pgxQuerier }

func (q querier) Query(ctx context.Context, sql string, args ...any) (storedriver.Rows, error) {
	rows, err := q.q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return &prows{r: rows}, nil
}

func (q querier) QueryRow(ctx context.Context, sql string, args ...any) storedriver.Row {
	return prow{q.q.QueryRow(ctx, sql, args...)}
}

// prows maps pgx's rows to the store's; after, when set, runs once they are closed (the
// batch they came in).
type prows struct {
	r     pgx.Rows
	after func() error
}

func (r *prows) Next() bool             { return r.r.Next() }
func (r *prows) Scan(dest ...any) error { return r.r.Scan(dest...) }
func (r *prows) Err() error             { return r.r.Err() }
func (r *prows) Close() error {
	r.r.Close()
	err := r.r.Err()
	if r.after != nil {
		if aerr := r.after(); err == nil {
			err = aerr
		}
		r.after = nil
	}
	return err
}

// prow maps pgx's no-rows error to the store's.
type prow struct{ r pgx.Row }

func (r prow) Scan(dest ...any) error {
	err := r.r.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return storedriver.ErrNoRows
	}
	return err
}
