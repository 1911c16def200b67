// Package storedriver is the seam between the store and its database engines: the store
// keeps the API and the semantics (which transition a failure makes, what an event says),
// and an engine (storesqlite, storepgxv5) brings its connections, transactions, migrations,
// the text of every statement in its dialect, and the mapping of its errors to the store's.
// The store's conformance suite runs unchanged against every engine.
//
// Statements take their arguments in the order the store passes them and return their
// columns in the order it scans them; each field of SQL documents both. Values cross the
// seam as int64 (times are UTC unix milliseconds, flags 0 or 1), float64, string, []byte or
// nil, so no engine needs to know the store's types.
package storedriver

import (
	"context"
	"database/sql"
	"errors"
)

var (
	// ErrBusy means the database stayed locked, or kept refusing the transaction as a
	// conflict, through every retry; nothing was written and the write may be retried.
	ErrBusy = errors.New("database busy: another process held the write lock through every retry")
	// ErrNoRows is what Row.Scan and Tx.Insert return when there was no row (sql.ErrNoRows
	// itself, so callers may test for either).
	ErrNoRows = sql.ErrNoRows
	// ErrClosed is returned by writes after Close.
	ErrClosed = errors.New("store is closed")
)

// Engine is one database behind the store. Safe for concurrent use.
type Engine interface {
	// Name is the engine's dependency in a word: "sqlite" or "postgres".
	Name() string
	// Location names the database for messages: a file path, or a URL without its password.
	Location() string
	// SQL holds the engine's statements.
	SQL() *SQL
	// Write runs fn in one transaction, committed when fn returns nil and rolled back
	// otherwise, and returns once the commit is durable. Transient refusals (a lock held by
	// another process, a serialization conflict) roll back and rerun fn, so fn must be safe
	// to rerun; when the retries run out the error wraps ErrBusy. fn's statements run
	// without ctx's cancellation once the transaction started: a write either happens
	// whole or not at all.
	Write(ctx context.Context, op string, fn func(ctx context.Context, tx Tx) error) error
	// Read is the read pool: reads never wait for a writer.
	Read() Reader
	// SchemaVersion is the schema version the database is at.
	SchemaVersion(ctx context.Context) (int, error)
	// Checkpoint does the housekeeping a long-lived writer owes the database after a batch of
	// work (SQLite: copy the WAL into the file and truncate it); nil when there is none.
	Checkpoint(ctx context.Context) error
	// Lock takes the named lock, shared by every process on this database, waiting until it
	// is free or ctx ends. unlock releases it; so does the process's death.
	Lock(ctx context.Context, name string) (unlock func(), err error)
	// Notify tells every process on this database that the queue changed for its idle
	// workers: a ticket became claimable now, or a lease ended.
	// It never blocks and may coalesce notices; the engine's Options.OnNotify receives them.
	Notify()
	// NoticesReachOtherProcesses reports whether Notify's notices reach every process on
	// the database (PostgreSQL's LISTEN/NOTIFY) or only this one (SQLite).
	NoticesReachOtherProcesses() bool
	// Close releases the engine's connections. Writes after Close return ErrClosed.
	Close() error
}

// Options are what the store asks of every engine.
type Options struct {
	// Now is the store's clock, for the rows migrations write.
	Now func() int64
	// BusyRetries is how many times a write refused as busy is rerun before ErrBusy.
	BusyRetries int
	// OnRetry, when set, is called after each busy retry.
	OnRetry func(op string, try int, err error)
	// OnNotify, when set, is called (on a goroutine of the engine's) for each notice that a
	// ticket became claimable, from this process or another.
	OnNotify func()
}

// Reader runs reads.
type Reader interface {
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	// QueryRow runs query for its first row; its error, or ErrNoRows, surfaces at Scan.
	QueryRow(ctx context.Context, query string, args ...any) Row
}

// Tx is a write transaction.
type Tx interface {
	Reader
	// Exec runs a statement and returns how many rows it changed.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	// Insert runs an INSERT and returns the new row's id (engines whose INSERT cannot say
	// so write theirs with RETURNING id); ErrNoRows when it inserted nothing (ON CONFLICT
	// DO NOTHING).
	Insert(ctx context.Context, query string, args ...any) (int64, error)
	// Claim leases the ticket a claim should take (see ClaimParams) and returns its row as
	// SQL.TicketCols reads it, or a Row whose Scan returns ErrNoRows when none is ready.
	// The pick and the lease are one step: no other transaction can lease the same ticket.
	// A fresh claim (of a queued ticket) also writes its event, ClaimParams.Event; a rescue
	// (rescued_from set) writes none, and the caller appends the lost lease's and the claim's.
	Claim(ctx context.Context, p ClaimParams) (Row, error)
}

