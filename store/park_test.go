package store

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestTransportReleasesAndPark(t *testing.T) { forEachEngine(t, testTransportReleasesAndPark) }

func testTransportReleasesAndPark(t *testing.T, e engine) {
	b := e.setup(t)
	old, err := b.s.StartRun(b.ctx, "once")
	if err != nil {
		t.Fatal(err)
	}
	id := b.enqueue(t, "1")
	// a release in an earlier night does not count tonight
	l := b.claim(t, "w1")
	if _, err := b.s.Fail(b.ctx, id, l.Token, Failure{Kind: FailTransport, Reason: "endpoint down"}); err != nil {
		t.Fatal(err)
	}
	if err := b.s.FinishRun(b.ctx, old); err != nil {
		t.Fatal(err)
	}
	run, _ := b.s.StartRun(b.ctx, "once")
	for i := range 2 {
		b.clock.Advance(time.Minute)
		l = b.claim(t, "w1")
		if _, err := b.s.Fail(b.ctx, id, l.Token, Failure{Kind: FailTransport, Reason: "endpoint down"}); err != nil {
			t.Fatal(err)
		}
		if n, err := b.s.TransportReleases(b.ctx, id, run); err != nil || n != i+1 {
			t.Fatalf("TransportReleases after %d = %d, %v", i+1, n, err)
		}
	}
	// a shutdown release is not a transport one
	b.clock.Advance(time.Minute)
	l = b.claim(t, "w1")
	if _, err := b.s.Fail(b.ctx, id, l.Token, Failure{Kind: FailShutdown, Reason: "window"}); err != nil {
		t.Fatal(err)
	}
	if n, _ := b.s.TransportReleases(b.ctx, id, run); n != 2 {
		t.Errorf("TransportReleases = %d after a shutdown release, want 2", n)
	}

	b.clock.Advance(time.Minute)
	l = b.claim(t, "w1")
	until := b.clock.Now().Add(20 * time.Hour)
	to, err := b.s.Park(b.ctx, id, l.Token, until, "parked: released 2 times tonight for transport faults")
	if err != nil || to != StateQueued {
		t.Fatalf("Park = %s, %v", to, err)
	}
	tk, _ := b.s.Get(b.ctx, id)
	if tk.State != StateQueued || !tk.RunAfter.Equal(until) || tk.Attempts != 0 || !strings.Contains(tk.Reason, "parked") {
		t.Errorf("ticket after park = %s run_after %s attempts %d reason %q; want queued until %s, no attempt burnt", tk.State, tk.RunAfter, tk.Attempts, tk.Reason, until)
	}
	kinds := eventKinds(t, b, id)
	if kinds[len(kinds)-1] != "parked" {
		t.Errorf("events = %v, want the last to be parked", kinds)
	}
	if _, err := b.s.Claim(b.ctx, "w2", time.Minute); !errors.Is(err, ErrNoTicket) {
		t.Errorf("claim of a parked ticket tonight = %v, want ErrNoTicket", err)
	}
	if _, err := b.s.Park(b.ctx, id, l.Token, until, "again"); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("Park with a stale token = %v, want ErrLeaseLost", err)
	}
}

func TestModelCallEstimatesAndEndpointEvents(t *testing.T) {
	forEachEngine(t, testModelCallEstimatesAndEndpointEvents)
}

func testModelCallEstimatesAndEndpointEvents(t *testing.T, e engine) {
	b := e.setup(t)
	run, _ := b.s.StartRun(b.ctx, "once")
	id := b.enqueue(t, "1")
	calls := []ModelCall{
		{TicketID: id, RunID: run, Role: "maker", PromptTokens: 100, CostUSD: ptr(0.01), CostSource: "price_table", PriceCostUSD: ptr(0.01)},
		{TicketID: id, RunID: run, Role: "maker", PromptTokens: 900, UsageEstimated: true, CostUSD: ptr(0.02), CostSource: "estimate", PriceCostUSD: ptr(0.02)},
		{TicketID: id, RunID: run, Role: "judge", PromptTokens: 50, CostUSD: ptr(0.003), CostSource: "provider", PriceCostUSD: ptr(0.004), ProviderCostUSD: ptr(0.003)},
	}
	for _, c := range calls {
		if _, err := b.s.RecordModelCall(b.ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	got, err := b.s.ModelCalls(b.ctx, id)
	if err != nil || len(got) != 3 {
		t.Fatalf("ModelCalls = %v, %v", got, err)
	}
	if !got[1].UsageEstimated || got[1].CostSource != "estimate" || got[0].UsageEstimated ||
		got[2].ProviderCostUSD == nil || *got[2].ProviderCostUSD != 0.003 || *got[2].PriceCostUSD != 0.004 {
		t.Errorf("round trip = %+v", got)
	}
	u, err := b.s.UsageEstimates(b.ctx, run)
	if err != nil || u.Calls != 3 || u.EstimatedCalls != 1 || u.EstimatedUSD != 0.02 || u.ProviderUSD != 0.003 {
		t.Errorf("UsageEstimates = %+v, %v; want 3 calls, 1 estimated ($0.02), provider $0.003", u, err)
	}
	since := b.clock.Now()
	if err := b.s.RecordEndpointEvent(b.ctx, EndpointEvent{RunID: run, Endpoint: "local", BaseURL: "http://x/v1", Down: true, Since: since, LastError: "network: connection refused"}); err != nil {
		t.Fatal(err)
	}
	evs, err := b.s.EndpointEvents(b.ctx, run)
	if err != nil || len(evs) != 1 || !evs[0].Down || !evs[0].Since.Equal(since) || evs[0].LastError != "network: connection refused" {
		t.Errorf("EndpointEvents = %+v, %v", evs, err)
	}
}
