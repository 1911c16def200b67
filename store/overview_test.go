package store

import (
	"context"
	"fmt"
	"testing"
	"time"
)

func TestOverviewAndProgress(t *testing.T) { forEachEngine(t, testOverviewAndProgress) }

func testOverviewAndProgress(t *testing.T, e engine) {
	b := e.setup(t)
	ctx := context.Background()
	a := b.enqueue(t, "a")
	b.enqueue(t, "b")
	l := b.claim(t, "w1")
	if l.Ticket.ID != a {
		t.Fatalf("claimed %d, want %d", l.Ticket.ID, a)
	}
	for i, c := range []ModelCall{
		{Role: "maker", Model: "gpt-4.1", PromptTokens: 1000, CachedTokens: 600, CompletionTokens: 50, CostUSD: ptr(0.01), Latency: 2 * time.Second},
		{Role: "maker", Model: "gpt-4.1", PromptTokens: 2000, CachedTokens: 1500, CompletionTokens: 80, CostUSD: ptr(0.02), Latency: time.Second},
		{Role: "judge", Model: "mini", PromptTokens: 300, Error: "boom", ErrorClass: "server"},
	} {
		c.TicketID, c.Attempt, c.StartedAt = a, 1, b.clock.Now().Add(time.Duration(i)*time.Second)
		if _, err := b.s.RecordModelCall(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	for i, tc := range []ToolCall{
		{Tool: "read_files", Step: 1, OK: true, Duration: 30 * time.Millisecond},
		{Tool: "run_checks", Step: 2, OK: false, Duration: 3 * time.Second},
		{Tool: "run_checks", Step: 3, OK: true, Duration: 40 * time.Second},
	} {
		tc.TicketID, tc.Attempt, tc.At = a, 1, b.clock.Now().Add(time.Duration(i)*time.Second)
		if _, err := b.s.RecordToolCall(ctx, tc); err != nil {
			t.Fatal(err)
		}
	}
	ov, err := b.s.Overview(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ov.ByState[StateQueued] != 1 || ov.ByState[StateRunning] != 1 || ov.ByState[StateDone] != 0 {
		t.Errorf("by state = %v, want 1 queued, 1 running, 0 done", ov.ByState)
	}
	if ov.Events["claimed"] != 1 || ov.Events["enqueued"] != 2 || ov.Rescues != 0 {
		t.Errorf("events = %v rescues %d", ov.Events, ov.Rescues)
	}
	if len(ov.Calls) != 2 {
		t.Fatalf("calls = %+v, want judge/mini and maker/gpt-4.1", ov.Calls)
	}
	m := ov.Calls[1]
	if m.Role != "maker" || m.Calls != 2 || m.PromptTokens != 3000 || m.CachedTokens != 2100 || m.CostUSD != 0.03 || m.LatencySeconds != 3 {
		t.Errorf("maker totals = %+v", m)
	}
	if j := ov.Calls[0]; j.Errors != 1 || j.CostUSD != 0 {
		t.Errorf("judge totals = %+v, want 1 error and no cost", j)
	}
	var rc ToolTotals
	for _, x := range ov.Tools {
		if x.Tool == "run_checks" {
			rc = x
		}
	}
	// Buckets: 0.1 0.5 1 2.5 5 10 30 60 ...: 3s falls in <=5, 40s in <=60.
	if rc.Calls != 2 || rc.Failed != 1 || rc.SumSeconds != 43 || rc.Buckets[3] != 0 || rc.Buckets[4] != 1 || rc.Buckets[7] != 2 {
		t.Errorf("run_checks = %+v", rc)
	}
	p, err := b.s.Progress(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if p.Attempt != 1 || p.Step != 3 || p.LastTool != "run_checks" || p.ModelCalls != 3 {
		t.Errorf("progress = %+v, want attempt 1 step 3 run_checks, 3 calls", p)
	}
	// A lease that expires and is taken over counts as a rescue.
	b.clock.Advance(2 * time.Minute)
	if l2 := b.claim(t, "w2"); l2.Ticket.ID != a || l2.Ticket.RescuedFrom != "w1" {
		t.Fatalf("after expiry claimed %d rescued from %q, want %d from w1", l2.Ticket.ID, l2.Ticket.RescuedFrom, a)
	}
	ov, _ = b.s.Overview(ctx)
	if ov.Rescues != 1 || ov.Events["lease_expired"] != 1 {
		t.Errorf("after takeover: rescues %d lease_expired %d, want 1 and 1", ov.Rescues, ov.Events["lease_expired"])
	}
}

// BenchmarkOverview measures one /metrics scrape's database work over a store with 500
// tickets, 5,000 model calls and 5,000 tool calls (a few busy nights).
func BenchmarkOverview(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, b.TempDir()+"/t.db", Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for i := range 500 {
		id, _, err := s.Enqueue(ctx, NewTicket{Source: "bench", ExternalID: fmt.Sprint(i), Title: "t"})
		if err != nil {
			b.Fatal(err)
		}
		for j := range 10 {
			if _, err := s.RecordModelCall(ctx, ModelCall{TicketID: id, Attempt: 1, Role: []string{"maker", "judge"}[j%2], Model: "m",
				PromptTokens: 1000, CachedTokens: 500, CostUSD: ptr(0.001), StartedAt: time.Now()}); err != nil {
				b.Fatal(err)
			}
			if _, err := s.RecordToolCall(ctx, ToolCall{TicketID: id, Attempt: 1, Step: j, Tool: "run_checks", OK: true,
				Duration: time.Duration(j) * time.Second, At: time.Now()}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	for range b.N {
		if _, err := s.Overview(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
