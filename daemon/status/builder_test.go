package status

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/store/clock/clocktest"
)

// builder writes a database as nights leave it, through the store's API only.
type builder struct {
	t       *testing.T
	ctx     context.Context
	st      *store.Store
	clk     *clocktest.Fake
	results string // the results folder tickets' files go to
	n       int
	run     int64 // the night model calls are charged to
}

func newBuilder(t *testing.T) *builder {
	t.Helper()
	clk := clocktest.New(time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC))
	dir := t.TempDir()
	st, err := store.Open(context.Background(), filepath.Join(dir, "t.db"), store.Options{Now: clk.Now, BackoffBase: time.Second, BackoffMax: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &builder{t: t, ctx: context.Background(), st: st, clk: clk, results: filepath.Join(dir, "results")}
}

// attemptPlan is one attempt of a built ticket: its model calls, then how it ends: "done",
// "fix" (retry, or escalation at the last attempt), "park", or "running" (left leased).
type attemptPlan struct {
	calls  int
	end    string
	reason string
}

// ticket enqueues a ticket and works it through the attempts, one at a time, as a night
// would; it returns the id.
func (b *builder) ticket(repo, title string, attempts ...attemptPlan) int64 {
	b.t.Helper()
	b.n++
	id, _, err := b.st.Enqueue(b.ctx, store.NewTicket{Source: "dir", ExternalID: fmt.Sprintf("issue-%d.md", b.n), Repo: repo, Title: title,
		Body: "What the user saw:\n\n    " + title + "\n", MaxAttempts: len(attempts)})
	if err != nil {
		b.t.Fatal(err)
	}
	for i, a := range attempts {
		b.clk.Advance(2 * time.Second) // past the retry backoff
		l, err := b.st.Claim(b.ctx, "w1-100", time.Hour)
		if err != nil {
			b.t.Fatalf("claim attempt %d of %q: %v", i+1, title, err)
		}
		if l.Ticket.ID != id {
			b.t.Fatalf("claimed ticket %d, want %d: build one ticket at a time", l.Ticket.ID, id)
		}
		b.calls(id, l.Attempt, a.calls)
		b.clk.Advance(40 * time.Second)
		switch a.end {
		case "done":
			dir := b.resultDir(id, l.Attempt, "done", "", "--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-bug\n+fix\n")
			if err := b.st.Complete(b.ctx, id, l.Token, store.Result{Branch: fmt.Sprintf("ticketd/%d-fix", id), ResultDir: dir, Summary: "fixed"}); err != nil {
				b.t.Fatal(err)
			}
		case "fix":
			ending := "retry"
			if i == len(attempts)-1 {
				ending = "escalated"
			}
			dir := b.resultDir(id, l.Attempt, ending, a.reason, "--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-bug\n+half a fix\n")
			if _, err := b.st.Fail(b.ctx, id, l.Token, store.Failure{Kind: store.FailFix, Reason: a.reason, ResultDir: dir}); err != nil {
				b.t.Fatal(err)
			}
		case "park":
			if _, err := b.st.Park(b.ctx, id, l.Token, b.clk.Now().Add(20*time.Hour), a.reason); err != nil {
				b.t.Fatal(err)
			}
		case "running":
		default:
			b.t.Fatalf("attempt end %q", a.end)
		}
	}
	return id
}

// calls records n model calls of one attempt: a triage first, then maker calls whose
// cached share grows as a prefix cache would make it.
func (b *builder) calls(id int64, attempt, n int) {
	b.t.Helper()
	for i := range n {
		role, prompt, cached := "maker", int64(3000+900*i), int64(0)
		if i == 0 && attempt == 1 {
			role, prompt = "triage", 1400
		} else if i > 0 {
			cached = prompt - 900
		}
		cost := 0.0004 * float64(i+1)
		if _, err := b.st.RecordModelCall(b.ctx, store.ModelCall{TicketID: id, RunID: b.run, Attempt: attempt, Role: role, Model: "gpt-4.1",
			PromptTokens: prompt, CachedTokens: cached, CompletionTokens: int64(120 + 10*i), CostUSD: &cost,
			Latency: 800 * time.Millisecond, StartedAt: b.clk.Now()}); err != nil {
			b.t.Fatal(err)
		}
		b.clk.Advance(time.Second)
	}
}

// resultDir writes results/<id>/ as the daemon does for an ended attempt: attempt-<n>/ with
// attempt.json, checks.json, the patch and the stop reason, and report.md beside them.
func (b *builder) resultDir(id int64, attempt int, ending, reason, patch string) string {
	b.t.Helper()
	dir := filepath.Join(b.results, fmt.Sprint(id))
	adir := filepath.Join(dir, fmt.Sprintf("attempt-%d", attempt))
	if err := os.MkdirAll(adir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	rec := map[string]any{"attempt": attempt, "ending": ending, "status": map[string]string{"done": "fixed"}[ending], "reason": reason,
		"submits": 1, "steps": 4, "review_rounds": 1, "dropped_findings": 0,
		"history":  []string{"first tier failed in 610ms (1 test file(s), 1 target(s)); whole suite not run"},
		"findings": []map[string]any{{"file": "app.py", "line": 3, "severity": "minor", "category": "scope", "finding": "renames a helper"}}}
	checks := []map[string]any{{"name": "tests", "kind": "pytest", "passed": ending == "done", "exit_code": map[bool]int{true: 0, false: 1}[ending == "done"], "duration": int64(1500 * time.Millisecond),
		"summary": map[bool]string{true: "12 passed", false: "1 failed, 11 passed"}[ending == "done"], "tests": 12}}
	for name, v := range map[string]any{"attempt.json": rec, "checks.json": checks} {
		data, _ := json.Marshal(v)
		if err := os.WriteFile(filepath.Join(adir, name), data, 0o644); err != nil {
			b.t.Fatal(err)
		}
	}
	for name, text := range map[string]string{"patch": patch, "stop-reason": reason + "\n"} {
		if err := os.WriteFile(filepath.Join(adir, name), []byte(text), 0o644); err != nil {
			b.t.Fatal(err)
		}
	}
	report := fmt.Sprintf("# Ticket %d\n\n**%s** after attempt %d.\n\n## Checks\n\n- tests (pytest): 12 passed\n", id, ending, attempt)
	if err := os.WriteFile(filepath.Join(dir, "report.md"), []byte(report), 0o644); err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "patch"), []byte(patch), 0o644); err != nil {
		b.t.Fatal(err)
	}
	return dir
}

