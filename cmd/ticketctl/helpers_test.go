package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/store/clock/clocktest"
)

// fixture is a real database holding tickets in every interesting state.
type fixture struct {
	db                               string
	done, escalated, queued, running int64
	runID                            int64
}

func ptr(v float64) *float64 { return &v }

// setup builds the fixture in t.TempDir through the store's own API:
//   - done: triage + two maker calls (first maker: 2000 prompt, 1500 cached), completed on a branch
//   - escalated: one maker call with unknown cost, failed at its only attempt
//   - running: claimed and held
//   - queued: never claimed
//
// all under one run, so per-night figures equal the overall ones except for the queued ticket.
func setup(t *testing.T) fixture {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	f := fixture{db: filepath.Join(dir, "ticketd.db")}
	// Each reading of the clock is a second after the one before: durations and orderings
	// are deterministic.
	clock := clocktest.New(time.Now().Add(-48 * time.Hour).Truncate(time.Second)).Step(time.Second)
	s, err := store.Open(ctx, f.db, store.Options{Now: clock.Now})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { s.Close() })

	enqueue := func(ext, title string, maxAttempts, prio int) int64 {
		t.Helper()
		id, _, err := s.Enqueue(ctx, store.NewTicket{Source: "test", ExternalID: ext, Repo: "sample", Title: title,
			Body: "body of " + title, Labels: []string{"bug"}, Priority: prio, MaxAttempts: maxAttempts})
		if err != nil {
			t.Fatalf("enqueue %s: %v", ext, err)
		}
		return id
	}
	claim := func(want int64) store.Lease {
		t.Helper()
		l, err := s.Claim(ctx, "w1", time.Hour)
		if err != nil {
			t.Fatalf("claim: %v", err)
		}
		if l.Ticket.ID != want {
			t.Fatalf("claimed ticket %d, want %d", l.Ticket.ID, want)
		}
		return l
	}
	call := func(id int64, attempt int, role string, prompt, cached, completion int64, cost *float64) {
		t.Helper()
		if _, err := s.RecordModelCall(ctx, store.ModelCall{TicketID: id, RunID: f.runID, Attempt: attempt, Role: role,
			Model: "gpt-test", PromptTokens: prompt, CachedTokens: cached, CompletionTokens: completion,
			CostUSD: cost, Latency: 1500 * time.Millisecond, FinishReason: "stop", StartedAt: clock.Now()}); err != nil {
			t.Fatalf("record model call: %v", err)
		}
	}

	if f.runID, err = s.StartRun(ctx, "once"); err != nil {
		t.Fatalf("start run: %v", err)
	}
	f.done = enqueue("a", "Average of an empty list crashes", 3, 30)
	f.escalated = enqueue("b", "Median is wrong for even lists", 1, 20)
	f.running = enqueue("c", "Slugify drops digits", 3, 10)
	f.queued = enqueue("d", "Parse dates in UTC", 3, 0)

	l := claim(f.done)
	call(f.done, 1, "triage", 1000, 0, 100, ptr(0.001))
	call(f.done, 1, "maker", 2000, 1500, 300, ptr(0.002))
	call(f.done, 1, "maker", 3000, 2500, 200, ptr(0.003))
	if _, err := s.RecordToolCall(ctx, store.ToolCall{TicketID: f.done, Attempt: 1, Step: 1, Tool: "read_files",
		Args: `{"paths":["stats.py"]}`, Result: "def mean(xs): ...", OK: true, Duration: 20 * time.Millisecond, At: clock.Now()}); err != nil {
		t.Fatalf("record tool call: %v", err)
	}
	if err := s.Complete(ctx, f.done, l.Token, store.Result{Branch: "ticketd/1-average", ResultDir: "/out/1", Summary: "guard empty list"}); err != nil {
		t.Fatalf("complete: %v", err)
	}

	l = claim(f.escalated)
	call(f.escalated, 1, "maker", 1000, 0, 100, nil)
	st, err := s.Fail(ctx, f.escalated, l.Token, store.Failure{Kind: store.FailFix, Reason: "tests still fail after 40 steps", ResultDir: "/out/2"})
	if err != nil || st != store.StateEscalated {
		t.Fatalf("fail: state %s, err %v; want escalated", st, err)
	}

	claim(f.running)
	if err := s.FinishRun(ctx, f.runID); err != nil {
		t.Fatalf("finish run: %v", err)
	}
	return f
}

// result is one run of the CLI.
type result struct {
	code           int
	stdout, stderr string
}

// ctl runs ticketctl with args in-process and captures what it printed.
func ctl(t *testing.T, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return result{code, out.String(), errb.String()}
}

// decode parses r's stdout as JSON into v, failing with the output when it is not.
func decode(t *testing.T, r result, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("stdout is not the expected JSON (%v):\n%s\nstderr:\n%s", err, r.stdout, r.stderr)
	}
}

// writeConfig writes a valid ticketd config whose store.path is dbPath, and returns its path.
func writeConfig(t *testing.T, dbPath string) string {
	t.Helper()
	roles := ""
	for _, r := range []string{"triage", "maker", "checker", "judge"} {
		roles += "    " + r + ": {endpoint: local, model: gpt-test}\n"
	}
	body := "store:\n  path: " + dbPath + "\nrepos:\n  sample:\n    path: ./sample\nmodels:\n  endpoints:\n    local: {base_url: \"http://127.0.0.1:9/v1\"}\n  roles:\n" + roles
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func mustContain(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s does not contain %q:\n%s", what, w, got)
		}
	}
}
