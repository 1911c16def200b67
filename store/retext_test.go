package store

import (
	"slices"
	"strings"
	"testing"
)

func TestRetext(t *testing.T) { forEachEngine(t, testRetext) }

// testRetext: an issue edited at its source reaches its ticket while no worker ever claimed
// it; a ticket claimed once, even given back without spending its attempt, keeps the text
// its history is about.
func testRetext(t *testing.T, e engine) {
	b := e.setup(t)
	id := b.enqueue(t, "a.md")
	if err := b.s.PredictFiles(b.ctx, id, PredictedByIssue, []string{"calc.py"}); err != nil {
		t.Fatal(err)
	}
	nt := NewTicket{Source: "test", ExternalID: "a.md", Repo: "sample", Title: "ticket a.md", Body: "body", Labels: []string{"bug"}}
	if r, err := b.s.Retext(b.ctx, nt); err != nil || r != (Retexted{ID: id, State: StateQueued}) {
		t.Fatalf("Retext(same text) = %+v, %v; want nothing done", r, err)
	}
	if r, err := b.s.Retext(b.ctx, NewTicket{Source: "test", ExternalID: "b.md", Title: "x"}); err != nil || r.ID != 0 {
		t.Fatalf("Retext(unknown) = %+v, %v; want id 0", r, err)
	}

	edited := nt
	edited.Body, edited.Labels, edited.Priority = "body, written out\x00 in full", []string{"bug", "urgent"}, 10
	r, err := b.s.Retext(b.ctx, edited)
	if err != nil || !r.Changed || r.Kept {
		t.Fatalf("Retext(edited) = %+v, %v; want changed", r, err)
	}
	got, _ := b.s.Get(b.ctx, id)
	if got.Body != "body, written out in full" || !slices.Equal(got.Labels, edited.Labels) || got.Priority != 10 || got.Title != nt.Title {
		t.Errorf("after Retext: %q %v %d %q; want the new body (NUL removed), labels and priority", got.Body, got.Labels, got.Priority, got.Title)
	}
	if p, err := b.s.PredictedFiles(b.ctx, id); err != nil || len(p.Files) != 0 {
		t.Errorf("prediction %+v, %v; want the old text's cleared", p, err)
	}
	evs, _ := b.s.Events(b.ctx, id)
	if kinds := strings.Join(eventKinds(t, b, id), ","); kinds != "enqueued,note" ||
		!strings.Contains(evs[1].Reason, "the new body, labels and priority") || !strings.Contains(evs[1].Reason, "1 NUL") {
		t.Errorf("events %s, last %q; want a note naming what changed and the NUL removed", kinds, evs[len(evs)-1].Reason)
	}

	// Claimed, then given back without spending the attempt: queued, no attempt, but a
	// worker saw this text.
	l := b.claim(t, "w1")
	again := edited
	again.Title = "a new title"
	if r, err := b.s.Retext(b.ctx, again); err != nil || !r.Kept || r.State != StateRunning {
		t.Errorf("Retext(running) = %+v, %v; want kept, running", r, err)
	}
	if _, err := b.s.Fail(b.ctx, id, l.Token, Failure{Kind: FailTransport, Reason: "endpoint down"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.s.Get(b.ctx, id); got.State != StateQueued || got.Attempts != 0 {
		t.Fatalf("after a transport release: %s, %d attempts; want queued, 0", got.State, got.Attempts)
	}
	if r, err := b.s.Retext(b.ctx, again); err != nil || !r.Kept || r.State != StateQueued {
		t.Errorf("Retext(released) = %+v, %v; want kept", r, err)
	}
	if got, _ := b.s.Get(b.ctx, id); got.Title != nt.Title {
		t.Errorf("title %q after Retext of a ticket claimed once; want %q kept", got.Title, nt.Title)
	}
}

func TestSameText(t *testing.T) { forEachEngine(t, testSameText) }

// testSameText: the earliest ticket of a source and repository with a title and body,
// compared as stored. The same text for another repository is another issue (one fix
// asked of each repository).
func testSameText(t *testing.T, e engine) {
	b := e.setup(t)
	first := b.enqueue(t, "a.md", func(nt *NewTicket) { nt.Body = "it\x00 crashes" })
	b.enqueue(t, "b.md", func(nt *NewTicket) { nt.Title = "ticket a.md"; nt.Body = "it crashes" })
	b.enqueue(t, "c.md", func(nt *NewTicket) { nt.Source = "other"; nt.Title = "x" })
	tests := []struct {
		source, repo, title, body string
		want                      int64
	}{
		{"test", "sample", "ticket a.md", "it crashes", first},
		{"test", "sample", "ticket a.md", "it\x00 crashes", first},
		{"test", "sample", "ticket a.md", "it crashes!", 0},
		{"other", "sample", "ticket a.md", "it crashes", 0},
		{"test", "another", "ticket a.md", "it crashes", 0},
	}
	for _, tt := range tests {
		got, ok, err := b.s.SameText(b.ctx, tt.source, tt.repo, tt.title, tt.body)
		if err != nil || got.ID != tt.want || ok != (tt.want != 0) {
			t.Errorf("SameText(%q, %q, %q, %q) = #%d, %v, %v; want #%d", tt.source, tt.repo, tt.title, tt.body, got.ID, ok, err, tt.want)
		}
	}
}
