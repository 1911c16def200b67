// Package storetest gives tests throw-away databases for the store's engines: a SQLite file
// in the test's temporary directory, or a PostgreSQL schema of its own on the server
// TICKETD_TEST_POSTGRES names (scripts/pgtest.sh starts one), dropped when the test ends.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ticketd/ticketd/store/storetest/toolenv"
)

// EnvPostgres names the variable holding the test server's URL.
const EnvPostgres = "TICKETD_TEST_POSTGRES"

// StartHint is the command that starts a throw-away server and prints the URL to export.
const StartHint = "eval \"$(scripts/pgtest.sh start)\"  # a throw-away PostgreSQL on 127.0.0.1, or set " + EnvPostgres + "=postgres://..."

// Engines names the store's engines, in the order tests run them.
var Engines = []string{"sqlite", "postgres"}

// Location returns a fresh, empty database of engine for t: a file path for "sqlite", a
// URL for "postgres" (see PostgresURL).
func Location(t testing.TB, engine string) string {
	t.Helper()
	switch engine {
	case "sqlite":
		return filepath.Join(t.TempDir(), "ticketd.db")
	case "postgres":
		return FreshPostgres(t)
	}
	t.Fatalf("storetest: unknown engine %q", engine)
	return ""
}

// PostgresURL is the test server's URL. Without one the test skips, saying how to start
// one, or fails where toolenv says PostgreSQL is required (scripts/test.sh, so CI).
func PostgresURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvPostgres)
	if u == "" {
		toolenv.Need(t, toolenv.PostgreSQL, errors.New(EnvPostgres+" is unset (start a server: "+StartHint+")"))
	}
	return u
}

// FreshPostgres creates a schema of its own on the test server and returns the server's
// URL with search_path set to it; the schema is dropped when t ends.
func FreshPostgres(t testing.TB) string {
	t.Helper()
	base := PostgresURL(t)
	var b [6]byte
	rand.Read(b[:])
	schema := "t_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to the test PostgreSQL at %s: %v (%s)", redact(base), err, StartHint)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create test schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("drop test schema %s: %v", schema, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop test schema %s: %v", schema, err)
		}
	})
	return WithSchema(t, base, schema)
}

// WithSchema is rawURL with search_path set to schema.
func WithSchema(t testing.TB, rawURL, schema string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("%s: %v", EnvPostgres, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
