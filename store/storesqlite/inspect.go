package storesqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
)

// ErrNotTicketd is returned by Inspect for a file that is not a ticketd database: empty,
// not SQLite, or SQLite without ticketd's schema.
var ErrNotTicketd = errors.New("not a ticketd database")

// sqliteMagic opens every SQLite database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// Inspect says, without writing a byte (no schema, no journal mode, no -wal file of its
// own), whether path holds a ticketd database, and its schema version. Open creates and
// migrates; a tool that must not turn a mistyped path or another program's database into
// a ticketd one calls Inspect first.
func Inspect(ctx context.Context, path string) (version int, err error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return 0, fmt.Errorf("inspect %s: %w", path, err)
	}
	f, err := os.Open(abs)
	if err != nil {
		return 0, fmt.Errorf("inspect %s: %w", abs, err)
	}
	head := make([]byte, len(sqliteMagic))
	n, rerr := io.ReadFull(f, head)
	f.Close()
	switch {
	case n == 0 && (rerr == io.EOF || rerr == nil):
		return 0, fmt.Errorf("%s is an empty file: %w", abs, ErrNotTicketd)
	case rerr != nil && !errors.Is(rerr, io.ErrUnexpectedEOF):
		return 0, fmt.Errorf("inspect %s: %w", abs, rerr)
	case !bytes.Equal(head[:n], sqliteMagic):
		return 0, fmt.Errorf("%s is not an SQLite file: %w", abs, ErrNotTicketd)
	}
	// A file another process is recovering (its WAL after a crash) is waited for a moment.
	uri := (&url.URL{Scheme: "file", OmitHost: true, Path: abs}).String() + "?mode=ro&_pragma=query_only(1)&_pragma=busy_timeout(5000)"
	db, err := sql.Open("sqlite", uri)
	if err != nil {
		return 0, fmt.Errorf("inspect %s: %w", abs, err)
	}
	defer db.Close()
	var tables int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('schema_migrations', 'tickets', 'events')`).Scan(&tables); err != nil {
		return 0, fmt.Errorf("inspect %s: %w", abs, err)
	}
	if tables < 3 {
		return 0, fmt.Errorf("%s is an SQLite database without ticketd's tables: %w", abs, ErrNotTicketd)
	}
	if version, err = schemaVersion(ctx, db); err != nil {
		return 0, fmt.Errorf("inspect %s: %w", abs, err)
	}
	if version == 0 {
		return 0, fmt.Errorf("%s has ticketd's tables but no schema version: %w", abs, ErrNotTicketd)
	}
	return version, nil
}
