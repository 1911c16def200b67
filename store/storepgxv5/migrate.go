package storepgxv5

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ticketd/ticketd/store/storedriver"
)

// migrations start where the SQLite engine's schema stood when this engine was written
// (v13): a PostgreSQL database is created at that version in one step
// (migration/013_baseline.sql), and every later version is a step in both engines, so one
// SchemaVersion names the same schema in both.
var migrations = storedriver.MustReadMigrations(migrationFiles, "migration", 13)

//go:embed migration/*.sql
var migrationFiles embed.FS

// SchemaVersion is the schema version this build migrates databases to.
var SchemaVersion = migrations[len(migrations)-1].Version

// migrateLock is the advisory lock key (hashtext('ticketd:migrate')) that makes nodes
// starting together migrate one after the other.
const migrateLock = `SELECT pg_advisory_xact_lock(hashtext('ticketd:migrate'))`

// migrate brings the database forward to version target, each step in a transaction of
// its own together with its schema_migrations row, under the migration lock. A server that
// goes away meanwhile (a restart, a failover: nodes started by cron meet the database's own
// maintenance) is waited for up to WriteTimeout, as a write is: a step reads the version
// again under the lock, so rerunning one whose COMMIT's answer was lost is safe.
func (e *Engine) migrate(ctx context.Context, target int) error {
	pause := 50 * time.Millisecond
	var lostSince time.Time
	for try := 1; ; try++ {
		done, err := e.migrateOne(ctx, target)
		if err == nil && done {
			return nil
		}
		if err == nil {
			lostSince = time.Time{}
			continue
		}
		if ctx.Err() != nil || !serverLost(err) {
			return err
		}
		if lostSince.IsZero() {
			lostSince = time.Now()
		} else if time.Since(lostSince) > e.opts.WriteTimeout {
			return fmt.Errorf("%w (the database did not answer for %s)", err, e.opts.WriteTimeout)
		}
		if e.opts.OnRetry != nil {
			e.opts.OnRetry("migrate", try, err)
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (while waiting for the database: %v)", ctx.Err(), err)
		case <-t.C:
		}
		pause = min(2*pause, time.Second)
	}
}

// serverLost reports whether a migration step failed because its session could not be had
// or ended under it (connection refused or reset, 57P01 terminating connection, 57P03 the
// database system is starting up), not because the server refused what was asked (a
// password, a statement) or the schema is not ticketd's.
func serverLost(err error) bool {
	var lost *connLost
	if !errors.As(err, &lost) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "57P") || strings.HasPrefix(pe.Code, "08")
	}
	return true
}

// migrateOne applies the next step; done when the database is at target.
func (e *Engine) migrateOne(ctx context.Context, target int) (done bool, err error) {
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		return false, &connLost{fmt.Errorf("migrate: begin: %w", err)}
	}
	defer tx.Rollback(ctx)
	defer func() {
		if err != nil && tx.Conn().IsClosed() {
			err = &connLost{err} // the session ended under the step: nothing of it stays
		}
	}()
	if _, err := tx.Exec(ctx, migrateLock); err != nil {
		return false, fmt.Errorf("migrate: lock: %w", err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		applied_at BIGINT  NOT NULL
	)`); err != nil {
		return false, fmt.Errorf("create schema_migrations: %w", err)
	}
	var current int
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return false, fmt.Errorf("read schema version: %w", err)
	}
	if current > SchemaVersion {
		return false, fmt.Errorf("database schema is v%d but this ticketd knows only up to v%d: upgrade ticketd, the schema is never migrated backwards", current, SchemaVersion)
	}
	next := nextMigration(current, target)
	if next == nil {
		return true, tx.Commit(ctx)
	}
	if current == 0 {
		var tables int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables
			WHERE table_schema = current_schema() AND table_name = 'tickets'`).Scan(&tables); err != nil {
			return false, fmt.Errorf("migrate: %w", err)
		}
		if tables > 0 {
			return false, fmt.Errorf("migrate: the schema %q has a tickets table but no schema_migrations: not a ticketd database, or one from a broken install; point store.url at an empty database", "current_schema()")
		}
	}
	if _, err := tx.Exec(ctx, next.SQL); err != nil {
		return false, fmt.Errorf("migrate to v%d: %w", next.Version, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)`, next.Version, e.opts.Now()); err != nil {
		return false, fmt.Errorf("migrate to v%d: record version: %w", next.Version, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fmt.Errorf("migrate to v%d: commit: %w", next.Version, err)
	}
	return false, nil
}

// nextMigration is the step after version current, or nil when current reached target.
func nextMigration(current, target int) *storedriver.Migration {
	for i := range migrations {
		if migrations[i].Version > current && migrations[i].Version <= target {
			return &migrations[i]
		}
	}
	return nil
}
