package store

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRequestCancel(t *testing.T) { forEachEngine(t, testRequestCancel) }

func testRequestCancel(t *testing.T, e engine) {
	b := e.setup(t)
	queued := b.enqueue(t, "q")
	if st, err := b.s.RequestCancel(b.ctx, queued, "op", "duplicate"); err != nil || st != StateCancelled {
		t.Fatalf("cancel queued = %s, %v; want cancelled", st, err)
	}
	if st, err := b.s.RequestCancel(b.ctx, queued, "op", "again"); err != nil || st != StateCancelled {
		t.Errorf("cancel cancelled = %s, %v; want cancelled, nil (no-op)", st, err)
	}
	running := b.enqueue(t, "r")
	l := b.claim(t, "w1")
	if st, err := b.s.RequestCancel(b.ctx, running, "op", "closed upstream"); err != nil || st != StateRunning {
		t.Fatalf("cancel running = %s, %v; want running (flagged)", st, err)
	}
	if c, err := b.s.Heartbeat(b.ctx, running, l.Token, time.Minute); err != nil || !c {
		t.Fatalf("Heartbeat after cancel = %v, %v; want true", c, err)
	}
	if err := b.s.FinishCancelled(b.ctx, running, l.Token, "cancel seen"); err != nil {
		t.Fatal(err)
	}
	got, _ := b.s.Get(b.ctx, running)
	if got.State != StateCancelled || got.FinishedAt.IsZero() {
		t.Errorf("after FinishCancelled: %+v", got)
	}
	if kinds, want := eventKinds(t, b, running), []string{"enqueued", "claimed", "cancel_requested", "cancelled"}; !equal(kinds, want) {
		t.Errorf("events = %v; want %v", kinds, want)
	}
	done := b.enqueue(t, "d")
	l = b.claim(t, "w1")
	b.s.Complete(b.ctx, done, l.Token, Result{})
	if _, err := b.s.RequestCancel(b.ctx, done, "op", "x"); !errors.Is(err, ErrInvalidTransition) {
		t.Errorf("cancel done: %v; want ErrInvalidTransition", err)
	}
	if _, err := b.s.RequestCancel(b.ctx, 12345, "op", "x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("cancel unknown: %v; want ErrNotFound", err)
	}
}

func TestRequeue(t *testing.T) { forEachEngine(t, testRequeue) }

func testRequeue(t *testing.T, e engine) {
	b := e.setup(t)
	id := b.enqueue(t, "1", func(n *NewTicket) { n.MaxAttempts = 1 })
	l := b.claim(t, "w1")
	if st, _ := b.s.Fail(b.ctx, id, l.Token, Failure{Kind: FailFix, Reason: "never passes"}); st != StateEscalated {
		t.Fatalf("want escalated, got %s", st)
	}
	if err := b.s.Requeue(b.ctx, id, "alice", false); err != nil {
		t.Fatal(err)
	}
	got, _ := b.s.Get(b.ctx, id)
	if got.State != StateQueued || got.Attempts != 1 || got.AttemptsBefore != 1 || got.AttemptLimit() != 2 || !got.FinishedAt.IsZero() {
		t.Fatalf("after requeue: %+v; want queued, attempts kept (1) with a fresh budget (limit 2)", got)
	}
	if err := b.s.Requeue(b.ctx, id, "alice", false); !errors.Is(err, ErrInvalidTransition) {
		t.Errorf("requeue queued: %v; want ErrInvalidTransition", err)
	}
	l = b.claim(t, "w2")
	if err := b.s.Requeue(b.ctx, id, "alice", false); !errors.Is(err, ErrInvalidTransition) {
		t.Errorf("requeue running without force: %v; want ErrInvalidTransition", err)
	}
	if err := b.s.Requeue(b.ctx, id, "alice", true); err != nil {
		t.Fatalf("forced requeue: %v", err)
	}
	if err := b.s.Complete(b.ctx, id, l.Token, Result{}); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("old holder Complete after forced requeue: %v; want ErrLeaseLost", err)
	}
	evs, _ := b.s.Events(b.ctx, id)
	last := evs[len(evs)-1]
	if last.Kind != "requeued" || last.Actor != "alice" || last.FromState != StateRunning || !strings.Contains(last.Reason, "forced") {
		t.Errorf("last event %+v; want a forced requeued event by alice", last)
	}
	if err := b.s.AddNote(b.ctx, id, "alice", "looked at it"); err != nil {
		t.Fatal(err)
	}
	if kinds := eventKinds(t, b, id); kinds[len(kinds)-1] != "note" {
		t.Errorf("events %v; want a trailing note", kinds)
	}
	if _, err := b.s.Events(b.ctx, 999); !errors.Is(err, ErrNotFound) {
		t.Errorf("Events(unknown): %v; want ErrNotFound", err)
	}
}

