// Package storesqlite is the store's SQLite engine (modernc.org/sqlite, no cgo): one file,
// the embedded default. All writes go through one writer connection inside BEGIN IMMEDIATE
// transactions, group-committed; reads use a separate read-only pool and never wait for the
// writer (WAL); a checkpointer copies the WAL back off the writer's path.
package storesqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/ticketd/ticketd/store/storedriver"
)

const (
	// newPageSize is the page size of a database Open creates. Every commit appends each
	// page it dirtied to the WAL (a queue cycle dirties about 14), so the page size sets the
	// bytes written and checksummed per transition: 2 KiB pages made BenchmarkQueueCycle
	// 15-20% faster than 4 KiB while a ticket row with a ~2 KiB body still fits one page
	// (1 KiB pages would push such rows into overflow chains that every claim rewrites).
	// An existing database keeps its page size: WAL mode cannot change it.
	newPageSize = 2048
	// walCheckpointPages is wal_autocheckpoint, the writer's own checkpoint: once the WAL
	// holds 16 MiB of 2 KiB pages. It is the backstop; the background checkpointer (kicked
	// every checkpointEvery commits) does most of the copying and syncing off the writer's
	// path, and the backstop's complete checkpoint lets the next write restart the WAL.
	walCheckpointPages = (16 << 20) / newPageSize
	// walRestartBytes is the WAL file size past which the writer restarts the log itself,
	// waiting for readers (see boundWAL): 1.5x the auto-checkpoint. It is also
	// journal_size_limit, so the first commit after a restart cuts the file back to it and
	// a file larger than it always means a log that grew past it.
	walRestartBytes = 3 * walCheckpointPages / 2 * (newPageSize + 24)
	// journalSizeLimit bounds the WAL file left on disk after a checkpoint.
	journalSizeLimit = walRestartBytes
)

// Options tunes the engine; the zero value is the production default.
type Options struct {
	storedriver.Options
	Synchronous string // "NORMAL" (default) or "FULL" (fsync every commit)
	// BusyTimeout is how long SQLite itself waits for another process's lock before the
	// engine's own retry loop takes over; default 5s.
	BusyTimeout time.Duration
	// DriverName is the database/sql driver to open; default "sqlite". Tests register a
	// wrapper to inject faults or record statements.
	DriverName string
	// BusyPauseMax is the longest pause between busy retries; default 250ms.
	BusyPauseMax time.Duration
	// MigrateTo stops migrations at this version (0: the latest); tests build databases as
	// older binaries left them.
	MigrateTo int
}

// Engine is the store on one SQLite file.
type Engine struct {
	path string
	opts Options
	w    *sql.DB // the writer pool: one connection, pinned as wc once migrated
	r    *sql.DB // read-only pool

	// wmu guards the writer connection: held by a write group from BEGIN to COMMIT, and by
	// Checkpoint and Close. stmts and inTx are used only under it.
	wmu     sync.Mutex
	wc      *sql.Conn
	stmts   map[string]wstmt // query -> statement prepared on wc's driver connection
	inTx    bool             // a ROLLBACK failed: the next write group rolls back first
	commits int              // commits on wc, to kick ckpt every checkpointEvery
	ckpt    *checkpointer
	// nextRestart is the commit count before which boundWAL does not try again after
	// readers outlasted its wait; walRestarts counts the restarts it made (for tests).
	nextRestart int
	walRestarts atomic.Int64

	qmu     sync.Mutex
	queue   []*writeReq // writes waiting for the leader (see Write)
	leading bool
	closed  bool
	// overlapping: the last group had company (several writes, or callers waiting), so the
	// next leader yields once to let answered callers join it (see leadUntilDone).
	overlapping atomic.Bool
	// inflight counts writes accepted before Close, which waits for them.
	inflight sync.WaitGroup

	// lastRefresh is the store clock (unix ms) of the last refreshLeaseHorizon.
	lastRefresh atomic.Int64
	// leaseHorizon is the earliest expiry (store clock, unix ms) of a lease that may still
	// be held: read from the database every refreshEvery, lowered by each lease this engine
	// grants. Heartbeats only move expiries later, and finished leases only make it early,
	// so before it no lease has expired and Claim needs no rescue branch. Starts at 0.
	leaseHorizon atomic.Int64

	locks sync.Map // lock name -> *fileLock

	// readOnly: this engine has written nothing (no migration, no commit), so Close does
	// not checkpoint: a reader must not wait behind another process's writer to exit.
	readOnly bool

	// file is the database file's identity when opened, and fileIdentity the ticketd
	// identity the file itself held then (CheckFile).
	file         fileID
	fileIdentity string
}

var _ storedriver.Engine = (*Engine)(nil)

