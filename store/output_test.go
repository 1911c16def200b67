package store

import (
	"slices"
	"testing"
	"time"
)

// TestOutputsAreRecordedOnce: what was published upstream (GitHub's pull requests and
// comments) is kept per ticket and kind; recording it again keeps the first and appends no
// second event, and Unpublished lists, oldest finished first, only the tickets of a source
// in a state without that kind of output yet.
func TestOutputsAreRecordedOnce(t *testing.T) { forEachEngine(t, testOutputsAreRecordedOnce) }

func testOutputsAreRecordedOnce(t *testing.T, e engine) {
	b := e.setup(t)
	finish := func(ext, source string, fail bool) int64 {
		t.Helper()
		id := b.enqueue(t, ext, func(n *NewTicket) { n.Source, n.MaxAttempts = source, 1 })
		l := b.claim(t, "w")
		if l.Ticket.ID != id {
			t.Fatalf("claimed %d; want %d", l.Ticket.ID, id)
		}
		if fail {
			if _, err := b.s.Fail(b.ctx, id, l.Token, Failure{Kind: FailFix, Reason: "no"}); err != nil {
				t.Fatal(err)
			}
		} else if err := b.s.Complete(b.ctx, id, l.Token, Result{Branch: "ticketd/" + ext}); err != nil {
			t.Fatal(err)
		}
		b.clock.Advance(time.Minute)
		return id
	}
	first := finish("o/r#1", "github", false)
	second := finish("o/r#2", "github", false)
	escalated := finish("o/r#3", "github", true)
	finish("local", "dir", false)

	unpublished := func(state State, kind OutputKind) []int64 {
		t.Helper()
		ts, err := b.s.Unpublished(b.ctx, "github", state, kind, 10)
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for _, tk := range ts {
			ids = append(ids, tk.ID)
		}
		return ids
	}
	if got := unpublished(StateDone, OutputPullRequest); !slices.Equal(got, []int64{first, second}) {
		t.Errorf("Unpublished(done, pull_request) = %v; want %v oldest first", got, []int64{first, second})
	}
	if got := unpublished(StateEscalated, OutputComment); !slices.Equal(got, []int64{escalated}) {
		t.Errorf("Unpublished(escalated, comment) = %v; want [%d]", got, escalated)
	}
	const url = "https://github.com/o/r/pull/7"
	for range 2 {
		if err := b.s.RecordOutput(b.ctx, first, OutputPullRequest, url); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.s.RecordOutput(b.ctx, first, OutputPullRequest, "https://github.com/o/r/pull/8"); err != nil {
		t.Fatal(err)
	}
	outs, err := b.s.Outputs(b.ctx, first)
	if err != nil || len(outs) != 1 || outs[0].URL != url || outs[0].Kind != OutputPullRequest {
		t.Errorf("Outputs = %+v, %v; want the first pull request only", outs, err)
	}
	if kinds := eventKinds(t, b, first); slices.Index(kinds, "published") < 0 || len(kinds) != 4 {
		t.Errorf("events = %v; want enqueued, claimed, done, one published", kinds)
	}
	if got := unpublished(StateDone, OutputPullRequest); !slices.Equal(got, []int64{second}) {
		t.Errorf("Unpublished after the first was published = %v; want [%d]", got, second)
	}
	if err := b.s.RecordOutput(b.ctx, 999, OutputComment, url); err == nil {
		t.Error("RecordOutput of a ticket that does not exist: want an error")
	}
}
