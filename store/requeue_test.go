package store

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestRequeueKeepsHistory: a requeue never restarts the attempt numbers. An escalated ticket
// gets a fresh budget of max attempts numbered on from its last; a done ticket is requeued
// only when the requeue says so, and its fix branch is kept on record; the note reaches the
// ticket's requeues (which the maker reads) and its events.
func TestRequeueKeepsHistory(t *testing.T) { forEachEngine(t, testRequeueKeepsHistory) }

func testRequeueKeepsHistory(t *testing.T, e engine) {
	b := e.setup(t)
	fail := func(id int64, wantAttempt int, want State) {
		t.Helper()
		l := b.claim(t, "w")
		if l.Attempt != wantAttempt || l.Ticket.ID != id {
			t.Fatalf("claim: ticket %d attempt %d; want ticket %d attempt %d", l.Ticket.ID, l.Attempt, id, wantAttempt)
		}
		st, err := b.s.Fail(b.ctx, id, l.Token, Failure{Kind: FailFix, Reason: "tests fail"})
		if err != nil || st != want {
			t.Fatalf("fail attempt %d: %s, %v; want %s", wantAttempt, st, err, want)
		}
		b.clock.Advance(time.Hour)
	}
	id := b.enqueue(t, "esc", func(n *NewTicket) { n.MaxAttempts = 2 })
	fail(id, 1, StateQueued)
	fail(id, 2, StateEscalated)
	if err := b.s.RequeueTicket(b.ctx, id, "alice", RequeueOptions{Note: "the bug is in the rounding, not the parser"}); err != nil {
		t.Fatal(err)
	}
	fail(id, 3, StateQueued)    // numbered on, not 1 again
	fail(id, 4, StateEscalated) // a fresh budget of two
	rq, err := b.s.Requeues(b.ctx, id)
	if err != nil || len(rq) != 1 || rq[0].Note != "the bug is in the rounding, not the parser" || rq[0].Attempts != 2 || rq[0].FromState != StateEscalated || rq[0].Actor != "alice" {
		t.Fatalf("requeues = %+v, %v; want one by alice from escalated after 2 attempts, with the note", rq, err)
	}
	evs, _ := b.s.Events(b.ctx, id)
	var requeued Event
	for _, ev := range evs {
		if ev.Kind == "requeued" {
			requeued = ev
		}
	}
	if !strings.Contains(requeued.Reason, "attempts go on from 3") || !strings.Contains(requeued.Reason, "rounding") {
		t.Errorf("requeued event %q; want it to say attempts go on from 3, and the note", requeued.Reason)
	}

	done := b.enqueue(t, "done")
	l := b.claim(t, "w")
	if err := b.s.Complete(b.ctx, done, l.Token, Result{Branch: "ticketd/2-fix", ResultDir: "/r/2"}); err != nil {
		t.Fatal(err)
	}
	if err := b.s.Requeue(b.ctx, done, "bob", false); !errors.Is(err, ErrConfirmDone) {
		t.Fatalf("requeue done without confirmation: %v; want ErrConfirmDone", err)
	}
	if got, _ := b.s.Get(b.ctx, done); got.State != StateDone {
		t.Fatalf("refused requeue changed the ticket: %s", got.State)
	}
	if err := b.s.RequeueTicket(b.ctx, done, "bob", RequeueOptions{Done: true}); err != nil {
		t.Fatal(err)
	}
	got, _ := b.s.Get(b.ctx, done)
	if got.State != StateQueued || got.Attempts != 1 || got.Branch != "ticketd/2-fix" || got.AttemptLimit() != 1+DefaultMaxAttempts {
		t.Errorf("requeued done ticket: %s, %d attempts, branch %q, limit %d; want queued, 1 attempt kept, its branch on record, limit %d",
			got.State, got.Attempts, got.Branch, got.AttemptLimit(), 1+DefaultMaxAttempts)
	}
	kept, err := b.s.KeptBranches(b.ctx)
	if err != nil || kept["ticketd/2-fix"] != done {
		t.Errorf("kept branches = %v, %v; want ticketd/2-fix of ticket %d", kept, err, done)
	}
	if l := b.claim(t, "w"); l.Attempt != 2 {
		t.Errorf("next attempt of the requeued done ticket: %d; want 2", l.Attempt)
	}
	if err := b.s.RequeueTicket(b.ctx, done, "bob", RequeueOptions{Note: strings.Repeat("x", maxNote+1), Force: true}); err == nil {
		t.Error("a note past the bound was taken")
	}
}

