package store

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"
)

// TestCopyToKeepsHistory: a SQLite store with a night's history, copied into an empty store
// of each engine, reads back the same through the API (tickets, events, calls, nights,
// artifacts, baselines, stats), keeps working there (new ids after the copied ones, the
// queued ticket claimable, the event chains extended), and a second copy is refused.
func TestCopyToKeepsHistory(t *testing.T) { forEachEngine(t, testCopyToKeepsHistory) }

func testCopyToKeepsHistory(t *testing.T, e engine) {
	src := engine{"sqlite"}.setup(t)
	ctx := src.ctx
	run, _, err := src.s.JoinRun(ctx, "once", time.Hour)
	must(t, err)
	done := src.enqueue(t, "done")
	src.enqueue(t, "queued", func(n *NewTicket) { n.Priority = -1 })
	l := src.claim(t, "w1")
	cost := 0.125
	_, err = src.s.RecordModelCall(ctx, ModelCall{TicketID: done, RunID: run, Attempt: 1, Role: "maker", Model: "m", PromptTokens: 10, CostUSD: &cost, UsageEstimated: true, Continuations: 1})
	must(t, err)
	_, err = src.s.RecordToolCall(ctx, ToolCall{TicketID: done, Attempt: 1, Tool: "read_files", Args: "{}", OK: true})
	must(t, err)
	must(t, src.s.RecordReview(ctx, Review{TicketID: done, Attempt: 1, Round: 1, Kept: 1}))
	must(t, src.s.RecordReview(ctx, Review{TicketID: done, Attempt: 1, Round: 1, Kept: 0, Reviewer: "security"}))
	must(t, src.s.RecordEndpointEvent(ctx, EndpointEvent{RunID: run, Endpoint: "e", Down: true, Since: src.clock.Now()}))
	must(t, src.s.SaveBaseline(ctx, Baseline{Repo: "sample", BaseCommit: "c0ffee", ChecksHash: "h", Results: "[]"}))
	must(t, src.s.SaveArtifact(ctx, done, "report.md", []byte("# Ticket\n")))
	must(t, src.s.Complete(ctx, done, l.Token, Result{Branch: "ticketd/1-x", Summary: "fixed"}))
	must(t, src.s.RecordOutput(ctx, done, OutputPullRequest, "https://example.invalid/pr/1"))
	// The queued ticket's maker asks, the question is posted and answered: it is queued again.
	asking := src.claim(t, "w1")
	_, err = src.s.AskHuman(ctx, asking.Ticket.ID, asking.Token, Asked{Question: "5 or -1?"})
	must(t, err)
	must(t, src.s.RecordQuestionComment(ctx, asking.Ticket.ID, 1, "https://example.invalid/issues/2#c1"))
	must(t, src.s.Answer(ctx, asking.Ticket.ID, "5", "ticketctl:alice"))
	must(t, src.s.FinishRun(ctx, run))

	dst := e.setup(t)
	rep, err := src.s.CopyTo(ctx, dst.s)
	if err != nil {
		t.Fatalf("CopyTo: %v", err)
	}
	t.Logf("copied %+v", rep.Tables)
	same := func(what string, get func(s *Store) (any, error)) {
		t.Helper()
		a, err := get(src.s)
		must(t, err)
		b, err := get(dst.s)
		must(t, err)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s differs after the copy:\n source %+v\n target %+v", what, a, b)
		}
	}
	for _, id := range []int64{1, 2} {
		same(fmt.Sprint("ticket ", id), func(s *Store) (any, error) { return s.Get(ctx, id) })
		same(fmt.Sprint("events of ", id), func(s *Store) (any, error) { return s.Events(ctx, id) })
	}
	same("model calls", func(s *Store) (any, error) { return s.ModelCalls(ctx, done) })
	same("tool calls", func(s *Store) (any, error) { return s.ToolCalls(ctx, done) })
	same("reviews", func(s *Store) (any, error) { return s.Reviews(ctx, done) })
	same("questions", func(s *Store) (any, error) { return s.Questions(ctx, asking.Ticket.ID) })
	same("outputs", func(s *Store) (any, error) { return s.Outputs(ctx, done) })
	same("runs", func(s *Store) (any, error) { return s.Runs(ctx, 0) })
	same("stats", func(s *Store) (any, error) { return s.Stats(ctx, run) })
	same("endpoint events", func(s *Store) (any, error) { return s.EndpointEvents(ctx, run) })
	same("usage estimates", func(s *Store) (any, error) { return s.UsageEstimates(ctx, 0) })
	same("report", func(s *Store) (any, error) { return s.Artifact(ctx, done, "report.md") })
	if b, ok, err := dst.s.LoadBaseline(ctx, "sample", "c0ffee", "h"); err != nil || !ok || b.Results != "[]" {
		t.Errorf("baseline after the copy: %+v, %v, %v", b, ok, err)
	}

	// The target goes on where the source stopped.
	dst.clock.Advance(time.Minute)
	id3 := dst.enqueue(t, "new")
	if id3 != 3 {
		t.Errorf("first ticket enqueued after the copy has id %d; want 3", id3)
	}
	l2 := dst.claim(t, "w2") // the new one (priority 0) before the copied queued one (-1)
	must(t, dst.s.Complete(ctx, l2.Ticket.ID, l2.Token, Result{}))
	l3 := dst.claim(t, "w2")
	if l3.Ticket.ID != 2 {
		t.Errorf("claimed %d; want the copied queued ticket 2", l3.Ticket.ID)
	}
	must(t, dst.s.AddNote(ctx, done, "op", "after the copy"))
	evs, err := dst.s.Events(ctx, done)
	must(t, err)
	if last := evs[len(evs)-1]; last.Reason != "after the copy" || len(evs) != 5 {
		t.Errorf("events of the copied done ticket after a note: %+v; want its 4 copied events and the note", evs)
	}
	if _, err := src.s.CopyTo(ctx, dst.s); !errors.Is(err, ErrNotEmpty) {
		t.Errorf("second CopyTo: %v; want ErrNotEmpty", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
