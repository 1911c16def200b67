package pipeline

import (
	"context"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/pipeline/tools"
)

// TestAskHuman: with a question left, ask_human ends the attempt with the question and no
// fix; with none left, it is refused with "decide from what you have" and the maker goes on
// to fix from what it has.
func TestAskHuman(t *testing.T) {
	const question = "Should double(2) be 4, or is the + 1 intended for rounding up?"
	tests := []struct {
		name       string
		left       int
		wantStatus Status
	}{
		{"a question left: the attempt ends asking", 1, StatusNeedsInfo},
		{"none left: refused, the maker decides", 0, StatusFixed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fm := &fakeModel{}
			var refusal string
			fm.maker = func(n int, req model.Request) openai.ChatCompletionMessage {
				switch n {
				case 1:
					return turn(call("r", tools.ReadFiles, map[string]any{"paths": []string{"calc.py"}}))
				case 2:
					return turn(call("q", tools.AskHuman, map[string]string{"question": question}))
				case 3:
					refusal = toolResults(req)["q"]
					return turn(call("e", tools.EditFile, fixEdit))
				}
				return turn(call("s", tools.Submit, map[string]string{"summary": "drop the + 1"}))
			}
			r, job := setupLoop(t, fm)
			job.Ticket.QuestionsLeft = tt.left
			out := r.Run(context.Background(), job)
			if out.Status != tt.wantStatus {
				t.Fatalf("status %s (%s), want %s", out.Status, out.Reason, tt.wantStatus)
			}
			switch tt.wantStatus {
			case StatusNeedsInfo:
				if out.Question != question || !strings.Contains(out.Reason, question) || out.Submits != 0 {
					t.Errorf("question %q, reason %q, submits %d", out.Question, out.Reason, out.Submits)
				}
				if n := len(fm.makerRequests()); n != 2 {
					t.Errorf("%d maker calls, want 2: nothing runs after the question", n)
				}
			default:
				if !strings.HasPrefix(refusal, "error: ") || !strings.Contains(refusal, "Decide from what you have") {
					t.Errorf("refusal = %q, want an error saying to decide from what the maker has", refusal)
				}
				if out.Question != "" {
					t.Errorf("question %q on a refused ask", out.Question)
				}
			}
		})
	}
}

// TestAnswerReachesEveryRole: an earlier question and its answer are part of the ticket, so
// the maker (and the reviewers) read them beside the issue, after the repository part.
func TestAnswerReachesEveryRole(t *testing.T) {
	tk := Ticket{ID: 3, Attempt: 2, Title: "add is wrong", Body: "add(2, 3) gives -1", Repo: "calc",
		Questions: []QA{{Question: "Should add(2, 3) be 5, or is subtraction intended for refunds?", Answer: "5: refunds use a separate function.", By: "ticketctl:alice"}}}
	for _, role := range model.Roles {
		a := newAttempt(&Runner{}, Job{Ticket: tk, RepoMap: "calc.py\n"}, time.Time{})
		user := a.ask.opening(role, nil)[1].Content
		q, ans, body := strings.Index(user, "Question 1: Should add(2, 3) be 5"), strings.Index(user, "Answer (ticketctl:alice), quoted:\n> 5: refunds"), strings.Index(user, "add(2, 3) gives -1")
		if q < 0 || ans < q || body > q || body < 0 {
			t.Errorf("%s: question at %d, answer at %d, issue body at %d in:\n%s", role, q, ans, body, user)
		}
	}
}

// TestAskingOff: with budget.max_questions 0 (Runner.NoQuestions) the maker is neither
// offered ask_human nor told of it, in the night's requests as in its preflight; with
// asking on, both are there, also for a ticket whose questions are used up (the prefix
// stays the same for every ticket of the night).
func TestAskingOff(t *testing.T) {
	tests := []struct {
		name        string
		noQuestions bool
		left        int
		want        bool
	}{
		{"asking off", true, 0, false},
		{"asking on, a question left", false, 1, true},
		{"asking on, none left", false, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fm := &fakeModel{}
			fm.maker = func(n int, req model.Request) openai.ChatCompletionMessage {
				return turn(call("s", tools.Submit, map[string]string{"summary": "nothing"}))
			}
			r, job := setupLoop(t, fm)
			r.NoQuestions = tt.noQuestions
			job.Ticket.QuestionsLeft = tt.left
			r.Run(context.Background(), job)
			reqs := fm.makerRequests()
			if len(reqs) == 0 {
				t.Fatal("no maker request")
			}
			pre := PreflightRequests(map[model.Role]bool{model.RoleMaker: true}, !tt.noQuestions)
			for what, req := range map[string]model.Request{"night": reqs[0], "preflight": pre[0]} {
				offered := false
				for _, tool := range req.Tools {
					offered = offered || tool.Function.Name == tools.AskHuman
				}
				system := req.Messages[0].Content
				if offered != tt.want || strings.Contains(system, "ask_human") != tt.want || strings.Contains(system, "put a question to the reporter") != tt.want {
					t.Errorf("%s request: ask_human offered %v, in the system prompt %v; want %v", what, offered, strings.Contains(system, "ask_human"), tt.want)
				}
				if !strings.Contains(system, "If a question and its answer are in the ticket, the answer settles what it answers") {
					t.Errorf("%s request: the system prompt no longer says an answered question settles the reading", what)
				}
			}
		})
	}
}
