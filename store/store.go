// Package store is ticketd's durable ticket queue: the SQLite schema and its migrations,
// the ticket state machine with leases and fence tokens, and the append-only records
// (events, model calls, tool calls, runs) that explain every night afterwards.
//
// All writes go through one writer connection inside BEGIN IMMEDIATE transactions, so the
// state machine never races itself; reads use a separate read-only pool and never wait for
// the writer (WAL). Every transition appends its event in the same transaction. Nothing
// else in ticketd touches SQL.
package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// State is a ticket's place in the state machine; the database CHECKs the same set.
type State string

// The ticket states. done, escalated and cancelled are terminal and carry finished_at.
// parked waits outside the queue (the endpoint kept failing it) until run_after has passed
// and a night unparks it (Unpark), or an operator requeues it.
const (
	StateQueued    State = "queued"
	StateRunning   State = "running"
	StateParked    State = "parked"
	StateDone      State = "done"
	StateEscalated State = "escalated"
	StateCancelled State = "cancelled"
)

// States lists every state, in the order reports show them.
var States = []State{StateQueued, StateRunning, StateParked, StateDone, StateEscalated, StateCancelled}

// Terminal reports whether no worker will touch a ticket in state s again.
func (s State) Terminal() bool {
	return s == StateDone || s == StateEscalated || s == StateCancelled
}

// Valid reports whether s is one of the six known states.
func (s State) Valid() bool {
	return s == StateQueued || s == StateRunning || s == StateParked || s.Terminal()
}

var (
	ErrNotFound          = errors.New("ticket not found")
	ErrNoTicket          = errors.New("no ticket ready to claim")
	ErrLeaseLost         = errors.New("lease lost: the ticket was reclaimed or finished by someone else")
	ErrInvalidTransition = errors.New("transition not allowed")
	// ErrBusy is returned only when the database stayed locked by another process through
	// every retry; the transition did not happen and may be retried later.
	ErrBusy = errors.New("database busy: another process held the write lock through every retry")
	// ErrRunNotFound is returned by FinishRun and Stats for an unknown run id.
	ErrRunNotFound = errors.New("run not found")
)

// Defaults applied by Open to zero Options fields.
const (
	DefaultBackoffBase = 30 * time.Second
	DefaultBackoffMax  = 30 * time.Minute
	DefaultMaxAttempts = 3
	// DefaultMaxRescues is how many lost leases a ticket may suffer: the one that reaches it
	// escalates the ticket (one that keeps killing its worker must not loop all night).
	DefaultMaxRescues  = 5
	DefaultBusyRetries = 8
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
)

// Options tunes a Store; the zero value is the production default.
type Options struct {
	Synchronous string           // "NORMAL" (default) or "FULL" (fsync every commit)
	Now         func() time.Time // clock; default time.Now
	BackoffBase time.Duration    // retry backoff base, default 30s, exponential with jitter
	BackoffMax  time.Duration    // default 30m
	Rand        *rand.Rand       // jitter source; default seeded from time
	// BusyTimeout is how long SQLite itself waits for another process's lock before the
	// store's own retry loop takes over; default 5s.
	BusyTimeout time.Duration
	// BusyRetries is how many times a write that met SQLITE_BUSY is retried (with a short
	// growing pause) before ErrBusy is returned; default 8.
	BusyRetries int
	// OnRetry, when set, is called after each busy retry (for logs and metrics).
	OnRetry func(op string, try int, err error)
	// MaxRescues bounds the attempts a ticket may lose to an expired lease (daemon crash,
	// kill, reboot). Such attempts are not charged to the ticket's attempts; the lost lease
	// that brings a ticket's count to MaxRescues escalates it instead of rerunning it.
	// Default DefaultMaxRescues (5); 1 escalates on the first lost lease.
	MaxRescues int

	driverName   string        // tests wrap the driver to inject faults
	busyPauseMax time.Duration // longest pause between busy retries; default 250ms
}

// Store is the ticket queue on one SQLite file. Safe for concurrent use.
type Store struct {
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
	queue   []*writeReq // writes waiting for the leader (see write)
	leading bool
	closed  bool
	// overlapping: the last group had company (several writes, or callers waiting), so the
	// next leader yields once to let answered callers join it (see leadUntilDone).
	overlapping atomic.Bool
	// inflight counts writes accepted before Close, which waits for them.
	inflight sync.WaitGroup

	randMu     sync.Mutex
	lastSettle atomic.Int64 // store clock (unix ms) of Claim's last settleExpired
	// leaseHorizon is the earliest expiry (store clock, unix ms) of a lease that may still
	// be held: read from the database with every settle, lowered by each lease this store
	// grants. Heartbeats only move expiries later, and finished leases only make it early,
	// so before it no lease has expired and Claim needs no rescue branch. Starts at 0.
	leaseHorizon atomic.Int64

	// paused is the JSON array of repositories Claim must skip (SetPaused); nil: none.
	paused atomic.Pointer[pausedRepos]
}

