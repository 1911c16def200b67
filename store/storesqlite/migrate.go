package storesqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"

	"github.com/ticketd/ticketd/store/storedriver"
)

// migrations are the forward-only schema steps, one file per version under migration/;
// migrations[i] takes the schema from version i to version i+1. Each step runs in its own
// transaction together with its schema_migrations row, so a crash mid-migration leaves the
// database at the previous version.
var migrations = storedriver.MustReadMigrations(migrationFiles, "migration", 1)

//go:embed migration/*.sql
var migrationFiles embed.FS

// withoutForeignKeys are the steps that rebuild a table others reference: they run with
// foreign key enforcement off (a connection setting SQLite ignores inside a transaction),
// and PRAGMA foreign_key_check must find nothing before they commit.
var withoutForeignKeys = map[int]bool{12: true, 14: true, 17: true, 18: true}

// SchemaVersion is the schema version this build migrates databases to.
var SchemaVersion = len(migrations)

// migrate brings db forward to version target (len(migrations) in production; tests stop
// earlier to build databases as older binaries left them).
func migrate(ctx context.Context, db *sql.DB, target int, now int64) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		applied_at INTEGER NOT NULL
	)`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	current, err := schemaVersion(ctx, db)
	if err != nil {
		return err
	}
	if current > len(migrations) {
		return fmt.Errorf("database schema is v%d but this ticketd knows only up to v%d: upgrade ticketd, the schema is never migrated backwards", current, len(migrations))
	}
	for v := current + 1; v <= target; v++ {
		if err := applyMigration(ctx, db, v, now); err != nil {
			return err
		}
	}
	return nil
}

func applyMigration(ctx context.Context, db *sql.DB, version int, now int64) error {
	// One pinned connection: the foreign key setting belongs to it, not to the pool.
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("migrate to v%d: connect: %w", version, err)
	}
	defer conn.Close()
	if withoutForeignKeys[version] {
		if _, err := conn.ExecContext(ctx, `PRAGMA foreign_keys = OFF`); err != nil {
			return fmt.Errorf("migrate to v%d: foreign keys off: %w", version, err)
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA foreign_keys = ON`)
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate to v%d: begin: %w", version, err)
	}
	defer tx.Rollback()
	// Another process opening the same new database (ticketctl while the daemon starts)
	// may have applied it since the version was read: the transaction holds the write
	// lock, so this look is the one that counts.
	var applied int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, version).Scan(&applied); err != nil {
		return fmt.Errorf("migrate to v%d: read schema version: %w", version, err)
	}
	if applied > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, migrations[version-1].SQL); err != nil {
		return fmt.Errorf("migrate to v%d: %w", version, err)
	}
	if withoutForeignKeys[version] {
		var table, parent sql.NullString
		var rowid, fkid sql.NullInt64
		err := tx.QueryRowContext(ctx, `PRAGMA foreign_key_check`).Scan(&table, &rowid, &parent, &fkid)
		if err == nil {
			return fmt.Errorf("migrate to v%d: a row of %s (rowid %d) lost the row it references", version, table.String, rowid.Int64)
		} else if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("migrate to v%d: foreign key check: %w", version, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`, version, now); err != nil {
		return fmt.Errorf("migrate to v%d: record version: %w", version, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate to v%d: commit: %w", version, err)
	}
	return nil
}

func schemaVersion(ctx context.Context, db *sql.DB) (int, error) {
	var v int
	if err := db.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}
