package store

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestDuplicateLinkCloseUnlink(t *testing.T) { forEachEngine(t, testDuplicateLinkCloseUnlink) }

// testDuplicateLinkCloseUnlink: a duplicate waits outside the queue, visible with its link,
// and is closed done with the fix of the ticket worked for it; an operator's unlink puts
// it back for good; nothing is linked across repositories.
func testDuplicateLinkCloseUnlink(t *testing.T, e engine) {
	b := e.setup(t)
	first := b.enqueue(t, "1")
	dup := b.enqueue(t, "2")
	other := b.enqueue(t, "3", func(nt *NewTicket) { nt.Repo = "elsewhere" })
	if _, err := b.s.LinkDuplicate(b.ctx, other, first, "same frame"); !errors.Is(err, ErrInvalidTransition) {
		t.Errorf("link across repositories = %v; want ErrInvalidTransition", err)
	}
	if linked, err := b.s.LinkDuplicate(b.ctx, dup, first, "same frame calc.py:divide"); err != nil || !linked {
		t.Fatalf("LinkDuplicate = %v, %v", linked, err)
	}
	if _, err := b.s.LinkDuplicate(b.ctx, first, dup, "x"); !errors.Is(err, ErrInvalidTransition) {
		t.Errorf("link to a duplicate = %v; want ErrInvalidTransition", err)
	}
	tk, _ := b.s.Get(b.ctx, dup)
	if tk.State != StateDuplicate || !strings.Contains(tk.Reason, "duplicate of #1") {
		t.Errorf("duplicate: %s %q; want duplicate, reason naming #1", tk.State, tk.Reason)
	}
	if l, err := b.s.DuplicateOf(b.ctx, dup); err != nil || l.Of != first || l.Unlinked {
		t.Errorf("DuplicateOf = %+v, %v", l, err)
	}
	l := b.claim(t, "w1")
	if l.Ticket.ID != first {
		t.Fatalf("claimed %d; want %d", l.Ticket.ID, first)
	}
	if l2 := b.claim(t, "w2"); l2.Ticket.ID != other {
		t.Errorf("second claim got %d; want %d (the duplicate is not claimed)", l2.Ticket.ID, other)
	}
	if _, err := b.s.Claim(b.ctx, "w3", time.Minute); !errors.Is(err, ErrNoTicket) {
		t.Errorf("third claim: %v; want ErrNoTicket", err)
	}
	if s, err := b.s.SettleDuplicates(b.ctx, first); err != nil || len(s.Closed)+len(s.Requeued) != 0 {
		t.Errorf("settle while running = %+v, %v; want nothing", s, err)
	}
	if err := b.s.Complete(b.ctx, first, l.Token, Result{Branch: "ticketd/1", Summary: "fixed divide"}); err != nil {
		t.Fatal(err)
	}
	s, err := b.s.SettleDuplicates(b.ctx, first)
	if err != nil || len(s.Closed) != 1 || s.Closed[0].ID != dup {
		t.Fatalf("SettleDuplicates = %+v, %v; want %d closed", s, err, dup)
	}
	if c := s.Closed[0]; c.State != StateDone || c.Branch != "ticketd/1" || c.FinishedAt.IsZero() {
		t.Errorf("closed duplicate %s branch %q; want done with ticketd/1", c.State, c.Branch)
	}
	if kinds := strings.Join(eventKinds(t, b, dup), ","); kinds != "enqueued,duplicate,closed_with" {
		t.Errorf("events %s", kinds)
	}

	// Unlink: back in the queue, never linked again.
	d2 := b.enqueue(t, "4")
	d3 := b.enqueue(t, "5")
	if linked, err := b.s.LinkDuplicate(b.ctx, d3, d2, "similar title"); err != nil || !linked {
		t.Fatalf("LinkDuplicate = %v, %v", linked, err)
	}
	if err := b.s.Unlink(b.ctx, d2, "op"); !errors.Is(err, ErrNotDuplicate) {
		t.Errorf("unlink of a queued ticket = %v; want ErrNotDuplicate", err)
	}
	if err := b.s.Unlink(b.ctx, d3, "op"); err != nil {
		t.Fatal(err)
	}
	if tk, _ := b.s.Get(b.ctx, d3); tk.State != StateQueued {
		t.Errorf("after unlink: %s; want queued", tk.State)
	}
	if linked, err := b.s.LinkDuplicate(b.ctx, d3, d2, "similar title"); err != nil || linked {
		t.Errorf("relink after unlink = %v, %v; want left alone", linked, err)
	}

	// The worked ticket escalates: its duplicates are worked on their own.
	d4 := b.enqueue(t, "6")
	if _, err := b.s.LinkDuplicate(b.ctx, d4, d2, "same test"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.s.RequestCancel(b.ctx, d2, "op", "not wanted"); err != nil {
		t.Fatal(err)
	}
	if s, err := b.s.SettleDuplicates(b.ctx, d2); err != nil || len(s.Requeued) != 1 || s.Requeued[0] != d4 {
		t.Errorf("settle after cancel = %+v, %v; want %d requeued", s, err, d4)
	}
	if tk, _ := b.s.Get(b.ctx, d4); tk.State != StateQueued {
		t.Errorf("duplicate of a cancelled ticket: %s; want queued", tk.State)
	}
}
