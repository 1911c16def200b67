package storesqlite

import (
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"syscall"
)

// fileID is a file's identity on this machine: the device and the inode. Paths can lead to
// one file in several ways (a symbolic link, a hard link), and one path to another file
// once the first is deleted or replaced.
type fileID struct{ dev, ino uint64 }

// FileIdentity returns the device and inode of the file at path.
func FileIdentity(path string) (dev, ino uint64, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, fmt.Errorf("%s: no device and inode on this system", path)
	}
	return uint64(st.Dev), uint64(st.Ino), nil
}

// CheckFile says whether the database file at the engine's path is still the one it opened:
// an error when it was deleted, or replaced by another file (a move, a restore), however
// the writes meanwhile seemed to succeed (they go to the unlinked file).
func (e *Engine) CheckFile() error {
	if e.file == (fileID{}) {
		return nil
	}
	dev, ino, err := FileIdentity(e.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return errors.New("the file was deleted while this process had it open")
	case err != nil:
		return fmt.Errorf("stat the database file: %w", err)
	case dev != e.file.dev || ino != e.file.ino:
		return fmt.Errorf("another file took its place (inode %d, opened as %d)", ino, e.file.ino)
	}
	if e.fileIdentity == "" {
		return nil
	}
	// The same inode may hold another database: cp writes over the file it replaces.
	if id, err := fileIdentity(e.path); err == nil && id != e.fileIdentity {
		return fmt.Errorf("another database was written over it (identity %.8s, opened as %.8s)", id, e.fileIdentity)
	}
	return nil
}

// fileIdentity reads the identity the database file itself holds, ignoring the WAL (which
// belongs to the database that was open, and would hide a file written over it): "" with an
// error when the file does not hold one yet (its WAL not yet copied back).
func fileIdentity(path string) (string, error) {
	uri := (&url.URL{Scheme: "file", OmitHost: true, Path: path}).String() + "?mode=ro&immutable=1"
	db, err := sql.Open("sqlite", uri)
	if err != nil {
		return "", err
	}
	defer db.Close()
	var id string
	err = db.QueryRow(`SELECT value FROM store_meta WHERE key = 'identity'`).Scan(&id)
	return id, err
}

// MissingTable says whether err is SQLite's "no such table".
func (e *Engine) MissingTable(err error) bool {
	var c interface{ Code() int }
	// SQLITE_ERROR (1) carries "no such table" in its message only.
	return errors.As(err, &c) && c.Code()&0xff == 1 && strings.Contains(err.Error(), "no such table")
}
