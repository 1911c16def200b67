package store

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestVerifySQLiteFile: a night's store notices when the file it opened is deleted, replaced
// by another file (a move, a restore), or overwritten in place by another ticketd database;
// writes meanwhile seem to succeed (into the unlinked file), so nothing else would say so.
func TestVerifySQLiteFile(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, path, other string)
	}{
		{"deleted", func(t *testing.T, path, _ string) {
			for _, p := range []string{path, path + "-wal", path + "-shm"} {
				os.Remove(p)
			}
		}},
		{"replaced by a move", func(t *testing.T, path, other string) {
			if err := os.Rename(other, path); err != nil {
				t.Fatal(err)
			}
		}},
		{"copied over in place", func(t *testing.T, path, other string) {
			in, err := os.Open(other)
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			out, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			if _, err := io.Copy(out, in); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			path, other := filepath.Join(dir, "ticketd.db"), filepath.Join(dir, "other.db")
			s, err := Open(ctx, path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			o, err := Open(ctx, other, Options{})
			if err != nil {
				t.Fatal(err)
			}
			o.Close() // checkpointed into one file
			if err := s.Verify(ctx); err != nil {
				t.Fatalf("Verify before: %v", err)
			}
			if up, _, _ := s.WriteHealth(); !up {
				t.Fatal("write health down before anything happened")
			}
			tc.change(t, path, other)
			err = s.Verify(ctx)
			if !errors.Is(err, ErrDatabaseGone) {
				t.Fatalf("Verify after the file was %s: %v; want ErrDatabaseGone", tc.name, err)
			}
			t.Logf("%s: %v", tc.name, err)
			if up, _, why := s.WriteHealth(); up || why == "" {
				t.Errorf("write health up=%v (%q) after the database went; want down with the reason", up, why)
			}
		})
	}
}

// TestVerifyPostgres: a PostgreSQL database whose schema was dropped, or that now holds
// another ticketd database, is gone for the store that opened it; a server that is merely
// down is not (Verify reports its error, not ErrDatabaseGone).
func TestVerifyPostgres(t *testing.T) {
	b := engine{"postgres"}.setup(t)
	if err := b.s.Verify(b.ctx); err != nil {
		t.Fatalf("Verify before: %v", err)
	}
	conn, err := pgx.Connect(b.ctx, b.loc)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(b.ctx)
	if _, err := conn.Exec(b.ctx, `UPDATE store_meta SET value = 'another' WHERE key = 'identity'`); err != nil {
		t.Fatal(err)
	}
	if err := b.s.Verify(b.ctx); !errors.Is(err, ErrDatabaseGone) {
		t.Errorf("Verify after another database took the place: %v; want ErrDatabaseGone", err)
	}
	c := engine{"postgres"}.setup(t)
	conn2, err := pgx.Connect(c.ctx, c.loc)
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close(c.ctx)
	if _, err := conn2.Exec(c.ctx, `DROP TABLE store_meta`); err != nil {
		t.Fatal(err)
	}
	if err := c.s.Verify(c.ctx); !errors.Is(err, ErrDatabaseGone) {
		t.Errorf("Verify after the schema went: %v; want ErrDatabaseGone", err)
	}
}
