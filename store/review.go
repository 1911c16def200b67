package store

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/ticketd/ticketd/store/storedriver"
)

// Review is one checker review round of an attempt: how many findings the pipeline kept
// and how many it dropped (evidence not found in the diff or the changed files, a finding
// outside the schema, or a new finding in round 2, which may only confirm or withdraw).
type Review struct {
	TicketID int64     `json:"ticket_id"`
	Attempt  int       `json:"attempt"`
	Round    int       `json:"round"`
	Kept     int       `json:"kept"`
	Dropped  int       `json:"dropped"`
	At       time.Time `json:"at"`
	// Reviewer is the checker's angle (correctness, security, performance); one row per
	// reviewer and round.
	Reviewer string `json:"reviewer"`
}

// RecordReview appends one review round.
func (s *Store) RecordReview(ctx context.Context, r Review) error {
	at := r.At
	if at.IsZero() {
		at = s.now()
	}
	err := s.write(ctx, "record review", func(ctx context.Context, tx storedriver.Tx) error {
		_, err := tx.Exec(ctx, s.q.InsertReview, storedriver.InsertReviewParams{TicketID: r.TicketID, Attempt: r.Attempt,
			Round: r.Round, Kept: r.Kept, Dropped: r.Dropped, At: at.UnixMilli(), Reviewer: cmp.Or(r.Reviewer, "correctness")}.Args()...)
		return err
	})
	if err != nil {
		return fmt.Errorf("record review round %d of ticket %d: %w", r.Round, r.TicketID, err)
	}
	return nil
}

// Reviews returns a ticket's review rounds in order.
func (s *Store) Reviews(ctx context.Context, ticketID int64) ([]Review, error) {
	rows, err := s.rd.Query(ctx, s.q.Reviews, ticketID)
	if err != nil {
		return nil, fmt.Errorf("reviews of ticket %d: %w", ticketID, err)
	}
	defer rows.Close()
	out := []Review{}
	for rows.Next() {
		var r Review
		var at int64
		if err := rows.Scan(&r.TicketID, &r.Attempt, &r.Round, &r.Kept, &r.Dropped, &at, &r.Reviewer); err != nil {
			return nil, fmt.Errorf("reviews of ticket %d: %w", ticketID, err)
		}
		r.At = time.UnixMilli(at).UTC()
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reviews of ticket %d: %w", ticketID, err)
	}
	return out, nil
}
