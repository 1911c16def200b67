package storepgxv5

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Probe connects to the database at rawURL and reads its schema version without writing
// anything (0 for a database ticketd has not created its schema in yet): what `ticketd
// check` asks of a store it must not migrate.
func Probe(ctx context.Context, rawURL string) (int, error) {
	location := redact(rawURL)
	conn, err := pgx.Connect(ctx, rawURL)
	if err != nil {
		return 0, fmt.Errorf("connect to %s: %w", location, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var v int
	err = conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42P01" {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the schema version of %s: %w", location, err)
	}
	return v, nil
}
