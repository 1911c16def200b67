package store

import (
	"context"

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