// Open opens (creating if needed) the database at path and migrates it.
func Open(ctx context.Context, path string, opts Options) (*Engine, error) {
	opts.Synchronous = strings.ToUpper(cmp.Or(opts.Synchronous, "NORMAL"))
	if opts.Synchronous != "NORMAL" && opts.Synchronous != "FULL" {
		return nil, fmt.Errorf("open store %s: synchronous %q: want NORMAL or FULL", path, opts.Synchronous)
	}
	if opts.Now == nil {
		opts.Now = func() int64 { return time.Now().UnixMilli() }
	}
	opts.BusyTimeout = cmp.Or(opts.BusyTimeout, 5*time.Second)
	opts.BusyRetries = cmp.Or(opts.BusyRetries, 8)
	driverName := cmp.Or(opts.DriverName, "sqlite")
	target := cmp.Or(opts.MigrateTo, len(migrations))

	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return nil, fmt.Errorf("open store %s: create directory: %w", abs, err)
	}
	uri := (&url.URL{Scheme: "file", OmitHost: true, Path: abs}).String()
	busy := fmt.Sprintf("_pragma=busy_timeout(%d)", opts.BusyTimeout.Milliseconds())
	// The driver runs _pragma entries sorted by name, then _journal_mode: page_size must
	// precede WAL to take effect on a new file, so journal_mode uses the shorthand key.
	wdsn := uri + "?" + busy +
		fmt.Sprintf("&_pragma=page_size(%d)", newPageSize) +
		"&_journal_mode=WAL&_pragma=synchronous(" + opts.Synchronous + ")" +
		"&_pragma=foreign_keys(1)" +
		fmt.Sprintf("&_pragma=journal_size_limit(%d)", journalSizeLimit) +
		fmt.Sprintf("&_pragma=wal_autocheckpoint(%d)", walCheckpointPages) + "&_txlock=immediate"
	w, err := sql.Open(driverName, wdsn)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)

	e := &Engine{path: abs, opts: opts, w: w, stmts: map[string]wstmt{}}
	// A database already at the target needs no migration, so no write lock: a reader
	// (ticketctl list) opening it never waits behind another process's writer.
	if atVersion(ctx, uri, busy, target) {
		e.readOnly = true // until a write commits: Close then has nothing to checkpoint
	} else if err := e.retry(ctx, "migrate", func() error {
		return migrate(ctx, w, target, opts.Now())
	}); err != nil {
		w.Close()
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	if e.wc, err = w.Conn(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("open store %s writer: %w", abs, err)
	}

	rdsn := uri + "?mode=ro&" + busy + "&_pragma=query_only(1)&_pragma=foreign_keys(1)"
	r, err := sql.Open(driverName, rdsn)
	if err != nil {
		e.wc.Close()
		w.Close()
		return nil, fmt.Errorf("open store %s read pool: %w", abs, err)
	}
	r.SetMaxOpenConns(4)
	r.SetMaxIdleConns(4)
	if err := r.PingContext(ctx); err != nil {
		e.wc.Close()
		w.Close()
		r.Close()
		return nil, fmt.Errorf("open store %s read pool: %w", abs, err)
	}
	e.r = r
	// mode=rw: the checkpointer opens its connection at its first pass, which may come after
	// the file was deleted; a connection allowed to create would put a new, empty database
	// at the path, and the night's check (CheckFile) would then see the file replaced, not
	// deleted, and a later start would find an empty database where the queue was.
	ck, err := sql.Open(driverName, uri+"?mode=rw&"+busy+"&_pragma=synchronous("+opts.Synchronous+")")
	if err != nil {
		e.wc.Close()
		w.Close()
		r.Close()
		return nil, fmt.Errorf("open store %s checkpointer: %w", abs, err)
	}
	e.ckpt = newCheckpointer(ck)
	if dev, ino, err := FileIdentity(abs); err == nil {
		e.file = fileID{dev, ino}
	}
	// The identity is read from the file alone once the WAL is copied back into it: a
	// passive checkpoint, which never waits for another process.
	if _, err := e.wc.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`); err == nil {
		e.fileIdentity, _ = fileIdentity(abs)
	}
	return e, nil
}

// atVersion says, reading only, whether the database at uri exists at schema version target.
func atVersion(ctx context.Context, uri, busy string, target int) bool {
	db, err := sql.Open("sqlite", uri+"?mode=ro&"+busy+"&_pragma=query_only(1)")
	if err != nil {
		return false
	}
	defer db.Close()
	v, err := schemaVersion(ctx, db)
	return err == nil && v == target
}

// Name is "sqlite".
func (e *Engine) Name() string { return "sqlite" }

// Location is the database file's absolute path.
func (e *Engine) Location() string { return e.path }

// SQL is SQLite's statements.
func (e *Engine) SQL() *storedriver.SQL { return &statements }

// Read is the read-only pool.
func (e *Engine) Read() storedriver.Reader { return reader{e.r} }

// DB is the read-only pool itself, for tests and tools that read the file directly.
func (e *Engine) DB() *sql.DB { return e.r }

// SchemaVersion reads the version recorded in schema_migrations.
func (e *Engine) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	if err := e.r.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

// Close checkpoints the WAL into the main file (best effort) and closes both pools.
func (e *Engine) Close() error {
	e.qmu.Lock()
	e.closed = true
	e.qmu.Unlock()
	e.inflight.Wait()
	kerr := e.ckpt.close()
	var cerr error
	e.wmu.Lock()
	wrote := !e.readOnly || e.commits > 0
	e.wmu.Unlock()
	if wrote {
		cerr = e.Checkpoint(context.Background())
	}
	e.wmu.Lock()
	e.wc.Raw(func(any) error { // the driver's statements close under the connection's lock
		for _, st := range e.stmts {
			st.Close()
		}
		return nil
	})
	e.stmts = map[string]wstmt{}
	cwerr := e.wc.Close()
	e.wmu.Unlock()
	rerr := e.r.Close()
	werr := e.w.Close()
	if err := errors.Join(cwerr, werr, rerr, kerr); err != nil {
		return fmt.Errorf("close store %s: %w", e.path, err)
	}
	if cerr != nil && !errors.Is(cerr, storedriver.ErrBusy) {
		return cerr
	}
	return nil
}

// Checkpoint copies the WAL into the database file and truncates it (wal_checkpoint
// TRUNCATE), so a long-lived daemon's WAL cannot grow without bound. SQLite's
// auto-checkpoint and journal_size_limit bound the WAL between calls.
func (e *Engine) Checkpoint(ctx context.Context) error {
	return e.retry(ctx, "checkpoint", func() error {
		var busy, logFrames, done int
		e.wmu.Lock()
		// The background checkpointer's PASSIVE pass holds SQLite's checkpoint lock while
		// it runs; a TRUNCATE beside it gets SQLITE_BUSY at once (seen under load: the WAL
		// left whole after FinishRun), so wait for the pass as boundWAL's RESTART does.
		e.ckpt.mu.Lock()
		err := e.wc.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logFrames, &done)
		e.ckpt.mu.Unlock()
		e.wmu.Unlock()
		if err != nil {
			return fmt.Errorf("checkpoint %s: %w", e.path, err)
		}
		if busy != 0 {
			return fmt.Errorf("checkpoint %s: %w", e.path, errCheckpointBusy)
		}
		return nil
	})
}

// Notify wakes this process's idle workers: several processes on one SQLite file find
// each other's tickets by their poll.
func (e *Engine) Notify() {
	if e.opts.OnNotify != nil {
		e.opts.OnNotify()
	}
}

// NoticesReachOtherProcesses is false: notices stay in this process.
func (e *Engine) NoticesReachOtherProcesses() bool { return false }

var errCheckpointBusy = &busyError{msg: "readers kept the WAL in use"}

// busyError is a SQLITE_BUSY produced by the engine itself (an incomplete checkpoint).
type busyError struct{ msg string }

func (e *busyError) Error() string { return e.msg + " (SQLITE_BUSY)" }
func (e *busyError) Code() int     { return 5 }

// isBusy reports whether err is SQLITE_BUSY or SQLITE_LOCKED (any extended code): the
// operation did not happen and can be retried.
func isBusy(err error) bool {
	var c interface{ Code() int }
	if errors.As(err, &c) {
		primary := c.Code() & 0xff
		return primary == 5 || primary == 6
	}
	return false
}

// retry runs fn until it succeeds, fails with something other than busy, or the retries
// run out (ErrBusy). fn must be safe to rerun: every write is a whole transaction that
// rolled back when it met busy.
func (e *Engine) retry(ctx context.Context, op string, fn func() error) error {
	maxPause := cmp.Or(e.opts.BusyPauseMax, 250*time.Millisecond)
	pause := min(2*time.Millisecond, maxPause)
	for try := 0; ; try++ {
		err := fn()
		if err == nil || !isBusy(err) {
			return err
		}
		if try >= e.opts.BusyRetries {
			return fmt.Errorf("%s: %w (%d tries; last: %v); retry later or find the process holding %s", op, storedriver.ErrBusy, try+1, err, e.path)
		}
		if e.opts.OnRetry != nil {
			e.opts.OnRetry(op, try+1, err)
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s: %w (while retrying busy database: %v)", op, ctx.Err(), err)
		case <-t.C:
		}
		pause = min(pause*2, maxPause)
	}
}

// SetBusyRetries changes how many busy retries a write gets (tests).
func (e *Engine) SetBusyRetries(n int) { e.opts.BusyRetries = n }

// reader is the read pool as the store reads it.
type reader struct{ db *sql.DB }

func (r reader) Query(ctx context.Context, q string, args ...any) (storedriver.Rows, error) {
	rows, err := r.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

func (r reader) QueryRow(ctx context.Context, q string, args ...any) storedriver.Row {
	return r.db.QueryRowContext(ctx, q, args...)
}
