package main

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/ticketd/ticketd/store"
)

// TestShowContinuations: a model call's continuation count (an answer cut at the output
// limit and continued) is shown per call and in the ticket's totals, text and JSON.
func TestShowContinuations(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "ticketd.db")
	s, err := store.Open(ctx, db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	id, _, err := s.Enqueue(ctx, store.NewTicket{Source: "test", ExternalID: "1", Repo: "sample", Title: "long answers"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []store.ModelCall{
		{TicketID: id, Attempt: 1, Role: "maker", Model: "m", PromptTokens: 100, FinishReason: "stop", Continuations: 2},
		{TicketID: id, Attempt: 1, Role: "judge", Model: "m", PromptTokens: 100, FinishReason: "length", Continuations: 1},
		{TicketID: id, Attempt: 1, Role: "checker", Model: "m", PromptTokens: 100, FinishReason: "stop"},
	} {
		if _, err := s.RecordModelCall(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	sid := strconv.FormatInt(id, 10)
	var got showJSON
	decode(t, ctl(t, "--db", db, "--json", "show", sid), &got)
	if got.Totals.Continuations != 3 || len(got.ModelCalls) != 3 || got.ModelCalls[0].Continuations != 2 || got.ModelCalls[2].Continuations != 0 {
		t.Errorf("show --json: totals %d continuations, calls %+v; want 3, and 2, 1, 0 per call", got.Totals.Continuations, got.ModelCalls)
	}
	r := ctl(t, "--db", db, "show", sid)
	mustContain(t, "show", r.stdout, "continuations", "3 (answers cut at the output limit and continued)", "CONT")
}
