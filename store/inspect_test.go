package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestInspect tells ticketd databases from everything else without writing to any file.
func TestInspect(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b := engine{"sqlite"}.setup(t) // Inspect reads SQLite files
	other := filepath.Join(dir, "other.db")
	db, err := sql.Open("sqlite", other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	files := map[string][]byte{"empty": {}, "text": []byte("not a database\n"), "short": []byte("SQLite")}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		path    string
		wantErr error
	}{
		{b.s.Path(), nil},
		{filepath.Join(dir, "empty"), ErrNotTicketd},
		{filepath.Join(dir, "text"), ErrNotTicketd},
		{filepath.Join(dir, "short"), ErrNotTicketd},
		{other, ErrNotTicketd},
		{filepath.Join(dir, "missing"), os.ErrNotExist},
	}
	for _, tt := range tests {
		before, _ := os.ReadFile(tt.path)
		v, err := Inspect(ctx, tt.path)
		if tt.wantErr == nil {
			if err != nil || v != SchemaVersion {
				t.Errorf("Inspect(%s) = %d, %v; want %d", tt.path, v, err, SchemaVersion)
			}
			continue
		}
		if !errors.Is(err, tt.wantErr) {
			t.Errorf("Inspect(%s) = %d, %v; want %v", tt.path, v, err, tt.wantErr)
		}
		after, _ := os.ReadFile(tt.path)
		if !bytes.Equal(before, after) {
			t.Errorf("Inspect changed %s", tt.path)
		}
		if _, err := os.Stat(tt.path + "-wal"); err == nil {
			t.Errorf("Inspect left %s-wal", tt.path)
		}
	}
}
