package store

import (
	"context"
	"fmt"
)

// A ticket's events form a chain from the ticket row (last_event_id, the newest event) back
// through events.prev_id, so no index on events.ticket_id costs every transition a WAL page.
// Appending an event takes two steps, both in the write transaction:
//
//  1. the UPDATE that makes the transition also reserves the event's id (reserveEvent in
//     its SET list): the ticket's head moves to one past the newest event of any ticket and
//     the old head is kept in prev_event_id;
//  2. appendEvent writes the event under the reserved id, linked to the old head.
//
// Folding the reservation into the transition's own UPDATE is what makes an event cheap:
// the v10 trigger that moved the head after each insert rewrote the ticket row a second time
// (dropping it took a one-worker queue cycle from 672k to about 630k instructions). The chain
// still cannot fork or skip: an event without a reservation collides with the head (primary
// key); a reservation is made only on top of a head that exists, so one left without its
// event stops the ticket's next append; CHECK (prev_id < id) refuses loops; the foreign key
// refuses an event of no ticket. Writes that change no other column reserve with event, in a
// statement of their own.

// reserveEvent is the SET fragment of a transition UPDATE that reserves its event's id. A
// head that does not exist (a reservation whose event was never written) reserves nothing
// (NULL), and appendEvent then refuses to write.
const reserveEvent = `prev_event_id = last_event_id, last_event_id = CASE
	WHEN last_event_id IS NULL OR EXISTS (SELECT 1 FROM events e WHERE e.id = tickets.last_event_id)
	THEN (SELECT coalesce(max(id), 0) + 1 FROM events) END`

// appendQuery writes the reserved event of ticket ?1; attemptActor are its attempt and
// actor. It reads no events: an INSERT that reads its own table first copies the rows into
// a temporary b-tree.
func appendQuery(attemptActor string) string {
	return `INSERT INTO events (id, ticket_id, at, kind, from_state, to_state, reason, attempt, actor, prev_id)
		SELECT last_event_id, id, ?2, ?3, ?4, ?5, ?6, ` + attemptActor + `, prev_event_id FROM tickets
		WHERE id = ?1 AND last_event_id IS NOT NULL`
}

var (
	appendWith    = appendQuery(`?7, ?8`)
	appendFromRow = appendQuery(`attempts, lease_owner`)
)

// appendEvent writes the event the last UPDATE of ticket id reserved (see reserveEvent).
func (s *Store) appendEvent(ctx context.Context, tx *wtx, id, at int64, kind string, from, to State, attempt int, actor, reason string) error {
	return s.appendReserved(ctx, tx, appendWith, id, at, kind, from, to, reason, attempt, actor)
}

// appendEventFromRow is appendEvent with the attempt and actor the transition left in the
// row (attempts, lease_owner).
func (s *Store) appendEventFromRow(ctx context.Context, tx *wtx, id, at int64, kind string, from, to State, reason string) error {
	return s.appendReserved(ctx, tx, appendFromRow, id, at, kind, from, to, reason)
}

func (s *Store) appendReserved(ctx context.Context, tx *wtx, query string, id, at int64, kind string, from, to State, reason string, more ...any) error {
	res, err := s.exec(ctx, tx, query, append([]any{id, at, kind, string(from), string(to), reason}, more...)...)
	if err != nil {
		return fmt.Errorf("append %s event to ticket %d: %w", kind, id, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("append %s event to ticket %d: %w", kind, id, err)
	} else if n != 1 {
		return fmt.Errorf("append %s event to ticket %d: the ticket does not exist, or the event before it was reserved but never written", kind, id)
	}
	return nil
}

// event reserves and appends an event for a write that changes nothing else in the row
// (a note, a publication, a settled lease).
func (s *Store) event(ctx context.Context, tx *wtx, id, at int64, kind string, from, to State, attempt int, actor, reason string) error {
	if _, err := s.exec(ctx, tx, `UPDATE tickets SET `+reserveEvent+` WHERE id = ?`, id); err != nil {
		return fmt.Errorf("reserve %s event for ticket %d: %w", kind, id, err)
	}
	return s.appendEvent(ctx, tx, id, at, kind, from, to, attempt, actor, reason)
}
