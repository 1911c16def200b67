package daemon

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/store"
)

// TestNightDollarsCountEveryNode: night.max_dollars is the night's, not this node's: spend
// another node recorded in the same night counts, so the call that crosses the cap stops
// this node even though its own spend is below it.
func TestNightDollarsCountEveryNode(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "t.db")
	here, err := store.Open(ctx, path, store.Options{Node: "vm-a"})
	if err != nil {
		t.Fatal(err)
	}
	defer here.Close()
	other, err := store.Open(ctx, path, store.Options{Node: "vm-b"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	run, _, err := here.JoinRun(ctx, "once", 0)
	if err != nil {
		t.Fatal(err)
	}
	id, _, err := here.Enqueue(ctx, store.NewTicket{Source: "t", ExternalID: "1"})
	if err != nil {
		t.Fatal(err)
	}
	price := func(v float64) *float64 { return &v }
	if _, err := other.RecordModelCall(ctx, store.ModelCall{TicketID: id, RunID: run, Role: "maker", CostUSD: price(0.9)}); err != nil {
		t.Fatal(err)
	}
	fired := 0
	rec := &callRecorder{store: here, runID: run, limit: 1, over: func() { fired++ }}
	if err := rec.RecordModelCall(ctx, model.Call{TicketID: id, Role: model.RoleMaker, CostUSD: price(0.05)}); err != nil {
		t.Fatal(err)
	}
	if fired != 0 {
		t.Fatalf("the cap fired at $0.95 of $1 for the night")
	}
	if err := rec.RecordModelCall(ctx, model.Call{TicketID: id, Role: model.RoleMaker, CostUSD: price(0.1)}); err != nil {
		t.Fatal(err)
	}
	if fired != 1 || rec.Dollars() > 0.16 {
		t.Errorf("after $0.15 here and $0.90 on vm-b: cap fired %d times, this node's dollars %v; want fired once at $1.05 for the night, $0.15 here", fired, rec.Dollars())
	}
}