func (b *builder) startNight(trigger string) int64 {
	b.t.Helper()
	id, err := b.st.StartRun(b.ctx, trigger)
	if err != nil {
		b.t.Fatal(err)
	}
	b.run = id
	b.clk.Advance(time.Second)
	return id
}

func (b *builder) endNight(id int64, o store.Outcome, why string) {
	b.t.Helper()
	b.clk.Advance(time.Second)
	if err := b.st.EndRun(b.ctx, id, o, why); err != nil {
		b.t.Fatal(err)
	}
	b.clk.Advance(time.Minute)
}

// benchLike builds what a bench night of 31 tickets leaves (28 done, 3 escalated after
// three attempts each), after an earlier failed night and an ok one.
func benchLike(b *builder) {
	n1 := b.startNight("cron")
	b.endNight(n1, store.OutcomeFailed, "model endpoint preflight failed: maker: HTTP 401: invalid api key (set OPENAI_API_KEY)")
	n2 := b.startNight("cron")
	b.ticket("app", "Old escalation from the night before", attemptPlan{2, "fix", "fix: the judge rejected the change"})
	b.ticket("app", "A quick fix", attemptPlan{3, "done", ""})
	b.endNight(n2, store.OutcomeOK, "")
	n3 := b.startNight("bench")
	for i := range 31 {
		repo := []string{"app", "billing", "search"}[i%3]
		if i%10 == 4 {
			reason := fmt.Sprintf("budget: budget exhausted: loop: read_files called 5 times with the same arguments (case %d)", i)
			b.ticket(repo, fmt.Sprintf("Bench case %02d never gets fixed", i+1),
				attemptPlan{4, "fix", reason}, attemptPlan{3, "fix", reason}, attemptPlan{3, "fix", reason})
			continue
		}
		b.ticket(repo, fmt.Sprintf("Bench case %02d: a bug with a test", i+1), attemptPlan{5 + i%4, "done", ""})
	}
	b.endNight(n3, store.OutcomeOK, "")
}

func serveWith(t *testing.T, st *store.Store, opts Options) *httptest.Server {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s, err := New(st, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv
}
