package store

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestAskAndAnswer: a maker's question takes the ticket out of the queue without charging
// the attempt; an answer puts it back, ready at once, and the question and answer are kept.
func TestAskAndAnswer(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		b := e.setup(t)
		id := b.enqueue(t, "1")
		l := b.claim(t, "w1")
		const q = "Should add(2, 3) be 5, or is subtraction intended for refunds?"
		to, err := b.s.AskHuman(b.ctx, id, l.Token, Asked{Question: q, ResultDir: "/r/1"})
		if err != nil || to != StateNeedsInfo {
			t.Fatalf("AskHuman = %s, %v", to, err)
		}
		tk, _ := b.s.Get(b.ctx, id)
		if tk.State != StateNeedsInfo || tk.Attempts != 0 || tk.Question != q || tk.Questions != 1 || tk.ResultDir != "/r/1" || !tk.FinishedAt.IsZero() {
			t.Fatalf("after the ask: %+v", tk)
		}
		if _, err := b.s.Claim(b.ctx, "w2", time.Minute); !errors.Is(err, ErrNoTicket) {
			t.Fatalf("claim while waiting for an answer = %v, want ErrNoTicket", err)
		}
		due, err := b.s.NextDue(b.ctx)
		if err != nil || due.Queued != 0 || due.Running != 0 || due.Waiting != 1 {
			t.Fatalf("NextDue = %+v, %v; want one waiting, nothing queued or running", due, err)
		}
		for _, f := range []Filter{{States: []State{StateNeedsInfo}}, {}} {
			list, err := b.s.List(b.ctx, f)
			if err != nil || len(list) != 1 || list[0].Question != q {
				t.Fatalf("List(%v) = %+v, %v", f.States, list, err)
			}
		}
		waiting, err := b.s.WaitingForAnswer(b.ctx, "test", 0)
		if err != nil || len(waiting) != 1 || waiting[0].Question.Text != q || waiting[0].Question.N != 1 || waiting[0].Ticket.ID != id {
			t.Fatalf("WaitingForAnswer = %+v, %v", waiting, err)
		}
		if w, err := b.s.WaitingForAnswer(b.ctx, "", 1); err != nil || len(w) != 1 || w[0].Ticket.ID != id {
			t.Errorf("WaitingForAnswer(every source, at most 1) = %+v, %v", w, err)
		}
		if w, _ := b.s.WaitingForAnswer(b.ctx, "github", 0); len(w) != 0 {
			t.Errorf("WaitingForAnswer(github) = %+v, want none of another source", w)
		}
		if err := b.s.RecordQuestionComment(b.ctx, id, 1, "https://github.example/o/r/issues/1#comment-1"); err != nil {
			t.Fatal(err)
		}

		b.clock.Advance(time.Hour)
		if err := b.s.Answer(b.ctx, id, "  5: refunds have their own function.\n", "ticketctl:alice"); err != nil {
			t.Fatal(err)
		}
		tk, _ = b.s.Get(b.ctx, id)
		if tk.State != StateQueued || tk.Question != "" || tk.Questions != 1 || !tk.RunAfter.Equal(b.clock.Now()) {
			t.Fatalf("after the answer: %+v", tk)
		}
		qs, err := b.s.Questions(b.ctx, id)
		if err != nil || len(qs) != 1 {
			t.Fatalf("Questions = %+v, %v", qs, err)
		}
		if got := qs[0]; got.Text != q || !got.Answered || got.Answer != "5: refunds have their own function." || got.AnsweredBy != "ticketctl:alice" ||
			got.Attempt != 1 || got.CommentURL == "" || got.AnsweredAt.IsZero() {
			t.Errorf("question = %+v", got)
		}
		if err := b.s.Answer(b.ctx, id, "again", "x"); !errors.Is(err, ErrInvalidTransition) {
			t.Errorf("a second answer = %v, want ErrInvalidTransition", err)
		}
		l = b.claim(t, "w1")
		if l.Attempt != 1 {
			t.Errorf("the attempt after the answer is %d, want 1: asking charged nothing", l.Attempt)
		}
		kinds := eventKinds(t, b, id)
		want := []string{"enqueued", "claimed", "needs_info", "published", "answered", "claimed"}
		if strings.Join(kinds, ",") != strings.Join(want, ",") {
			t.Errorf("events %v, want %v", kinds, want)
		}
	})
}

