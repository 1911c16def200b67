package storesqlite

import (
	"context"
	"database/sql"
)

// Internals the external tests of this package read.
const (
	CheckpointEvery    = checkpointEvery
	WALCheckpointPages = walCheckpointPages
	JournalSizeLimit   = journalSizeLimit
	NewPageSize        = newPageSize
)

var Migrations = len(migrations)

// Migrate runs the first v migrations on db.
func Migrate(ctx context.Context, db *sql.DB, v int, now int64) error {
	return migrate(ctx, db, v, now)
}

// CheckpointPassed is signalled after each background checkpoint pass.
func (e *Engine) CheckpointPassed() <-chan struct{} { return e.ckpt.passed }

// CheckpointRan is signalled after each background checkpoint pass, failed ones too.
func (e *Engine) CheckpointRan() <-chan struct{} { return e.ckpt.ran }

// CheckpointPasses counts the background checkpoint passes.
func (e *Engine) CheckpointPasses() int64 { return e.ckpt.passes.Load() }

// WriterQueryRow runs a query on the writer connection, outside any write group.
func (e *Engine) WriterQueryRow(ctx context.Context, q string, args ...any) *sql.Row {
	e.wmu.Lock()
	defer e.wmu.Unlock()
	return e.wc.QueryRowContext(ctx, q, args...)
}

// WriterQuery runs a query on the writer connection, outside any write group.
func (e *Engine) WriterQuery(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	e.wmu.Lock()
	defer e.wmu.Unlock()
	return e.wc.QueryContext(ctx, q, args...)
}

// WALRestarts counts the WAL restarts boundWAL made.
func (e *Engine) WALRestarts() int64 { return e.walRestarts.Load() }
