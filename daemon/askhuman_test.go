package daemon

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/store"
)

// makerRequestTexts returns the user messages of every maker request about a ticket the
// scripted model saw (the night's preflight left out), one string per request.
func makerRequestTexts(t *testing.T, server *scriptedmodel.Server) []string {
	t.Helper()
	var out []string
	for _, r := range server.Requests() {
		if r.Role != "maker" {
			continue
		}
		var body struct {
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatal(err)
		}
		if len(body.Messages) > 1 && strings.HasPrefix(body.Messages[1].Content, "ticketd preflight:") {
			continue // the night's preflight: no ticket
		}
		var b strings.Builder
		for _, m := range body.Messages {
			if m.Role == "user" {
				b.WriteString(m.Content)
				b.WriteString("\n")
			}
		}
		out = append(out, b.String())
	}
	return out
}

// TestAskHumanNight: a maker that asks leaves its ticket needs_info with the question (in the
// store, the report and the events), no attempt charged; the night ends without spinning on
// it; the answer queues it, and the next night's maker reads question and answer and fixes it.
func TestAskHumanNight(t *testing.T) {
	requirePytest(t)
	f := newFixture(t, 1)
	const question = "Should surcharge_0(100) be 100 or 101: is rule 0 meant to add a cent?"
	f.cases[0].Behaviour, f.cases[0].Question = scriptedmodel.BehaviourAsk, question
	server, url := f.scripted(t, scriptedmodel.Options{Seed: 3})
	cfg := f.config(t, url, 1)
	n := runNight(t, cfg, pipeline.LayoutCacheFriendly)
	ctx := context.Background()

	tk, err := n.store.Get(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if tk.State != store.StateNeedsInfo || tk.Attempts != 0 || tk.Question != question || tk.Questions != 1 {
		t.Fatalf("after night 1: state %s, attempts %d, question %q (%d asked); want needs_info, 0, the question", tk.State, tk.Attempts, tk.Question, tk.Questions)
	}
	report, err := os.ReadFile(filepath.Join(cfg.Output, "1", "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Waiting for an answer", "## Question", question, "ticketctl answer 1"} {
		if !strings.Contains(string(report), want) {
			t.Errorf("report.md lacks %q:\n%s", want, report)
		}
	}
	if got := len(makerRequestTexts(t, server)); got != 2 {
		t.Errorf("night 1: %d maker requests, want 2 (read, then ask)", got)
	}

	const answer = "100: rule 0 adds no surcharge; the extra cent is the bug."
	if err := n.store.Answer(ctx, 1, answer, "ticketctl:alice"); err != nil {
		t.Fatal(err)
	}
	before := len(makerRequestTexts(t, server))
	d := &Daemon{Config: cfg, Store: n.store, Logger: slog.New(slog.DiscardHandler)}
	if _, err := d.RunNight(ctx, "test"); err != nil {
		t.Fatal(err)
	}
	tk, _ = n.store.Get(ctx, 1)
	if tk.State != store.StateDone || tk.Attempts != 1 {
		t.Fatalf("after night 2: state %s (%s), attempts %d; want done on its first charged attempt", tk.State, tk.Reason, tk.Attempts)
	}
	texts := makerRequestTexts(t, server)[before:]
	if len(texts) == 0 {
		t.Fatal("night 2 made no maker request")
	}
	for i, text := range texts {
		q, a := strings.Index(text, "Question 1: "+question), strings.Index(text, "Answer (ticketctl:alice): "+answer)
		if q < 0 || a < q {
			t.Errorf("night 2 maker request %d lacks the question and its answer", i+1)
		}
	}
	kinds := []string{}
	evs, _ := n.store.Events(ctx, 1)
	for _, e := range evs {
		if e.Kind != "note" {
			kinds = append(kinds, e.Kind)
		}
	}
	if got := strings.Join(kinds, ","); got != "enqueued,claimed,needs_info,answered,claimed,completed" {
		t.Errorf("events %s", got)
	}
}
