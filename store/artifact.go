package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/ticketd/ticketd/store/storedriver"
)

// ErrNoArtifact is returned by Artifact for a path the ticket has none at.
var ErrNoArtifact = errors.New("no such artifact")

// Artifact is one file of a ticket's results folder (report.md, patch,
// attempt-<n>/stop-reason, ...), kept in the database so that ticketctl on any node shows
// what the node that worked the ticket wrote on its own disk.
type Artifact struct {
	Path      string    `json:"path"`
	Size      int64     `json:"size"`
	UpdatedAt time.Time `json:"updated_at"`
}

// SaveArtifact stores content as the ticket's file at p (a relative, slash-separated path
// inside its results folder), replacing what was there.
func (s *Store) SaveArtifact(ctx context.Context, ticketID int64, p string, content []byte) error {
	if err := checkArtifactPath(ticketID, p); err != nil {
		return err
	}
	err := s.write(ctx, "save artifact", func(ctx context.Context, tx storedriver.Tx) error {
		return s.saveArtifactTx(ctx, tx, ticketID, p, content)
	})
	if err != nil {
		return fmt.Errorf("save artifact %s of ticket %d: %w", p, ticketID, err)
	}
	return nil
}

// checkArtifactPath refuses a path outside the ticket's results folder.
func checkArtifactPath(ticketID int64, p string) error {
	clean := path.Clean(p)
	if p == "" || clean != p || path.IsAbs(p) || clean == ".." || strings.HasPrefix(clean, "../") {
		return fmt.Errorf("save artifact %q of ticket %d: want a relative path inside the results folder, like report.md or attempt-1/patch", p, ticketID)
	}
	return nil
}

// saveArtifactTx stores the ticket's file at p in the write transaction tx (p checked by
// checkArtifactPath).
func (s *Store) saveArtifactTx(ctx context.Context, tx storedriver.Tx, ticketID int64, p string, content []byte) error {
	if content == nil {
		content = []byte{}
	}
	_, err := tx.Exec(ctx, s.q.SaveArtifact, storedriver.SaveArtifactParams{TicketID: ticketID, Path: p, Content: content, UpdatedAt: s.nowMS()}.Args()...)
	return err
}

// Artifacts lists the ticket's stored files, by path.
func (s *Store) Artifacts(ctx context.Context, ticketID int64) ([]Artifact, error) {
	rows, err := s.rd.Query(ctx, s.q.Artifacts, ticketID)
	if err != nil {
		return nil, fmt.Errorf("artifacts of ticket %d: %w", ticketID, err)
	}
	defer rows.Close()
	out := []Artifact{}
	for rows.Next() {
		var a Artifact
		var at sql.NullInt64
		if err := rows.Scan(&a.Path, &a.Size, &at); err != nil {
			return nil, fmt.Errorf("artifacts of ticket %d: %w", ticketID, err)
		}
		a.UpdatedAt = fromMS(at)
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("artifacts of ticket %d: %w", ticketID, err)
	}
	return out, nil
}

// Artifact returns the content of the ticket's file at p (ErrNoArtifact when none).
func (s *Store) Artifact(ctx context.Context, ticketID int64, p string) ([]byte, error) {
	var content []byte
	err := s.rd.QueryRow(ctx, s.q.Artifact, ticketID, p).Scan(&content)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("artifact %s of ticket %d: %w", p, ticketID, ErrNoArtifact)
	}
	if err != nil {
		return nil, fmt.Errorf("artifact %s of ticket %d: %w", p, ticketID, err)
	}
	return content, nil
}