func ptr(f float64) *float64 { return &f }

func TestRecordsListStatsRuns(t *testing.T) { forEachEngine(t, testRecordsListStatsRuns) }

func testRecordsListStatsRuns(t *testing.T, e engine) {
	b := e.setup(t)
	run, err := b.s.StartRun(b.ctx, "once")
	if err != nil {
		t.Fatal(err)
	}
	a := b.enqueue(t, "a", func(n *NewTicket) { n.Repo = "r1" })
	c := b.enqueue(t, "c", func(n *NewTicket) { n.Repo = "r2"; n.MaxAttempts = 1 })
	la := b.claim(t, "w1")
	lc := b.claim(t, "w2")
	for _, mc := range []ModelCall{
		{TicketID: a, RunID: run, Attempt: 1, Role: "triage", PromptTokens: 2000, CachedTokens: 0, CompletionTokens: 10, CostUSD: ptr(0.01), Latency: 1500 * time.Millisecond},
		{TicketID: a, RunID: run, Attempt: 1, Role: "maker", PromptTokens: 4000, CachedTokens: 2000, CompletionTokens: 100, CostUSD: ptr(0.02)},
		{TicketID: a, RunID: run, Attempt: 1, Role: "maker", PromptTokens: 5000, CachedTokens: 5000, CompletionTokens: 100, CostUSD: ptr(0.03)},
		{TicketID: c, RunID: run, Attempt: 1, Role: "triage", PromptTokens: 2000, CachedTokens: 2000, CompletionTokens: 10, CostUSD: nil},
	} {
		if _, err := b.s.RecordModelCall(b.ctx, mc); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.s.RecordToolCall(b.ctx, ToolCall{TicketID: a, Attempt: 1, Step: 1, Tool: "read_files", Args: strings.Repeat("x", 10000), Result: "ok", OK: true, Duration: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(10 * time.Minute)
	b.s.Complete(b.ctx, a, la.Token, Result{Branch: "ticketd/1-a"})
	b.clock.Advance(10 * time.Minute)
	b.s.Fail(b.ctx, c, lc.Token, Failure{Kind: FailFix, Reason: "no"})
	if err := b.s.FinishRun(b.ctx, run); err != nil {
		t.Fatal(err)
	}

	tcs, _ := b.s.ToolCalls(b.ctx, a)
	if len(tcs) != 1 || len(tcs[0].Args) > maxPayload || !strings.HasSuffix(tcs[0].Args, "[truncated]") || tcs[0].Duration != 2*time.Second {
		t.Errorf("tool calls = %d, args len %d", len(tcs), len(tcs[0].Args))
	}
	mcs, _ := b.s.ModelCalls(b.ctx, c)
	if len(mcs) != 1 || mcs[0].CostUSD != nil {
		t.Errorf("unknown cost must stay nil, got %+v", mcs)
	}

	list, err := b.s.List(b.ctx, Filter{Repo: "r1"})
	if err != nil || len(list) != 1 {
		t.Fatalf("List(repo r1) = %d, %v", len(list), err)
	}
	if sm := list[0]; sm.ModelCalls != 3 || sm.PromptTokens != 11000 || sm.CostUSD < 0.0599 || sm.CostUSD > 0.0601 || sm.CostUnknown || sm.Duration != 10*time.Minute {
		t.Errorf("summary = %+v", sm)
	}
	js, _ := json.Marshal(list[0])
	for _, key := range []string{`"id":`, `"state":"done"`, `"attempts":1`, `"title":`, `"branch":"ticketd/1-a"`, `"model_calls":3`, `"cost_usd":0.06`, `"duration_s":600`} {
		if !strings.Contains(string(js), key) {
			t.Errorf("summary JSON lacks %s: %s", key, js)
		}
	}
	if l, _ := b.s.List(b.ctx, Filter{States: []State{StateEscalated}}); len(l) != 1 || l[0].ID != c || !l[0].CostUnknown {
		t.Errorf("List(escalated) = %+v", l)
	}
	if _, err := b.s.List(b.ctx, Filter{States: []State{"bogus"}}); err == nil {
		t.Error("List with unknown state: want an error")
	}

	runs, _ := b.s.Runs(b.ctx, 5)
	if len(runs) != 1 || runs[0].Claimed != 2 || runs[0].Done != 1 || runs[0].Escalated != 1 || runs[0].CostUSD < 0.0599 || runs[0].EndedAt.IsZero() {
		t.Errorf("runs = %+v", runs)
	}
	for _, id := range []int64{0, run} {
		st, err := b.s.Stats(b.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("stats(run %d) = %+v", id, st)
		if st.Tickets != 2 || st.SuccessRate != 0.5 || st.AttemptsPerTicket != 1 || st.ModelRequestsPerTicket != 2 ||
			st.DurationP50 != 10*time.Minute || st.DurationP90 != 20*time.Minute || !st.CostUnknown ||
			st.FirstRequestCachedShare["triage"] != 0.5 || st.FirstRequestCachedShare["maker"] != 0.5 {
			t.Errorf("stats(run %d) wrong", id)
		}
		js, _ := json.Marshal(st)
		for _, key := range []string{`"first_request_cached_share":{`, `"model_requests_per_ticket":2`, `"cost_per_done_ticket_usd":0.06`, `"duration_p90_s":1200`} {
			if !strings.Contains(string(js), key) {
				t.Errorf("stats JSON lacks %s: %s", key, js)
			}
		}
	}
	if _, err := b.s.Stats(b.ctx, 99); !errors.Is(err, ErrRunNotFound) {
		t.Errorf("Stats(unknown run): %v", err)
	}

	b.clock.Advance(48 * time.Hour)
	if n, err := b.s.GC(b.ctx, 24*time.Hour); err != nil || n != 2 {
		t.Fatalf("GC = %d, %v; want 2", n, err)
	}
	if n, _ := b.s.GC(b.ctx, 24*time.Hour); n != 0 {
		t.Errorf("second GC pruned %d; want 0", n)
	}
	got, _ := b.s.Get(b.ctx, a)
	tcs, _ = b.s.ToolCalls(b.ctx, a)
	evs, _ := b.s.Events(b.ctx, a)
	if got.Body != "" || got.PrunedAt.IsZero() || got.Branch == "" || tcs[0].Args != "" || len(evs) != 3 {
		t.Errorf("after GC: ticket %+v, tool args %q, %d events; want body gone, history kept", got, tcs[0].Args, len(evs))
	}
}

func TestPercentile(t *testing.T) {
	m := time.Minute
	for _, tc := range []struct {
		in   []time.Duration
		p    int
		want time.Duration
	}{
		{nil, 50, 0},
		{[]time.Duration{m}, 90, m},
		{[]time.Duration{3 * m, m, 2 * m}, 50, 2 * m},
		{[]time.Duration{m, 2 * m, 3 * m, 4 * m, 5 * m, 6 * m, 7 * m, 8 * m, 9 * m, 10 * m}, 90, 9 * m},
	} {
		if got := percentile(tc.in, tc.p); got != tc.want {
			t.Errorf("percentile(%v, %d) = %v; want %v", tc.in, tc.p, got, tc.want)
		}
	}
}

// TestTicketDurations pins the one definition of a ticket's duration (ticketctl stats and
// the bench): first claim to end, the queue wait before the claim left out, and the night's
// end for a ticket that did not finish in the night.
func TestTicketDurations(t *testing.T) { forEachEngine(t, testTicketDurations) }

func testTicketDurations(t *testing.T, e engine) {
	b := e.setup(t)
	a := b.enqueue(t, "a")
	c := b.enqueue(t, "c")
	b.clock.Advance(3 * time.Hour) // queued all day: not the tickets' work
	run, err := b.s.StartRun(b.ctx, "once")
	if err != nil {
		t.Fatal(err)
	}
	la := b.claim(t, "w1")
	b.claim(t, "w2")
	b.clock.Advance(5 * time.Minute)
	if err := b.s.Complete(b.ctx, a, la.Token, Result{Branch: "ticketd/1-a"}); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(5 * time.Minute)
	if err := b.s.FinishRun(b.ctx, run); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(time.Hour)
	tests := []struct {
		run  int64
		want map[int64]time.Duration
	}{
		{run, map[int64]time.Duration{a: 5 * time.Minute, c: 10 * time.Minute}}, // c still running at the night's end
		{0, map[int64]time.Duration{a: 5 * time.Minute}},                        // c has not ended
	}
	for _, tt := range tests {
		got, err := b.s.TicketDurations(b.ctx, tt.run)
		if err != nil || !maps.Equal(got, tt.want) {
			t.Errorf("TicketDurations(run %d) = %v, %v; want %v", tt.run, got, err, tt.want)
		}
		st, err := b.s.Stats(b.ctx, tt.run)
		if err != nil || st.DurationP50 != 5*time.Minute {
			t.Errorf("Stats(run %d) duration P50 = %s, %v; want 5m0s, the same definition", tt.run, st.DurationP50, err)
		}
	}
}

// TestFinishedBefore: what ticketctl gc deletes the files of is the tickets that ended
// (done, escalated, cancelled) before the cutoff, oldest first; never an open or a parked
// one, however old.
func TestFinishedBefore(t *testing.T) { forEachEngine(t, testFinishedBefore) }

func testFinishedBefore(t *testing.T, e engine) {
	b := e.setup(t)
	done := b.enqueue(t, "done", func(n *NewTicket) { n.Priority = 9 })
	l := b.claim(t, "w")
	must(t, b.s.Complete(b.ctx, done, l.Token, Result{Branch: "ticketd/1-done"}))
	b.clock.Advance(time.Hour)
	escalated := b.enqueue(t, "escalated", func(n *NewTicket) { n.MaxAttempts = 1; n.Priority = 9 })
	l = b.claim(t, "w")
	if st, err := b.s.Fail(b.ctx, escalated, l.Token, Failure{Kind: FailFix, Reason: "no"}); err != nil || st != StateEscalated {
		t.Fatalf("Fail = %s, %v", st, err)
	}
	parked := b.enqueue(t, "parked", func(n *NewTicket) { n.Priority = 9 })
	l = b.claim(t, "w")
	if _, err := b.s.Park(b.ctx, parked, l.Token, b.clock.Now().Add(time.Hour), "parked: endpoint"); err != nil {
		t.Fatal(err)
	}
	b.enqueue(t, "queued")
	b.clock.Advance(time.Hour)
	cancelled := b.enqueue(t, "cancelled")
	if _, err := b.s.RequestCancel(b.ctx, cancelled, "op", "dup"); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(24 * time.Hour)
	for _, c := range []struct {
		cutoff time.Time
		want   []int64
	}{
		{b.clock.Now().Add(-24*time.Hour - 30*time.Minute), []int64{done, escalated}},
		{b.clock.Now(), []int64{done, escalated, cancelled}},
		{b.clock.Now().Add(-48 * time.Hour), nil},
	} {
		got, err := b.s.FinishedBefore(b.ctx, c.cutoff)
		var ids []int64
		for _, tk := range got {
			ids = append(ids, tk.ID)
		}
		if err != nil || !slices.Equal(ids, c.want) {
			t.Errorf("FinishedBefore(%s) = %v, %v; want %v", c.cutoff.Format(time.RFC3339), ids, err, c.want)
		}
	}
	if got, _ := b.s.FinishedBefore(b.ctx, b.clock.Now()); len(got) > 0 && got[0].Branch != "ticketd/1-done" {
		t.Errorf("FinishedBefore's first ticket = %+v; want the done ticket, its branch read back", got[0])
	}
}
