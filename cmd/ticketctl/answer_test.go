package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store"
)

// askOn claims the fixture's queued ticket and ends its attempt with a question, as a worker
// does when the maker calls ask_human.
func askOn(t *testing.T, f fixture, question string) {
	t.Helper()
	ctx := context.Background()
	// The fixture was written 48 hours back; half an hour later its running ticket still
	// holds its one-hour lease, so the claim takes the queued one.
	s, err := store.Open(ctx, f.db, store.Options{Now: func() time.Time { return time.Now().Add(-47*time.Hour - 30*time.Minute) }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l, err := s.Claim(ctx, "w2", time.Hour)
	if err != nil || l.Ticket.ID != f.queued {
		t.Fatalf("claim = %+v, %v; want the queued ticket %d", l.Ticket.ID, err, f.queued)
	}
	if _, err := s.AskHuman(ctx, f.queued, l.Token, store.Asked{Question: question, ResultDir: "/out/4"}); err != nil {
		t.Fatal(err)
	}
}

// TestAnswer: the question shows in list, show and escalations; answer puts the ticket back
// in the queue and show then holds the answer; answering a ticket that asked nothing is
// refused with exit 4.
func TestAnswer(t *testing.T) {
	f := setup(t)
	t.Setenv("USER", "alice")
	const q = "Should dates without a zone be read as UTC or as the server's local time?"
	askOn(t, f, q)
	id := strconv.FormatInt(f.queued, 10)

	r := ctl(t, "--db", f.db, "list")
	mustContain(t, "list", r.stdout, "needs_info", "Questions waiting for an answer", id+" asks: "+q)
	r = ctl(t, "--db", f.db, "list", "--state", "needs_info", "--json")
	var listed []map[string]any
	decode(t, r, &listed)
	if len(listed) != 1 || listed[0]["question"] != q || listed[0]["state"] != "needs_info" {
		t.Errorf("list --state needs_info --json = %v", listed)
	}
	r = ctl(t, "--db", f.db, "escalations")
	mustContain(t, "escalations", r.stdout, "Median is wrong", "Questions waiting for an answer", q)
	r = ctl(t, "--db", f.db, "show", id)
	mustContain(t, "show", r.stdout, "Question 1 (asked by attempt 1", q, "Not answered yet: ticketctl answer "+id)

	for _, bad := range []struct {
		args []string
		code int
	}{
		{[]string{"answer", id}, exitUsage},
		{[]string{"answer", strconv.FormatInt(f.done, 10), "UTC"}, exitRefused},
		{[]string{"answer", "999", "UTC"}, exitNotFound},
	} {
		if r := ctl(t, append([]string{"--db", f.db}, bad.args...)...); r.code != bad.code {
			t.Errorf("ticketctl %q: exit %d, want %d\n%s", bad.args, r.code, bad.code, r.stderr)
		}
	}

	r = ctl(t, "--db", f.db, "--json", "answer", id, "UTC:", "the", "feed", "is", "in", "UTC.")
	if r.code != exitOK {
		t.Fatalf("answer: exit %d\n%s", r.code, r.stderr)
	}
	var got answerJSON
	decode(t, r, &got)
	want := answerJSON{ID: f.queued, PreviousState: store.StateNeedsInfo, State: store.StateQueued, Question: q, Answer: "UTC: the feed is in UTC."}
	if got != want {
		t.Errorf("answer --json = %+v, want %+v", got, want)
	}
	var shown showJSON
	decode(t, ctl(t, "--db", f.db, "show", "--json", id), &shown)
	if len(shown.Questions) != 1 || shown.Questions[0].Answer != want.Answer || shown.Questions[0].AnsweredBy != "ticketctl:alice" || shown.Ticket.Question != "" {
		t.Errorf("show --json after the answer: questions %+v, open question %q", shown.Questions, shown.Ticket.Question)
	}
	if last := shown.Events[len(shown.Events)-1]; last.Kind != "answered" || last.Actor != "ticketctl:alice" {
		t.Errorf("last event %s by %s, want answered by ticketctl:alice", last.Kind, last.Actor)
	}
	if r := ctl(t, "--db", f.db, "escalations"); strings.Contains(r.stdout, "Questions waiting") {
		t.Errorf("escalations still lists a question after the answer:\n%s", r.stdout)
	}
}
