package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/ticketd/ticketd/store/storedriver"
)

// OutputKind is what ticketd published upstream for a ticket.
type OutputKind string

// The output kinds: a pull request for a done ticket, a comment for an escalated one.
const (
	OutputPullRequest OutputKind = "pull_request"
	OutputComment     OutputKind = "comment"
)

// Output is one thing published for a ticket.
type Output struct {
	TicketID  int64      `json:"ticket_id"`
	Kind      OutputKind `json:"kind"`
	URL       string     `json:"url"`
	CreatedAt time.Time  `json:"created_at"`
}

// RecordOutput remembers that kind was published for ticket id at url, and appends a
// "published" event. Recording the same kind twice keeps the first and is not an error.
func (s *Store) RecordOutput(ctx context.Context, id int64, kind OutputKind, url string) error {
	err := s.write(ctx, "record output", func(ctx context.Context, tx storedriver.Tx) error {
		now := s.nowMS()
		st, attempts, err := s.currentState(ctx, tx, id)
		if err != nil {
			return err
		}
		n, err := tx.Exec(ctx, s.q.RecordOutput, id, string(kind), url, now)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		return s.writeEvent(ctx, tx, eventWrite{Ticket: id, At: now, Kind: EventPublished, From: st, To: st, Attempt: attempts, Actor: "github", Reason: string(kind) + " " + url, Reserve: true})
	})
	if err != nil {
		return fmt.Errorf("record %s for ticket %d: %w", kind, id, err)
	}
	return nil
}

// Unpublished returns the tickets of source that finished in state (done or escalated)
// and have no output of kind yet, oldest first, at most limit.
func (s *Store) Unpublished(ctx context.Context, source string, state State, kind OutputKind, limit int) ([]Ticket, error) {
	rows, err := s.rd.Query(ctx, s.q.Unpublished, source, string(state), string(kind), limit)
	if err != nil {
		return nil, fmt.Errorf("unpublished %s tickets of %s: %w", state, source, err)
	}
	defer rows.Close()
	var out []Ticket
	for rows.Next() {
		t, err := scanTicket(rows)
		if err != nil {
			return nil, fmt.Errorf("unpublished %s tickets of %s: %w", state, source, err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("unpublished %s tickets of %s: %w", state, source, err)
	}
	return out, nil
}

// Outputs returns what was published for ticket id.
func (s *Store) Outputs(ctx context.Context, id int64) ([]Output, error) {
	rows, err := s.rd.Query(ctx, s.q.Outputs, id)
	if err != nil {
		return nil, fmt.Errorf("outputs of ticket %d: %w", id, err)
	}
	defer rows.Close()
	out := []Output{}
	for rows.Next() {
		var o Output
		var at sql.NullInt64
		if err := rows.Scan(&o.TicketID, &o.Kind, &o.URL, &at); err != nil {
			return nil, fmt.Errorf("outputs of ticket %d: %w", id, err)
		}
		o.CreatedAt = fromMS(at)
		out = append(out, o)
	}
	return out, rows.Err()
}
