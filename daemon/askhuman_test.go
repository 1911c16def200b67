package daemon

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/daemon/github"
	"github.com/ticketd/ticketd/daemon/github/githubfake"
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
	t.Parallel() // a night of its own: repository, store, model server
	realNight(t)
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
	// The results files went to the database with the question (store.EndAttempt).
	if kept, err := n.store.Artifact(ctx, 1, "report.md"); err != nil || string(kept) != string(report) {
		t.Errorf("report.md in the database = %d bytes, %v; want the %d on disk", len(kept), err, len(report))
	}
	if _, err := n.store.Artifact(ctx, 1, "attempt-1/attempt.json"); err != nil {
		t.Errorf("attempt record in the database: %v", err)
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
		q, a := strings.Index(text, "Question 1: "+question), strings.Index(text, "Answer (ticketctl:alice), quoted:\n> "+answer)
		if q < 0 || a < q {
			t.Errorf("night 2 maker request %d lacks the question and its answer", i+1)
		}
	}
	kinds := []string{}
	evs, _ := n.store.Events(ctx, 1)
	for _, e := range evs {
		if e.Kind != "note" {
			kinds = append(kinds, string(e.Kind))
		}
	}
	if got := strings.Join(kinds, ","); got != "enqueued,claimed,needs_info,answered,claimed,completed" {
		t.Errorf("events %s", got)
	}
}

// TestGitHubQuestionNight is the GitHub round trip through whole nights: the maker asks, the
// night posts the question once on the issue, the author answers there, and the next night
// takes the answer at its intake, fixes the ticket with it and opens the pull request.
func TestGitHubQuestionNight(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server
	realNight(t)
	ctx := context.Background()
	f := newFixture(t, 1)
	const question = "Should surcharge_0(100) be 100, or is rule 0 meant to add a cent?"
	f.cases[0].Behaviour, f.cases[0].Question = scriptedmodel.BehaviourAsk, question
	server, url := f.scripted(t, scriptedmodel.Options{Seed: 5})
	cfg := f.config(t, url, 1)
	fake := githubfake.New(t)
	useGitHub(t, &cfg, fake, time.Second, 50*time.Millisecond)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	fake.AddIssue("acme/shop", githubfake.Issue{Title: f.cases[0].Match, Body: "rule 0 charges a cent", Labels: []string{"ticketd"}, Author: "reporter", Assoc: "OWNER"})
	st, err := OpenStore(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	log := slog.New(slog.DiscardHandler)
	night := func() {
		t.Helper()
		sync, err := github.New(cfg, func(string) string { return githubfake.Token }, st, log, github.ClientOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := (&Daemon{Config: cfg, Store: st, Logger: log, GitHub: sync}).RunNight(ctx, "test"); err != nil {
			t.Fatal(err)
		}
	}

	night()
	tk, _ := st.Get(ctx, 1)
	if tk.State != store.StateNeedsInfo || tk.Attempts != 0 {
		t.Fatalf("after night 1: %s, %d attempts; want needs_info, 0", tk.State, tk.Attempts)
	}
	var comments []map[string]any
	fake.Edit(func() { comments = append(comments, fake.Comments["acme/shop#1"]...) })
	if len(comments) != 1 || !strings.Contains(comments[0]["body"].(string), question) {
		t.Fatalf("comments on the issue after night 1: %v; want the question, once", comments)
	}

	fake.AddComment("acme/shop", 1, "someone-else", "NONE", "make it 101")
	fake.AddComment("acme/shop", 1, "reporter", "OWNER", "100: rule 0 adds nothing; the extra cent is the bug.")
	before := len(makerRequestTexts(t, server))
	night()
	tk, _ = st.Get(ctx, 1)
	if tk.State != store.StateDone || tk.Attempts != 1 {
		t.Fatalf("after night 2: %s (%s), %d attempts; want done on its first charged attempt", tk.State, tk.Reason, tk.Attempts)
	}
	texts := makerRequestTexts(t, server)[before:]
	if len(texts) == 0 || !strings.Contains(texts[0], "Answer (github:reporter), quoted:\n> 100: rule 0 adds nothing") || strings.Contains(texts[0], "make it 101") {
		t.Errorf("night 2's first maker request does not carry the author's answer (alone)")
	}
	if n := fake.Count("POST", "/repos/acme/shop/issues/1/comments"); n != 1 {
		t.Errorf("question comments posted: %d, want 1", n)
	}
	if n := fake.Count("POST", "/repos/acme/shop/pulls"); n != 1 {
		t.Errorf("pull requests opened: %d, want 1", n)
	}
}

// TestAskingOffNight: with budget.max_questions 0 no maker request of the night, its
// preflight included, offers ask_human, so a maker inclined to ask (the scripted one's
// BehaviourAsk, which asks only with the tool offered) decides and fixes instead.
func TestAskingOffNight(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server
	realNight(t)
	f := newFixture(t, 1)
	f.cases[0].Behaviour, f.cases[0].Question = scriptedmodel.BehaviourAsk, "Should surcharge_0(100) be 100 or 101?"
	server, url := f.scripted(t, scriptedmodel.Options{Seed: 3})
	cfg := f.config(t, url, 1)
	cfg.Budget.MaxQuestions = 0
	n := runNight(t, cfg, pipeline.LayoutCacheFriendly)
	tk, err := n.store.Get(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if tk.State != store.StateDone || tk.Questions != 0 {
		t.Errorf("state %s, %d questions asked; want done, none", tk.State, tk.Questions)
	}
	makers := 0
	for _, r := range server.Requests() {
		if r.Role != "maker" {
			continue
		}
		makers++
		var body struct {
			Tools []struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tools"`
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatal(err)
		}
		for _, tool := range body.Tools {
			if tool.Function.Name == "ask_human" {
				t.Errorf("maker request %d offers ask_human with budget.max_questions 0", r.Seq)
			}
		}
		if len(body.Messages) > 0 && strings.Contains(body.Messages[0].Content, "ask_human") {
			t.Errorf("maker request %d: the system prompt describes ask_human with budget.max_questions 0", r.Seq)
		}
	}
	if makers < 2 {
		t.Errorf("%d maker requests, want the preflight and the attempt's", makers)
	}
}
