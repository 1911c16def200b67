package store

import (
	"context"
	"fmt"

	"github.com/ticketd/ticketd/store/storedriver"
)

// A ticket's events form a chain from the ticket row (last_event_id, the newest event) back
// through events.prev_id, so no index on events.ticket_id costs every transition a write.
// Appending an event takes two steps, both in the write transaction:
//
//  1. the UPDATE that makes the transition also reserves the event's id (the engine's
//     SQL.ReserveEvent fragment in its SET list): the ticket's head moves to a fresh event
//     id and the old head is kept in prev_event_id;
//  2. appendEvent writes the event under the reserved id, linked to the old head.
//
// The chain cannot fork or skip: an event without a reservation collides with the head
// (primary key); a reservation is made only on top of a head that exists, so one left
// without its event stops the ticket's next append; CHECK (prev_id < id) refuses loops; the
// foreign key refuses an event of no ticket. Writes that change no other column reserve with
// event, in a statement of their own.

// appendEvent writes the event the last UPDATE of ticket id reserved.
func (s *Store) appendEvent(ctx context.Context, tx storedriver.Tx, id, at int64, kind string, from, to State, attempt int, actor, reason string) error {
	return s.appendReserved(ctx, tx, s.q.AppendEvent, id, at, kind, from, to, reason, attempt, actor)
}

// appendEventFromRow is appendEvent with the attempt and actor the transition left in the
// row (attempts, lease_owner).
func (s *Store) appendEventFromRow(ctx context.Context, tx storedriver.Tx, id, at int64, kind string, from, to State, reason string) error {
	return s.appendReserved(ctx, tx, s.q.AppendEventFromRow, id, at, kind, from, to, reason)
}

func (s *Store) appendReserved(ctx context.Context, tx storedriver.Tx, query string, id, at int64, kind string, from, to State, reason string, more ...any) error {
	n, err := tx.Exec(ctx, query, append([]any{id, at, kind, string(from), string(to), reason}, more...)...)
	if err != nil {
		return fmt.Errorf("append %s event to ticket %d: %w", kind, id, err)
	}
	if n != 1 {
		return fmt.Errorf("append %s event to ticket %d: the ticket does not exist, or the event before it was reserved but never written", kind, id)
	}
	return nil
}

// event reserves and appends an event for a write that changes nothing else in the row
// (a note, a publication, a settled lease).
func (s *Store) event(ctx context.Context, tx storedriver.Tx, id, at int64, kind string, from, to State, attempt int, actor, reason string) error {
	if _, err := tx.Exec(ctx, s.q.ReserveEvent, id); err != nil {
		return fmt.Errorf("reserve %s event for ticket %d: %w", kind, id, err)
	}
	return s.appendEvent(ctx, tx, id, at, kind, from, to, attempt, actor, reason)
}