// LeaseHorizon is a Tx that can tell whether any lease may have expired: a claim settles
// expired leases (store.settleExpired, a statement that on PostgreSQL also turns a claim
// sent alone into BEGIN, settle, claim and COMMIT) only when one may have.
type LeaseHorizon interface {
	// LeasesMayHaveExpired reads afresh the earliest lease expiry among the running tickets
	// (the engine's lease horizon, which its next Claim then uses) and reports whether it
	// is at or before now. false means no lease had expired at the read.
	LeasesMayHaveExpired(ctx context.Context, now int64) (bool, error)
}

// LastExecer is a Tx that can commit with a statement: ExecLast runs query as the
// transaction's last statement (the caller runs none after it when it changed a row) and,
// when it is also the first, runs it as a transaction of its own, in one round trip; it
// returns once that commit is durable. A statement that changed nothing commits nothing.
type LastExecer interface {
	ExecLast(ctx context.Context, query string, args ...any) (int64, error)
}

// BatchCompleter is a Tx that can complete several leased tickets in one statement.
type BatchCompleter interface {
	// CompleteBatch is CompleteEnded for each ticket of p, in one statement: each whose
	// lease still holds (id, token, running) is done with its result and event, and its
	// open round ended. It returns the fence token of each ticket it completed, by id; the
	// others changed nothing.
	CompleteBatch(ctx context.Context, p CompleteBatchParams) (map[int64]int64, error)
}

// EndClaimer is a Tx that can complete leased tickets and lease fresh ones in one
// statement: a fetch that carries its workers' completes.
type EndClaimer interface {
	// CompleteAndClaim is CompleteBatch(c) and BatchClaimer's ClaimBatch for the workers
	// whose complete was written, in one statement, c.At being p.Now. ends, aligned with
	// workers, is the ticket each completes (0: it only claims; no ticket twice). It
	// returns the completed rows (state done) and the leased ones (state running, in claim
	// order to the claiming workers in their order), SQL.TicketCols each, in no particular
	// order. Opening the transaction, it is the transaction (as LastExecer's ExecLast): what
	// follows begins another.
	CompleteAndClaim(ctx context.Context, c CompleteBatchParams, p ClaimParams, workers []string, ends []int64) (Rows, error)
}

// BatchClaimer is a Tx that can lease several fresh tickets in one statement (PostgreSQL:
// one round trip for a node's whole fetch).
type BatchClaimer interface {
	// ClaimBatch leases to workers, in order, the ready queued tickets in claim order
	// (ClaimParams: Now, Expires, Node, Paused and Event as for Claim; Worker, Avoid,
	// Unpredicted and Last unused), at most len(workers), stopping before the first that
	// has predicted files: each as Claim leases a queued ticket, with its event. Rescues
	// are not its business. It returns the leased rows (SQL.TicketCols) in claim order.
	ClaimBatch(ctx context.Context, p ClaimParams, workers []string) (Rows, error)
}

// ClaimParams are a claim's inputs. The ticket to take: a queued ticket whose run_after has
// passed, or a running one whose lease expired with rescues+1 < MaxRescues and no
// cancellation requested; never one of a paused repository; the first by priority desc,
// then id (among the due, the oldest enqueued: not run_after, which would send a retry
// behind the queue). Leasing it: state running, attempts+1 for a queued ticket, rescues+1 and
// rescued_from = the old lease_owner for a running one (rescued_from NULL otherwise),
// fence_token+1, lease_owner Worker, lease_node Node, lease_expires_at Expires,
// updated_at Now, and the event reservation of SQL.ReserveEvent.
type ClaimParams struct {
	Now, Expires int64
	MaxRescues   int
	Worker, Node string
	// Paused is a JSON array of repository names to skip, "" for none.
	Paused string
	// Avoid is a JSON array of ticket ids to skip (their predicted files overlap a running
	// ticket's, or store.PassOver named them), "" for none.
	Avoid string
	// Event is the event a fresh claim writes under the lease's reservation: at Now, with
	// the ticket's new attempts and Worker as actor.
	Event ClaimEvent
	// Unpredicted leases the picked ticket only when it has no predicted files (the Row
	// then has none when it has some): a claim that can overlap nothing may skip the
	// overlap turn (OverlapSQL.Serialize). Only an engine with a Serialize statement is
	// asked for it.
	Unpredicted bool
	// Last says the caller runs nothing after a fresh claim in this transaction, so the
	// engine may commit the transaction with the claim's own statement (PostgreSQL: one
	// round trip). The Row's Scan then returns once the commit is durable.
	Last bool
}

// ClaimEvent is what a fresh claim's event says.
type ClaimEvent struct {
	Kind, From, To, Reason string
}

// Rows iterates a query's rows like sql.Rows.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// Row is one row of a query like sql.Row.
type Row interface {
	Scan(dest ...any) error
}
