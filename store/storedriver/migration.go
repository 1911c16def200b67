package storedriver

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strconv"
)

// Migration is one forward-only schema step, read from a file NNN_name.sql whose number is
// the schema version the step takes the database to. The file's leading comment says why
// the step exists; never edit a released step: add a file.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

var migrationFile = regexp.MustCompile(`^(\d{3})_([a-z0-9_]+)\.sql$`)

// ReadMigrations reads the .sql files of dir in fsys (an engine's embedded migration
// folder) in version order. The versions must run on from first without a gap, so a
// misnamed file fails every test of the engine rather than skipping a step.
func ReadMigrations(fsys fs.FS, dir string, first int) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	var out []Migration
	for _, e := range entries {
		m := migrationFile.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("read migrations: %s/%s: want NNN_name.sql (three digits, lowercase name)", dir, e.Name())
		}
		v, _ := strconv.Atoi(m[1])
		if want := first + len(out); v != want {
			return nil, fmt.Errorf("read migrations: %s/%s: version %d where %d belongs: versions run on from %d without a gap or repeat", dir, e.Name(), v, want, first)
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read migrations: %w", err)
		}
		out = append(out, Migration{Version: v, Name: m[2], SQL: string(b)})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("read migrations: %s holds no NNN_name.sql file", dir)
	}
	return out, nil
}

// MustReadMigrations is ReadMigrations for an engine's embedded folder, where an error is
// a mistake in the build itself.
func MustReadMigrations(fsys fs.FS, dir string, first int) []Migration {
	ms, err := ReadMigrations(fsys, dir, first)
	if err != nil {
		panic(err)
	}
	return ms
}
