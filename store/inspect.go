package store

import (
	"context"
	"errors"
	"os"

	"github.com/ticketd/ticketd/store/storepgxv5"
	"github.com/ticketd/ticketd/store/storesqlite"
)

// ErrNotTicketd is returned by Inspect for a file that is not a ticketd database: empty,
// not SQLite, or SQLite without ticketd's schema.
var ErrNotTicketd = storesqlite.ErrNotTicketd

// Inspect says, without writing a byte (no schema, no journal mode, no -wal file of its
// own), whether the SQLite file at path holds a ticketd database, and its schema version.
// Open creates and migrates; a tool that must not turn a mistyped path or another
// program's database into a ticketd one calls Inspect first.
func Inspect(ctx context.Context, path string) (version int, err error) {
	return storesqlite.Inspect(ctx, path)
}

// Probe says, writing nothing, whether the database at location is one ticketd can open,
// and its schema version (0: none yet, ticketd creates it). A missing SQLite file is a new
// database; an existing one must be ticketd's (Inspect); a PostgreSQL URL must answer.
func Probe(ctx context.Context, location string) (version int, err error) {
	if IsURL(location) {
		return storepgxv5.Probe(ctx, location)
	}
	if fi, err := os.Stat(location); errors.Is(err, os.ErrNotExist) || (err == nil && fi.Mode().IsRegular() && fi.Size() == 0) {
		return 0, nil
	}
	return Inspect(ctx, location)
}
