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
//  2. writeEvent writes the event under the reserved id, linked to the old head.
//
// The chain cannot fork or skip: an event without a reservation collides with the head
// (primary key); a reservation left without its event stops the ticket's next append
// (SQLite reserves only on top of a head that exists) or its own commit (PostgreSQL's
// deferred tickets_head_written); CHECK (prev_id < id) refuses loops.
// Every statement that writes an event takes its ticket id from the ticket row it updates
// or reads, and ticket rows are never deleted (SQLite's foreign key and PostgreSQL's
// trigger refuse it). Writes that change no other column reserve in a statement of their
// own (eventWrite.Reserve).

// eventWrite is one entry for a ticket's history, the one way the store writes an event
// (a fresh claim's event aside: the engine writes it with the lease, see ClaimParams.Event).
type eventWrite struct {
	Ticket   int64
	At       int64 // unix milliseconds
	Kind     EventKind
	From, To State
	Attempt  int
	Actor    string
	Reason   string
	// FromRow takes the attempt and actor from the row the transition just wrote
	// (attempts, lease_owner) instead of Attempt and Actor.
	FromRow bool
	// Reserve reserves the event's id first, for a write that changes nothing else in the
	// row (a note, a publication, a settled lease); otherwise the transition's UPDATE did.
	Reserve bool
}

// writeEvent appends e to its ticket's chain, in the write transaction tx.
func (s *Store) writeEvent(ctx context.Context, tx storedriver.Tx, e eventWrite) error {
	if e.Reserve {
		if _, err := tx.Exec(ctx, s.q.ReserveEvent, e.Ticket); err != nil {
			return fmt.Errorf("reserve %s event for ticket %d: %w", e.Kind, e.Ticket, err)
		}
	}
	p := storedriver.AppendEventParams{TicketID: e.Ticket, At: e.At, Kind: string(e.Kind),
		FromState: string(e.From), ToState: string(e.To), Reason: e.Reason, Attempt: e.Attempt, Actor: e.Actor}
	query, args := s.q.AppendEvent, p.Args()
	if e.FromRow {
		query, args = s.q.AppendEventFromRow, p.FromRowArgs()
	}
	n, err := tx.Exec(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("append %s event to ticket %d: %w", e.Kind, e.Ticket, err)
	}
	if n != 1 {
		return fmt.Errorf("append %s event to ticket %d: the ticket does not exist, or the event before it was reserved but never written", e.Kind, e.Ticket)
	}
	return nil
}
