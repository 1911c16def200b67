package store

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store/storedriver"
)

// TestReviseRounds: a round puts a done ticket back on its own fix branch with a fresh
// budget, numbered on; a retry keeps the round open and the ticket's end closes it; after
// max rounds the next ask escalates the ticket with the open threads listed and is kept as
// refused. Only a done ticket can be revised, and only with something to change.
func TestReviseRounds(t *testing.T) { forEachEngine(t, testReviseRounds) }

func testReviseRounds(t *testing.T, e engine) {
	b := e.setup(t)
	id := b.enqueue(t, "r", func(n *NewTicket) { n.MaxAttempts = 2 })
	l := b.claim(t, "w")
	ask := RoundAsk{Source: RoundRevise, Note: "use Decimal, not float", MaxRounds: 2}
	if _, err := b.s.Revise(b.ctx, id, "alice", ask); !errors.Is(err, ErrInvalidTransition) {
		t.Fatalf("revise a running ticket: %v; want ErrInvalidTransition", err)
	}
	if err := b.s.Complete(b.ctx, id, l.Token, Result{Branch: "ticketd/1-fix", ResultDir: "/r/1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.s.Revise(b.ctx, id, "alice", RoundAsk{Source: RoundRevise, MaxRounds: 2}); err == nil {
		t.Fatal("revise with neither note nor threads: accepted; want an error")
	}
	r, err := b.s.Revise(b.ctx, id, "alice", ask)
	if err != nil || r.N != 1 || r.Branch != "ticketd/1-fix" || r.Outcome != RoundOpen || r.Attempts != 1 {
		t.Fatalf("revise = %+v, %v; want round 1 open on ticketd/1-fix after 1 attempt", r, err)
	}
	if got, _ := b.s.Get(b.ctx, id); got.State != StateQueued {
		t.Fatalf("revised ticket is %s; want queued", got.State)
	}
	open, ok, err := b.s.OpenRound(b.ctx, id)
	if err != nil || !ok || open.Note != "use Decimal, not float" || open.Actor != "alice" {
		t.Fatalf("open round = %+v, %v, %v; want alice's note", open, ok, err)
	}
	b.clock.Advance(time.Hour)
	l = b.claim(t, "w")
	if l.Attempt != 2 {
		t.Fatalf("round's attempt is %d; want 2 (numbered on)", l.Attempt)
	}
	if st, err := b.s.Fail(b.ctx, id, l.Token, Failure{Kind: FailFix, Reason: "tests fail"}); err != nil || st != StateQueued {
		t.Fatalf("fail the round's first attempt: %s, %v; want queued (a fresh budget of 2)", st, err)
	}
	if _, ok, _ := b.s.OpenRound(b.ctx, id); !ok {
		t.Fatal("a retried round is closed; want it open until the ticket ends")
	}
	if kept, err := b.s.KeptBranches(b.ctx); err != nil || kept["ticketd/1-fix"] != id {
		t.Fatalf("kept branches = %v, %v; want the round's fix branch kept from the night's clean-up", kept, err)
	}
	b.clock.Advance(time.Hour)
	l = b.claim(t, "w")
	if err := b.s.Complete(b.ctx, id, l.Token, Result{Branch: "ticketd/1-fix", ResultDir: "/r/1b"}); err != nil {
		t.Fatal(err)
	}
	rounds, _ := b.s.Rounds(b.ctx, id)
	if len(rounds) != 1 || rounds[0].Outcome != string(StateDone) || rounds[0].EndedAt.IsZero() {
		t.Fatalf("rounds = %+v; want round 1 done", rounds)
	}

	threads := []Thread{{ID: "T1", Author: "bob", Path: "calc.py", Line: 3, Body: "still rounds half down\nsee the spec"},
		{ID: "T2", Author: "bob", Body: "add a test for 2.5"}}
	if _, err := b.s.Revise(b.ctx, id, "bob", RoundAsk{Source: RoundReview, Threads: threads, MaxRounds: 2}); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(time.Hour)
	l = b.claim(t, "w")
	if err := b.s.Complete(b.ctx, id, l.Token, Result{Branch: "ticketd/1-fix", ResultDir: "/r/1c"}); err != nil {
		t.Fatal(err)
	}
	r, err = b.s.Revise(b.ctx, id, "bob", RoundAsk{Source: RoundReview, Threads: threads, MaxRounds: 2})
	if !errors.Is(err, ErrRoundsSpent) || r.Outcome != RoundRefused || r.N != 3 {
		t.Fatalf("third round with max 2: %+v, %v; want refused round 3 and ErrRoundsSpent", r, err)
	}
	got, _ := b.s.Get(b.ctx, id)
	if got.State != StateEscalated || !strings.Contains(got.Reason, "calc.py:3 (bob): still rounds half down") || !strings.Contains(got.Reason, "add a test for 2.5") {
		t.Fatalf("ticket %s, reason %q; want escalated listing both open threads", got.State, got.Reason)
	}
	rounds, _ = b.s.Rounds(b.ctx, id)
	if len(rounds) != 3 || rounds[1].Source != RoundReview || len(rounds[1].Threads) != 2 || rounds[2].Outcome != RoundRefused {
		t.Fatalf("rounds = %+v; want 3 (revise, review with 2 threads, refused)", rounds)
	}
	evs, _ := b.s.Events(b.ctx, id)
	revised := 0
	for _, ev := range evs {
		if ev.Kind == EventRevised {
			revised++
		}
	}
	if revised != 2 {
		t.Errorf("%d revised events; want 2", revised)
	}
}

// TestPullWatch: the review cursor and the checks' state of a pull request are kept per
// ticket; red and stuck ones are listed; a round's answering comment is recorded.
func TestPullWatch(t *testing.T) { forEachEngine(t, testPullWatch) }

func testPullWatch(t *testing.T, e engine) {
	b := e.setup(t)
	a := b.enqueue(t, "a")
	c := b.enqueue(t, "c")
	for range 2 {
		l := b.claim(t, "w")
		if err := b.s.Complete(b.ctx, l.Ticket.ID, l.Token, Result{Branch: "ticketd/x", ResultDir: "/r"}); err != nil {
			t.Fatal(err)
		}
	}
	if w, err := b.s.PullWatchOf(b.ctx, a); err != nil || w.ReviewCursor != 0 || w.CIState != "" {
		t.Fatalf("watch of an unwatched ticket = %+v, %v; want zero", w, err)
	}
	if err := b.s.SetReviewCursor(b.ctx, a, 42); err != nil {
		t.Fatal(err)
	}
	if err := b.s.SetPullCI(b.ctx, a, "abc123", CIStuck, "action_required: approve the workflows"); err != nil {
		t.Fatal(err)
	}
	if err := b.s.SetPullCI(b.ctx, c, "def456", CIGreen, "2 checks passed"); err != nil {
		t.Fatal(err)
	}
	if err := b.s.SetPullCI(b.ctx, c, "def456", "purple", ""); err == nil {
		t.Error("an unknown CI state was recorded")
	}
	w, err := b.s.PullWatchOf(b.ctx, a)
	if err != nil || w.ReviewCursor != 42 || w.CIHead != "abc123" || w.CIState != CIStuck || w.CIAt.IsZero() {
		t.Fatalf("watch = %+v, %v; want cursor 42 kept beside the stuck checks", w, err)
	}
	if err := b.s.SetReviewCursor(b.ctx, a, 43); err != nil {
		t.Fatal(err)
	}
	if w, _ := b.s.PullWatchOf(b.ctx, a); w.CIState != CIStuck || w.ReviewCursor != 43 {
		t.Fatalf("watch after a new cursor = %+v; want the checks kept", w)
	}
	red, err := b.s.RedOrStuckPulls(b.ctx)
	if err != nil || len(red) != 1 || red[0].TicketID != a {
		t.Fatalf("red or stuck = %+v, %v; want ticket %d only", red, err, a)
	}
}

// TestRoundParamsMatchStatements: the rounds' parameter structs number as many arguments as
// their statements' placeholders, in both engines (TestParamsMatchStatements for RoundSQL).
func TestRoundParamsMatchStatements(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine) {
		b := e.setup(t)
		for _, st := range []struct {
			name string
			sql  string
			args int
		}{
			{"Round.Insert", b.s.q.Round.Insert, len(storedriver.InsertRoundParams{}.Args())},
			{"Round.SetCI", b.s.q.Round.SetCI, len(storedriver.SetCIParams{}.Args())},
		} {
			if got := placeholders(st.sql); got != st.args {
				t.Errorf("%s numbers %d placeholders; its params give %d arguments", st.name, got, st.args)
			}
		}
	})
}
