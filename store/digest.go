package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/ticketd/ticketd/store/storedriver"
)

// DigestDelivery is how a night's morning digest went: delivered, or why not (the webhook's
// answer, a time-out), for the page and ticketctl nights to show. The webhook's address is
// never part of it: it may carry a secret.
type DigestDelivery struct {
	RunID int64     `json:"run_id"`
	At    time.Time `json:"at"`
	OK    bool      `json:"ok"`
	Error string    `json:"error,omitempty"`
}

// RecordDigest records the delivery of night d.RunID's digest, replacing an earlier one.
func (s *Store) RecordDigest(ctx context.Context, d DigestDelivery) error {
	ok := 0
	if d.OK {
		ok = 1
	}
	err := s.write(ctx, "record digest", func(ctx context.Context, tx storedriver.Tx) error {
		_, err := tx.Exec(ctx, s.q.Console.RecordDigest, storedriver.RecordDigestParams{RunID: d.RunID, At: s.nowMS(), OK: ok,
			Error: truncate(CleanText(d.Error), 2000)}.Args()...)
		return err
	})
	if err != nil {
		return fmt.Errorf("record the digest of night %d: %w", d.RunID, err)
	}
	return nil
}

// Digests returns the recorded digest deliveries, by night.
func (s *Store) Digests(ctx context.Context) (map[int64]DigestDelivery, error) {
	rows, err := s.rd.Query(ctx, s.q.Console.Digests)
	if err != nil {
		return nil, fmt.Errorf("digests: %w", err)
	}
	defer rows.Close()
	out := map[int64]DigestDelivery{}
	for rows.Next() {
		var d DigestDelivery
		var at sql.NullInt64
		var ok int
		if err := rows.Scan(&d.RunID, &at, &ok, &d.Error); err != nil {
			return nil, fmt.Errorf("digests: %w", err)
		}
		d.At, d.OK = fromMS(at), ok == 1
		out[d.RunID] = d
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("digests: %w", err)
	}
	return out, nil
}