// TestEnqueueCleansControlCharacters: a NUL or another control character in an issue's
// title or body never reaches the queue (git refuses a NUL in a commit message; PostgreSQL
// refuses it in text); tabs, newlines and Windows line ends stay; the ticket says what was
// removed.
func TestEnqueueCleansControlCharacters(t *testing.T) {
	forEachEngine(t, testEnqueueCleansControlCharacters)
}

func testEnqueueCleansControlCharacters(t *testing.T, e engine) {
	tests := []struct {
		name, title, body   string
		wantTitle, wantBody string
		wantNote            string // "" for none
	}{
		{"nul in title", "Average\x00 crashes", "body", "Average crashes", "body", "title held control characters (1 NUL)"},
		{"escape in body", "t", "see \x1b[31mred\x1b[0m\tand\nmore", "t", "see [31mred[0m\tand\nmore", "body held control characters (2 ESC)"},
		{"windows line ends stay quiet", "t", "a\r\nb\r\n", "t", "a\nb\n", ""},
		{"clean text untouched", "Plain title", "line one\n\tindented", "Plain title", "line one\n\tindented", ""},
	}
	b := e.setup(t)
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id, created, err := b.s.Enqueue(b.ctx, NewTicket{Source: "dir", ExternalID: string(rune('a' + i)), Title: tc.title, Body: tc.body})
			if err != nil || !created {
				t.Fatalf("Enqueue: %v, %v", created, err)
			}
			got, _ := b.s.Get(b.ctx, id)
			if got.Title != tc.wantTitle || got.Body != tc.wantBody {
				t.Errorf("stored title %q body %q; want %q and %q", got.Title, got.Body, tc.wantTitle, tc.wantBody)
			}
			evs, _ := b.s.Events(b.ctx, id)
			note := ""
			for _, ev := range evs {
				if ev.Kind == "note" {
					note = ev.Reason
				}
			}
			if (tc.wantNote == "") != (note == "") || !strings.Contains(note, tc.wantNote) {
				t.Errorf("note %q; want one containing %q", note, tc.wantNote)
			}
		})
	}
}

// TestIntakeSkips: a scan's skipped files replace the source's earlier list.
func TestIntakeSkips(t *testing.T) { forEachEngine(t, testIntakeSkips) }

func testIntakeSkips(t *testing.T, e engine) {
	b := e.setup(t)
	if err := b.s.SetIntakeSkips(b.ctx, "dir:/a", []IntakeSkip{{Path: "x.md", Reason: "no title"}, {Path: "y.md", Reason: "bad\x00yaml"}}); err != nil {
		t.Fatal(err)
	}
	if err := b.s.SetIntakeSkips(b.ctx, "dir:/b", []IntakeSkip{{Path: "z.md", Reason: "unknown repo"}}); err != nil {
		t.Fatal(err)
	}
	if err := b.s.SetIntakeSkips(b.ctx, "dir:/a", []IntakeSkip{{Path: "y.md", Reason: "still bad"}}); err != nil {
		t.Fatal(err)
	}
	got, err := b.s.IntakeSkips(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, k := range got {
		paths = append(paths, k.Source+" "+k.Path+": "+k.Reason)
	}
	want := []string{"dir:/a y.md: still bad", "dir:/b z.md: unknown repo"}
	if !equal(paths, want) {
		t.Errorf("skips = %v; want %v", paths, want)
	}
}
