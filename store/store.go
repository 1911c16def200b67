// Package store is ticketd's durable ticket queue: the ticket state machine with leases and
// fence tokens, and the append-only records (events, model calls, tool calls, nights,
// artifacts) that explain every night afterwards.
//
// The store holds the API and its semantics once; the database is an engine behind the
// storedriver seam: SQLite (storesqlite, one file, the embedded default) or PostgreSQL
// (storepgxv5, several machines on one queue). Every write is one transaction that appends
// its event with it, so the state machine never races itself; reads never wait for a
// writer. One conformance suite, this package's tests, runs against both engines. Nothing
// else in ticketd touches SQL.
package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ticketd/ticketd/pipeline/timing"
	"github.com/ticketd/ticketd/store/storedriver"
	"github.com/ticketd/ticketd/store/storepgxv5"
	"github.com/ticketd/ticketd/store/storesqlite"
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
	// StateNeedsInfo: the maker asked a human a question (AskHuman); the ticket waits
	// outside the queue until Answer (ticketctl answer, or a GitHub comment) or a requeue.
	StateNeedsInfo State = "needs_info"
	// StateNeedsBudget: the attempt's dollars stopped it (spent, or projected to be by its
	// next call), its partial work kept (NeedBudget); the ticket waits outside the queue
	// until an operator adds money (AddBudget: ticketctl budget) or requeues it.
	StateNeedsBudget State = "needs_budget"
	// StateDuplicate: the ticket reports the same failure as an earlier one of its
	// repository (LinkDuplicate); it waits outside the queue and is closed with that ticket
	// when it ends done, or put back in the queue by Unlink (ticketctl unlink).
	StateDuplicate State = "duplicate"
)

// States lists every state, in the order reports show them.
var States = []State{StateQueued, StateRunning, StateParked, StateNeedsInfo, StateNeedsBudget, StateDuplicate, StateDone, StateEscalated, StateCancelled}

// Terminal reports whether no worker will touch a ticket in state s again.
func (s State) Terminal() bool {
	return s == StateDone || s == StateEscalated || s == StateCancelled
}

// Valid reports whether s is one of the known states.
func (s State) Valid() bool {
	return s == StateQueued || s == StateRunning || s == StateParked || s == StateNeedsInfo || s == StateNeedsBudget || s == StateDuplicate || s.Terminal()
}

var (
	ErrNotFound          = errors.New("ticket not found")
	ErrNoTicket          = errors.New("no ticket ready to claim")
	ErrLeaseLost         = errors.New("lease lost: the ticket was reclaimed or finished by someone else")
	ErrInvalidTransition = errors.New("transition not allowed")
	// ErrBusy is returned only when the database stayed locked by another process (or kept
	// refusing the write as a conflict) through every retry; the transition did not happen
	// and may be retried later.
	ErrBusy = storedriver.ErrBusy
	// ErrRunNotFound is returned by FinishRun and Stats for an unknown run id.
	ErrRunNotFound = errors.New("run not found")
)

// Defaults applied by Open to zero Options fields.
const (
	DefaultBackoffBase = 30 * time.Second
	DefaultBackoffMax  = 30 * time.Minute
	DefaultMaxAttempts = 3
	// DefaultMaxRescues is how many crashes may be blamed on a ticket: the one that reaches
	// it escalates the ticket (one that keeps killing its worker must not loop all night).
	DefaultMaxRescues  = 5
	DefaultBusyRetries = 8
)

// Options tunes a Store; the zero value is the production default.
type Options struct {
	// Synchronous is SQLite's durability: "NORMAL" (default) or "FULL" (fsync every commit).
	// PostgreSQL commits are as durable as its server's settings make them.
	Synchronous string
	Now         func() time.Time // clock; default time.Now
	BackoffBase time.Duration    // retry backoff base, default 30s, exponential with jitter
	BackoffMax  time.Duration    // default 30m
	Rand        *rand.Rand       // jitter source; default seeded from time
	// BusyTimeout is how long SQLite itself waits for another process's lock before the
	// store's own retry loop takes over; default 5s.
	BusyTimeout time.Duration
	// BusyRetries is how many times a write that met a busy database (SQLITE_BUSY, or a
	// PostgreSQL serialization failure or deadlock) is retried, with a short growing pause,
	// before ErrBusy is returned; default 8.
	BusyRetries int
	// OnRetry, when set, is called after each busy retry (for logs and metrics).
	OnRetry func(op string, try int, err error)
	// MaxRescues bounds the crashes blamed on a ticket (SettleDead: its attempt was the only
	// one running when the process died). Lost leases are never charged to the ticket's
	// attempts; the blamed crash that brings its count to MaxRescues escalates it. Default
	// DefaultMaxRescues (5); 1 escalates on the first blamed crash.
	MaxRescues int
	// Node names this machine on every lease it takes (ticketctl show, the status page);
	// default the host name.
	Node string
}

// Store is the ticket queue on one database. Safe for concurrent use.
type Store struct {
	eng  storedriver.Engine
	q    *storedriver.SQL
	rd   storedriver.Reader
	opts Options

	randMu     sync.Mutex
	lastSettle atomic.Int64 // store clock (unix ms) of Claim's last settleExpired
	// claimBatchHook, when set (tests only), runs inside ClaimBatch's transaction after its
	// i-th lease: a test fails there to crash a batch midway.
	claimBatchHook func(i int) error

	// paused is the JSON array of repositories Claim must skip (SetPaused); nil: none.
	paused atomic.Pointer[pausedRepos]
	// passOver are the tickets claims take only when nothing else is ready (PassOver); nil:
	// none.
	passOver atomic.Pointer[[]int64]
	// wake is closed when a notice says a ticket became claimable (WaitForWork), then
	// replaced; guarded by wakeMu.
	wakeMu  sync.Mutex
	wake    chan struct{}
	waiting atomic.Int32 // WaitForWork calls in progress

	// identity is the database's identity as opened ("" before v15); gone is set once
	// Verify found another database (or none) at the location; health is what writes say.
	identity string
	gone     atomic.Pointer[goneErr]
	health   writeHealth
}

