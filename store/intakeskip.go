package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ticketd/ticketd/store/storedriver"
)

// IntakeSkip is an issue file intake could not take in, and why: what an operator must fix
// (ticketctl escalations, the console), not only a line in the log.
type IntakeSkip struct {
	Source string    `json:"source"`
	Path   string    `json:"path"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// SetIntakeSkips replaces what source's latest scan skipped: a file fixed since is no longer
// listed.
func (s *Store) SetIntakeSkips(ctx context.Context, source string, skips []IntakeSkip) error {
	err := s.write(ctx, "record intake skips", func(ctx context.Context, tx storedriver.Tx) error {
		if _, err := tx.Exec(ctx, s.q.ClearIntakeSkips, source); err != nil {
			return err
		}
		now := s.nowMS()
		for _, k := range skips {
			if _, err := tx.Exec(ctx, s.q.InsertIntakeSkip, storedriver.InsertIntakeSkipParams{Source: source, Path: k.Path,
				Reason: truncate(CleanText(k.Reason), 2000), At: now}.Args()...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record the issue files %s skipped: %w", source, err)
	}
	return nil
}

// IntakeSkips returns the issue files the latest scan of every source skipped.
func (s *Store) IntakeSkips(ctx context.Context) ([]IntakeSkip, error) {
	rows, err := s.rd.Query(ctx, s.q.IntakeSkips)
	if err != nil {
		return nil, fmt.Errorf("skipped issue files: %w", err)
	}
	defer rows.Close()
	out := []IntakeSkip{}
	for rows.Next() {
		var k IntakeSkip
		var at sql.NullInt64
		if err := rows.Scan(&k.Source, &k.Path, &k.Reason, &at); err != nil {
			return nil, fmt.Errorf("skipped issue files: %w", err)
		}
		k.At = fromMS(at)
		out = append(out, k)
	}
	return out, rows.Err()
}

// TicketBySource returns the id of the ticket of (source, external id), 0 when the queue
// has none.
func (s *Store) TicketBySource(ctx context.Context, source, externalID string) (int64, error) {
	var id int64
	err := s.rd.QueryRow(ctx, s.q.TicketBySource, source, externalID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("ticket of %s/%s: %w", source, externalID, err)
	}
	return id, nil
}
