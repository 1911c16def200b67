package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store/storedriver"
)

// Sizes of the history BenchmarkBigHistory builds: a year or so of busy nights.
const (
	historyTickets     = 100_000
	historyCallsPerTkt = 8 // 800k model calls
	historyNights      = 100
)

// buildHistory fills s with historyTickets finished tickets (3 events and 8 model calls
// each, spread over historyNights runs) in one transaction of bulk INSERT ... SELECT, then
// adds a live queue: 3 tickets leased by other workers and 10 backing off.
func buildHistory(tb testing.TB, s *Store) {
	tb.Helper()
	ctx := context.Background()
	start := time.Now()
	now := s.nowMS()
	old := now - 400*24*3600*1000 // the history starts a year and a bit ago
	perNight := historyTickets / historyNights
	steps := []string{
		fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
			INSERT INTO runs (id, trigger, started_at, ended_at, after_event_id)
			SELECT i, 'cron', ?1 + i * 86400000, ?1 + i * 86400000 + 3600000, (i - 1) * %d * 3 FROM n`,
			historyNights, perNight),
		fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
			INSERT INTO tickets (id, source, external_id, repo, title, body, state, attempts, run_after,
				lease_owner, fence_token, branch, summary, created_at, updated_at, finished_at, last_event_id)
			SELECT i, 'github', 'acme/app#' || i, 'app', 'bug ' || i, 'the body of issue ' || i,
				CASE WHEN i %% 7 = 0 THEN 'escalated' ELSE 'done' END, 1 + i %% 3, ?1 + i * 86400 / %d * 1000,
				'w' || (i %% 3), 1 + i %% 3, 'ticketd/' || i, 'fixed', ?1 + i * 86400 / %d * 1000,
				?1 + i * 86400 / %d * 1000 + 600000, ?1 + i * 86400 / %d * 1000 + 600000, 3 * i FROM n`,
			historyTickets, perNight, perNight, perNight, perNight),
		fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
			INSERT INTO events (ticket_id, prev_id, at, kind, from_state, to_state, attempt, actor)
			SELECT i / 3 + 1, CASE i %% 3 WHEN 0 THEN NULL ELSE i END, ?1 + (i / 3 + 1) * 86400 / %d * 1000,
				CASE i %% 3 WHEN 0 THEN 'enqueued' WHEN 1 THEN 'claimed' ELSE 'completed' END,
				CASE i %% 3 WHEN 0 THEN '' WHEN 1 THEN 'queued' ELSE 'running' END,
				CASE i %% 3 WHEN 0 THEN 'queued' WHEN 1 THEN 'running' ELSE 'done' END, 1, 'w0' FROM n`,
			3*historyTickets-1, perNight),
		fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
			INSERT INTO model_calls (ticket_id, run_id, attempt, role, model, prompt_tokens, cached_tokens,
				completion_tokens, cost_usd, latency_ms, finish_reason, started_at)
			SELECT i / %d + 1, (i / %d) / %d + 1, 1,
				CASE i %% 4 WHEN 0 THEN 'triage' WHEN 1 THEN 'maker' WHEN 2 THEN 'checker' ELSE 'judge' END,
				'gpt', 4000 + i %% 1000, 2048, 300, 0.0125, 900, 'stop', ?1 + (i / %d + 1) * 86400 / %d * 1000 FROM n`,
			historyTickets*historyCallsPerTkt-1, historyCallsPerTkt, historyCallsPerTkt, perNight,
			historyCallsPerTkt, perNight),
	}
	err := s.write(ctx, "build history", func(ctx context.Context, tx storedriver.Tx) error {
		for _, q := range steps {
			if _, err := tx.Exec(ctx, q, old); err != nil {
				return fmt.Errorf("%w\n%s", err, q)
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("build history: %v", err)
	}
	// The live queue goes through the API, as a night would build it.
	for i := range 13 {
		id, _, err := s.Enqueue(ctx, NewTicket{Source: "live", ExternalID: fmt.Sprint(i), Repo: "app"})
		if err != nil {
			tb.Fatal(err)
		}
		l, err := s.Claim(ctx, fmt.Sprint("other", i), time.Hour)
		if err != nil || l.Ticket.ID != id {
			tb.Fatalf("claim live ticket %d: %+v, %v", id, l.Ticket.ID, err)
		}
		if i >= 3 { // backing off after a failed attempt
			if _, err := s.Fail(ctx, id, l.Token, Failure{Kind: FailFix, Reason: "red"}); err != nil {
				tb.Fatal(err)
			}
		}
	}
	tb.Logf("built %d finished tickets, %d model calls, %d events in %v",
		historyTickets, historyTickets*historyCallsPerTkt, 3*historyTickets, time.Since(start).Round(time.Millisecond))
}

// BenchmarkBigHistory times the idle poll and the claim (and, for scale, the listing of the
// active tickets and a night's stats) on a store with 100k finished tickets and 800k
// model calls. The goal is under 1 ms for the idle poll and the claim.
//
//	go test ./store -run XXX -bench BigHistory -benchtime 2000x
func BenchmarkBigHistory(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "history.db"), Options{BackoffBase: time.Hour, BackoffMax: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	buildHistory(b, s)

	b.Run("idle_poll", func(b *testing.B) {
		for range b.N {
			d, err := s.NextDue(ctx)
			if err != nil || d.Queued != 10 || d.Running != 3 {
				b.Fatalf("NextDue = %+v, %v; want 10 queued, 3 running", d, err)
			}
		}
	})
	b.Run("list_active", func(b *testing.B) {
		for range b.N {
			open, err := s.List(ctx, Filter{States: []State{StateQueued, StateRunning}})
			if err != nil || len(open) != 13 {
				b.Fatalf("List(active) = %d tickets, %v; want 13", len(open), err)
			}
		}
	})
	next := 0 // external ids stay unique across the benchmark's reruns
	b.Run("claim", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			next++
			id, _, err := s.Enqueue(ctx, NewTicket{Source: "bench", ExternalID: fmt.Sprint(next), Repo: "app"})
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			l, err := s.Claim(ctx, "w", time.Minute)
			if err != nil || l.Ticket.ID != id {
				b.Fatalf("claim = ticket %d, %v; want %d", l.Ticket.ID, err, id)
			}
			b.StopTimer()
			if err := s.Complete(ctx, id, l.Token, Result{}); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	})
	b.Run("claim_empty", func(b *testing.B) {
		for range b.N {
			if _, err := s.Claim(ctx, "w", time.Minute); err != ErrNoTicket {
				b.Fatalf("claim on a queue with nothing ready: %v; want ErrNoTicket", err)
			}
		}
	})
	b.Run("night_stats", func(b *testing.B) {
		for range b.N {
			if _, err := s.Stats(ctx, historyNights); err != nil {
				b.Fatal(err)
			}
		}
	})
}