// Opener opens an engine with the options the store gives every engine.
type Opener func(storedriver.Options) (storedriver.Engine, error)

// Open opens (creating if needed) the SQLite database at path and migrates it to
// SchemaVersion.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if err := checkSynchronous(opts.Synchronous); err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	return OpenEngine(ctx, opts, func(d storedriver.Options) (storedriver.Engine, error) {
		return storesqlite.Open(ctx, path, storesqlite.Options{Options: d,
			Synchronous: opts.Synchronous, BusyTimeout: opts.BusyTimeout})
	})
}

// OpenURL opens the PostgreSQL database at url (postgres://...), migrating its schema to
// SchemaVersion: the store several ticketd nodes share.
func OpenURL(ctx context.Context, url string, opts Options) (*Store, error) {
	return OpenEngine(ctx, opts, func(d storedriver.Options) (storedriver.Engine, error) {
		return storepgxv5.Open(ctx, url, storepgxv5.Options{Options: d})
	})
}

// OpenLocation opens the store a location names: a PostgreSQL URL (postgres:// or
// postgresql://), or else a SQLite file path.
func OpenLocation(ctx context.Context, location string, opts Options) (*Store, error) {
	if IsURL(location) {
		return OpenURL(ctx, location, opts)
	}
	return Open(ctx, location, opts)
}

// IsURL reports whether location names a PostgreSQL database rather than a SQLite file.
func IsURL(location string) bool {
	return strings.HasPrefix(location, "postgres://") || strings.HasPrefix(location, "postgresql://")
}

// SchemaVersion is the schema version this build migrates databases to, the same number
// on both engines.
var SchemaVersion = storesqlite.SchemaVersion

func checkSynchronous(s string) error {
	switch strings.ToUpper(cmp.Or(s, "NORMAL")) {
	case "NORMAL", "FULL":
		return nil
	}
	return fmt.Errorf("synchronous %q: want NORMAL or FULL", s)
}

// OpenEngine opens a store on the engine open returns (tests wrap an engine's driver to
// inject faults).
func OpenEngine(ctx context.Context, opts Options, open Opener) (*Store, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	opts.BackoffBase = cmp.Or(opts.BackoffBase, DefaultBackoffBase)
	opts.BackoffMax = cmp.Or(opts.BackoffMax, DefaultBackoffMax)
	opts.BusyRetries = cmp.Or(opts.BusyRetries, DefaultBusyRetries)
	if opts.MaxRescues < 0 {
		return nil, fmt.Errorf("open store: max rescues %d: want >= 1 (0 = default %d)", opts.MaxRescues, DefaultMaxRescues)
	}
	opts.MaxRescues = cmp.Or(opts.MaxRescues, DefaultMaxRescues)
	if opts.Rand == nil {
		seed := uint64(time.Now().UnixNano())
		opts.Rand = rand.New(rand.NewPCG(seed, seed>>7|1))
	}
	if opts.Node == "" {
		opts.Node, _ = os.Hostname()
		opts.Node = cmp.Or(opts.Node, "localhost")
	}
	s := &Store{opts: opts, wake: make(chan struct{})}
	eng, err := open(storedriver.Options{
		Now:         func() int64 { return opts.Now().UnixMilli() },
		BusyRetries: opts.BusyRetries,
		OnRetry:     opts.OnRetry,
		OnNotify:    s.woken,
	})
	if err != nil {
		return nil, err
	}
	s.eng, s.q, s.rd = eng, eng.SQL(), eng.Read()
	if s.identity, err = s.Identity(ctx); err != nil {
		eng.Close()
		return nil, fmt.Errorf("open store %s: %w", eng.Location(), err)
	}
	return s, nil
}

// Close closes the engine (for SQLite, after checkpointing the WAL into the main file).
func (s *Store) Close() error { return s.eng.Close() }

// Path is where the database is: the SQLite file's absolute path, or the PostgreSQL URL
// without its password.
func (s *Store) Path() string { return s.eng.Location() }

// Engine names the database engine: "sqlite" or "postgres".
func (s *Store) Engine() string { return s.eng.Name() }

// Node is the name this store records on the leases it grants.
func (s *Store) Node() string { return s.opts.Node }

// SchemaVersion reads the schema version the database is at.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	v, err := s.eng.SchemaVersion(ctx)
	if err != nil {
		return 0, fmt.Errorf("schema version of %s: %w", s.Path(), err)
	}
	return v, nil
}

// Checkpoint does the database's housekeeping after a batch of work: for SQLite it copies
// the WAL into the database file and truncates it, so a long-lived daemon's WAL cannot grow
// without bound (FinishRun and Close call it); PostgreSQL needs none.
func (s *Store) Checkpoint(ctx context.Context) error { return s.eng.Checkpoint(ctx) }

// write runs fn in one write transaction of the engine.
func (s *Store) write(ctx context.Context, op string, fn func(ctx context.Context, tx storedriver.Tx) error) error {
	start := time.Now()
	err := s.eng.Write(ctx, op, fn)
	timing.Since(ctx, timing.Store, start)
	s.noteWrite(err)
	return err
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