// Open opens (creating if needed) the database at path and migrates it to SchemaVersion.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	opts.Synchronous = strings.ToUpper(cmp.Or(opts.Synchronous, "NORMAL"))
	if opts.Synchronous != "NORMAL" && opts.Synchronous != "FULL" {
		return nil, fmt.Errorf("open store %s: synchronous %q: want NORMAL or FULL", path, opts.Synchronous)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	opts.BackoffBase = cmp.Or(opts.BackoffBase, DefaultBackoffBase)
	opts.BackoffMax = cmp.Or(opts.BackoffMax, DefaultBackoffMax)
	opts.BusyTimeout = cmp.Or(opts.BusyTimeout, 5*time.Second)
	opts.BusyRetries = cmp.Or(opts.BusyRetries, DefaultBusyRetries)
	if opts.MaxRescues < 0 {
		return nil, fmt.Errorf("open store %s: max rescues %d: want >= 1 (0 = default %d)", path, opts.MaxRescues, DefaultMaxRescues)
	}
	opts.MaxRescues = cmp.Or(opts.MaxRescues, DefaultMaxRescues)
	if opts.Rand == nil {
		seed := uint64(time.Now().UnixNano())
		opts.Rand = rand.New(rand.NewPCG(seed, seed>>7|1))
	}
	driverName := cmp.Or(opts.driverName, "sqlite")

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
		fmt.Sprintf("&_pragma=journal_size_limit(%d)", walRestartBytes) +
		fmt.Sprintf("&_pragma=wal_autocheckpoint(%d)", walCheckpointPages) + "&_txlock=immediate"
	w, err := sql.Open(driverName, wdsn)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)

	s := &Store{path: abs, opts: opts, w: w, stmts: map[string]wstmt{}}
	if err := s.retry(ctx, "migrate", func() error {
		return migrate(ctx, w, len(migrations), s.nowMS())
	}); err != nil {
		w.Close()
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	if s.wc, err = w.Conn(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("open store %s writer: %w", abs, err)
	}

	rdsn := uri + "?mode=ro&" + busy + "&_pragma=query_only(1)&_pragma=foreign_keys(1)"
	r, err := sql.Open(driverName, rdsn)
	if err != nil {
		s.wc.Close()
		w.Close()
		return nil, fmt.Errorf("open store %s read pool: %w", abs, err)
	}
	r.SetMaxOpenConns(4)
	r.SetMaxIdleConns(4)
	if err := r.PingContext(ctx); err != nil {
		s.wc.Close()
		w.Close()
		r.Close()
		return nil, fmt.Errorf("open store %s read pool: %w", abs, err)
	}
	s.r = r
	ck, err := sql.Open(driverName, uri+"?"+busy+"&_pragma=synchronous("+opts.Synchronous+")")
	if err != nil {
		s.wc.Close()
		w.Close()
		r.Close()
		return nil, fmt.Errorf("open store %s checkpointer: %w", abs, err)
	}
	s.ckpt = newCheckpointer(ck)
	return s, nil
}

// Close checkpoints the WAL into the main file (best effort) and closes both pools.
func (s *Store) Close() error {
	s.qmu.Lock()
	s.closed = true
	s.qmu.Unlock()
	s.inflight.Wait()
	kerr := s.ckpt.close()
	cerr := s.Checkpoint(context.Background())
	s.wmu.Lock()
	s.wc.Raw(func(any) error { // the driver's statements close under the connection's lock
		for _, st := range s.stmts {
			st.Close()
		}
		return nil
	})
	s.stmts = map[string]wstmt{}
	cwerr := s.wc.Close()
	s.wmu.Unlock()
	rerr := s.r.Close()
	werr := s.w.Close()
	if err := errors.Join(cwerr, werr, rerr, kerr); err != nil {
		return fmt.Errorf("close store %s: %w", s.path, err)
	}
	if cerr != nil && !errors.Is(cerr, ErrBusy) {
		return cerr
	}
	return nil
}

// Path is the absolute path of the database file.
func (s *Store) Path() string { return s.path }

// Checkpoint copies the WAL into the database file and truncates it (wal_checkpoint
// TRUNCATE), so a long-lived daemon's WAL cannot grow without bound. FinishRun and Close
// call it; SQLite's auto-checkpoint and journal_size_limit bound the WAL between runs.
func (s *Store) Checkpoint(ctx context.Context) error {
	return s.retry(ctx, "checkpoint", func() error {
		var busy, logFrames, done int
		s.wmu.Lock()
		err := s.wc.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logFrames, &done)
		s.wmu.Unlock()
		if err != nil {
			return fmt.Errorf("checkpoint %s: %w", s.path, err)
		}
		if busy != 0 {
			return fmt.Errorf("checkpoint %s: %w", s.path, errCheckpointBusy)
		}
		return nil
	})
}

var errCheckpointBusy = &busyError{msg: "readers kept the WAL in use"}

// busyError is a SQLITE_BUSY produced by the store itself (an incomplete checkpoint).
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
func (s *Store) retry(ctx context.Context, op string, fn func() error) error {
	maxPause := cmp.Or(s.opts.busyPauseMax, 250*time.Millisecond)
	pause := min(2*time.Millisecond, maxPause)
	for try := 0; ; try++ {
		err := fn()
		if err == nil || !isBusy(err) {
			return err
		}
		if try >= s.opts.BusyRetries {
			return fmt.Errorf("%s: %w (%d tries; last: %v); retry later or find the process holding %s", op, ErrBusy, try+1, err, s.path)
		}
		if s.opts.OnRetry != nil {
			s.opts.OnRetry(op, try+1, err)
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

func (s *Store) now() time.Time { return s.opts.Now().UTC() }
func (s *Store) nowMS() int64   { return s.opts.Now().UnixMilli() }

// Times are stored as UTC unix milliseconds; NULL or 0 is the zero time.
func fromMS(v sql.NullInt64) time.Time {
	if !v.Valid || v.Int64 == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v.Int64).UTC()
}

// backoff is base*2^(attempt-1), capped at BackoffMax, with ±20% jitter.
func (s *Store) backoff(attempt int) time.Duration {
	d := s.opts.BackoffBase
	for i := 1; i < attempt && d < s.opts.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, s.opts.BackoffMax)
	s.randMu.Lock()
	f := 0.8 + 0.4*s.opts.Rand.Float64()
	s.randMu.Unlock()
	return time.Duration(float64(d) * f)
}
