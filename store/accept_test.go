package store

import (
	"errors"
	"testing"
)

// TestAccept: an escalated ticket's kept change becomes its fix once, recorded as accepted by
// the operator; a second accept, or one of a ticket in another state, changes nothing.
func TestAccept(t *testing.T) { forEachEngine(t, testAccept) }

func testAccept(t *testing.T, e engine) {
	b := e.setup(t)
	id := b.enqueue(t, "1")
	queued := b.enqueue(t, "2")
	l := b.claim(t, "w1")
	if _, err := b.s.Fail(b.ctx, id, l.Token, Failure{Kind: FailHuman, Reason: "changes tests the base passed", Branch: "ticketd/1-x-attempt-1"}); err != nil {
		t.Fatal(err)
	}
	a := Accepted{Branch: "ticketd/1-x", ResultDir: "/r/1", From: "ticketd/1-x-attempt-1"}
	if err := b.s.Accept(b.ctx, queued, "ticketctl:alice", a); !errors.Is(err, ErrInvalidTransition) {
		t.Errorf("accept a queued ticket: %v; want ErrInvalidTransition", err)
	}
	if err := b.s.Accept(b.ctx, id, "ticketctl:alice", a); err != nil {
		t.Fatalf("Accept: %v", err)
	}
	got, _ := b.s.Get(b.ctx, id)
	if got.State != StateDone || got.Branch != "ticketd/1-x" || got.ResultDir != "/r/1" || got.FinishedAt.IsZero() {
		t.Errorf("after accept: state %s branch %q result %q finished %v", got.State, got.Branch, got.ResultDir, got.FinishedAt)
	}
	if err := b.s.Accept(b.ctx, id, "ticketctl:bob", a); !errors.Is(err, ErrInvalidTransition) {
		t.Errorf("second accept: %v; want ErrInvalidTransition", err)
	}
	who, err := b.s.AcceptedBy(b.ctx, id)
	if err != nil || who != "ticketctl:alice" {
		t.Errorf("AcceptedBy = %q, %v; want ticketctl:alice", who, err)
	}
	accepted := 0
	for _, k := range eventKinds(t, b, id) {
		if k == string(EventAccepted) {
			accepted++
		}
	}
	if accepted != 1 {
		t.Errorf("%d accepted events, want 1", accepted)
	}
	if err := b.s.Accept(b.ctx, id, "x", Accepted{}); err == nil {
		t.Error("accept without a branch passed")
	}
}