func TestAskHumanEdges(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		t.Run("cancel requested: cancelled, not waiting", func(t *testing.T) {
			b := e.setup(t)
			id := b.enqueue(t, "1")
			l := b.claim(t, "w1")
			if _, err := b.s.RequestCancel(b.ctx, id, "op", "no longer needed"); err != nil {
				t.Fatal(err)
			}
			if to, err := b.s.AskHuman(b.ctx, id, l.Token, Asked{Question: "which?"}); err != nil || to != StateCancelled {
				t.Fatalf("AskHuman = %s, %v; want cancelled", to, err)
			}
		})
		t.Run("stale token: lease lost", func(t *testing.T) {
			b := e.setup(t)
			id := b.enqueue(t, "1")
			l := b.claim(t, "w1")
			if _, err := b.s.AskHuman(b.ctx, id, l.Token+1, Asked{Question: "which?"}); !errors.Is(err, ErrLeaseLost) {
				t.Fatalf("AskHuman with a stale token = %v", err)
			}
		})
		t.Run("needs_info can be cancelled or requeued", func(t *testing.T) {
			b := e.setup(t)
			a, c := b.enqueue(t, "a"), b.enqueue(t, "c")
			for _, id := range []int64{a, c} {
				l := b.claim(t, "w1")
				if _, err := b.s.AskHuman(b.ctx, l.Ticket.ID, l.Token, Asked{Question: "which?"}); err != nil {
					t.Fatal(err)
				}
				_ = id
			}
			if st, err := b.s.RequestCancel(b.ctx, a, "op", "dropped"); err != nil || st != StateCancelled {
				t.Fatalf("cancel a needs_info ticket = %s, %v", st, err)
			}
			if err := b.s.Requeue(b.ctx, c, "op", false); err != nil {
				t.Fatalf("requeue a needs_info ticket: %v", err)
			}
			tk, _ := b.s.Get(b.ctx, c)
			if tk.State != StateQueued || tk.Question != "" || tk.Questions != 1 {
				t.Errorf("requeued: %+v; want queued, the open question cleared, the count kept", tk)
			}
		})
		t.Run("empty question or answer", func(t *testing.T) {
			b := e.setup(t)
			id := b.enqueue(t, "1")
			l := b.claim(t, "w1")
			if _, err := b.s.AskHuman(b.ctx, id, l.Token, Asked{Question: "  "}); err == nil {
				t.Error("an empty question was accepted")
			}
			if err := b.s.Answer(b.ctx, id, " ", "x"); err == nil {
				t.Error("an empty answer was accepted")
			}
		})
	})
}

// TestContinuationsAndReviewersKept: a model call's continuation count and a review row's
// reviewer are stored and read back.
func TestContinuationsAndReviewersKept(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		b := e.setup(t)
		id := b.enqueue(t, "1")
		if _, err := b.s.RecordModelCall(b.ctx, ModelCall{TicketID: id, Role: "judge", Model: "m", PromptTokens: 10, Continuations: 2, FinishReason: "length"}); err != nil {
			t.Fatal(err)
		}
		calls, err := b.s.ModelCalls(b.ctx, id)
		if err != nil || len(calls) != 1 || calls[0].Continuations != 2 {
			t.Fatalf("model calls %+v, %v; want one with 2 continuations", calls, err)
		}
		for _, r := range []Review{{TicketID: id, Round: 1, Kept: 1}, {TicketID: id, Round: 1, Kept: 2, Reviewer: "security"}} {
			if err := b.s.RecordReview(b.ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		rs, err := b.s.Reviews(b.ctx, id)
		if err != nil || len(rs) != 2 || rs[0].Reviewer != "correctness" || rs[1].Reviewer != "security" || rs[1].Kept != 2 {
			t.Fatalf("reviews %+v, %v; want correctness (the default) then security", rs, err)
		}
	})
}
