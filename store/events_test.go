package store

import (
	"context"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/store/storedriver"
)

// TestEventChainRefusesForksAndGaps: an event the store appends without a reservation would
// fork the chain and collides with the head instead; a reservation left without its event
// stops the ticket's next append rather than let the chain skip; either way the transaction
// rolls back and the ticket's history stays whole.
func TestEventChainRefusesForksAndGaps(t *testing.T) {
	forEachEngine(t, testEventChainRefusesForksAndGaps)
}

func testEventChainRefusesForksAndGaps(t *testing.T, e engine) {
	b := e.setup(t)
	id := b.enqueue(t, "1")
	if err := b.s.AddNote(b.ctx, id, "me", "second"); err != nil {
		t.Fatal(err)
	}
	appendOnly := func(ctx context.Context, tx storedriver.Tx) error {
		return b.s.writeEvent(ctx, tx, eventWrite{Ticket: id, At: b.s.nowMS(), Kind: EventNote, From: StateQueued, To: StateQueued, Actor: "me", Reason: "unreserved"})
	}
	if err := b.s.write(b.ctx, "append without a reservation", appendOnly); err == nil {
		t.Errorf("append without a reservation: %v; want the primary key to refuse it", err)
	}
	reserveOnly := func(ctx context.Context, tx storedriver.Tx) error {
		_, err := tx.Exec(ctx, b.s.q.ReserveEvent, id)
		return err
	}
	gap := func(ctx context.Context, tx storedriver.Tx) error {
		if err := reserveOnly(ctx, tx); err != nil {
			return err
		}
		return b.s.writeEvent(ctx, tx, eventWrite{Ticket: id, At: b.s.nowMS(), Kind: EventNote, From: StateQueued, To: StateQueued, Actor: "me", Reason: "after a gap", Reserve: true})
	}
	// SQLite's reservation refuses to build on an unwritten head; PostgreSQL's commit refuses
	// the head left without its event (the deferred trigger tickets_head_written).
	err := b.s.write(b.ctx, "append over a gap", gap)
	if err == nil || !strings.Contains(err.Error(), "reserved but never written") {
		t.Errorf("append over an unwritten reservation: %v; want it refused", err)
	}
	evs, err := b.s.Events(b.ctx, id)
	if err != nil || len(evs) != 2 || evs[0].Kind != "enqueued" || evs[1].Reason != "second" {
		t.Errorf("events = %+v, %v; want enqueued and the note, nothing else", evs, err)
	}
	if err := b.s.AddNote(b.ctx, id, "me", "third"); err != nil {
		t.Fatalf("a note after the refused writes: %v", err)
	}
	if evs, err := b.s.Events(b.ctx, id); err != nil || len(evs) != 3 || evs[2].Reason != "third" || evs[2].ID <= evs[1].ID {
		t.Errorf("events = %+v, %v; want the third note last", evs, err)
	}
}
