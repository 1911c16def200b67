package main

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store"
)

// TestEstimatedAndEndpointHealth: calls whose server sent no usage are marked estimated in
// show and stats, a provider's own cost is shown beside the price table's, and stats says
// when an endpoint was down and why.
func TestEstimatedAndEndpointHealth(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "ticketd.db")
	s, err := store.Open(ctx, db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	run, _ := s.StartRun(ctx, "once")
	id, _, _ := s.Enqueue(ctx, store.NewTicket{Source: "test", ExternalID: "a", Repo: "r", Title: "No usage from the server"})
	for _, c := range []store.ModelCall{
		{Role: "maker", PromptTokens: 5000, CompletionTokens: 200, UsageEstimated: true, CostUSD: ptr(0.0116), CostSource: "estimate", PriceCostUSD: ptr(0.0116)},
		{Role: "judge", PromptTokens: 1000, CompletionTokens: 50, CostUSD: ptr(0.0004), CostSource: "provider", PriceCostUSD: ptr(0.0005), ProviderCostUSD: ptr(0.0004)},
	} {
		c.TicketID, c.RunID, c.Attempt, c.Model = id, run, 1, "gpt-4.1"
		if _, err := s.RecordModelCall(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	down := time.Date(2026, 3, 1, 2, 13, 4, 0, time.Local)
	for _, e := range []store.EndpointEvent{
		{RunID: run, Endpoint: "local", BaseURL: "http://10.0.0.5:8000/v1", Down: true, Since: down, At: down, LastError: "network: connection refused"},
		{RunID: run, Endpoint: "local", BaseURL: "http://10.0.0.5:8000/v1", Down: true, Since: down, At: down.Add(time.Minute), LastError: "timeout"},
	} {
		if err := s.RecordEndpointEvent(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.FinishRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	s.Close()

	show := ctl(t, "--db", db, "show", strconv.FormatInt(id, 10))
	mustContain(t, "show", show.stdout,
		"(estimated for 1 of 2 calls: the server sent no usage)",
		"(of which $0.0116 estimated)",
		"~5000", "~$0.0116 (estimated)",
		"$0.0004 (provider; table $0.0005)",
		"~ estimated: the server sent no usage")
	stats := ctl(t, "--db", db, "stats")
	mustContain(t, "stats", stats.stdout,
		"calls with estimated usage", "~6000", "(~$0.0116 estimated)",
		"endpoint local (http://10.0.0.5:8000/v1) down since 2026-03-01 02:13:04, last error: timeout; still down when the night ended",
		"~ estimated: some servers sent no usage")
	var rep statsReport
	decode(t, ctl(t, "--db", db, "--json", "stats", "--run", strconv.FormatInt(run, 10)), &rep)
	if rep.EstimatedCalls != 1 || len(rep.Endpoints) != 1 || rep.Endpoints[0].Probes != 1 || rep.ProviderCostUSD != 0.0004 {
		t.Errorf("stats --json = %+v, want 1 estimated call, one down period with one failed probe, provider $0.0004", rep.statsJSON)
	}
}
