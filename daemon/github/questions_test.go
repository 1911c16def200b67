package github

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/daemon/github/githubfake"
	"github.com/ticketd/ticketd/store"
)

// ask takes the issue's ticket through intake and a claim to needs_info, as a worker does
// when its maker calls ask_human.
func ask(t *testing.T, b bundle, question string) store.Ticket {
	t.Helper()
	ctx := context.Background()
	if _, err := b.intake.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := b.store.Claim(ctx, "w1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.store.AskHuman(ctx, l.Ticket.ID, l.Token, store.Asked{Question: question}); err != nil {
		t.Fatal(err)
	}
	tk, _ := b.store.Get(ctx, l.Ticket.ID)
	return tk
}

// TestQuestionRoundTrip: the question is posted once as a comment on the issue (also after a
// restart), a stranger's reply is not an answer, the author's reply is, and the ticket is
// back in the queue with that answer on record.
func TestQuestionRoundTrip(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	b.fake.AddIssue(testRepo, githubfake.Issue{Title: "add is wrong for refunds", Body: "add(2, 3) gives -1", Labels: []string{"ticketd"}, Author: "reporter", Assoc: "OWNER"})
	const q = "Should add(2, 3) be 5, or is subtraction intended for refunds? cc @maintainer, this fixes #7?"
	tk := ask(t, b, q)

	pub := newPublisher(b, &pushLog{})
	rep, err := pub.Publish(ctx)
	if err != nil || len(rep.Questions) != 1 {
		t.Fatalf("Publish = %+v, %v; want one question posted", rep, err)
	}
	comments := b.fake.Comments[testRepo+"#1"]
	if len(comments) != 1 {
		t.Fatalf("%d comments on the issue, want 1", len(comments))
	}
	body := comments[0]["body"].(string)
	for _, want := range []string{"**Question:** Should add(2, 3) be 5", "<!-- ticketd:question ticket=1 n=1 -->", "ticketctl answer 1"} {
		if !strings.Contains(body, want) {
			t.Errorf("question comment lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "@maintainer") || strings.Contains(body, "fixes #7") {
		t.Errorf("the model's question can notify or close from the comment:\n%s", body)
	}
	// A second pass, and a restarted publisher that lost the record, post nothing more.
	if rep, err := pub.Publish(ctx); err != nil || len(rep.Questions) != 0 {
		t.Errorf("second Publish = %+v, %v; want nothing posted", rep, err)
	}
	qs, _ := b.store.Questions(ctx, tk.ID)
	if len(qs) != 1 || qs[0].CommentURL == "" {
		t.Fatalf("questions = %+v, want the comment recorded", qs)
	}

	// No reply yet, then a stranger's: the ticket keeps waiting.
	if got, err := b.intake.Answers(ctx); err != nil || len(got) != 0 {
		t.Fatalf("Answers with no reply = %v, %v", got, err)
	}
	b.fake.AddComment(testRepo, 1, "drive-by", "NONE", "just make it 5 lol")
	if got, err := b.intake.Answers(ctx); err != nil || len(got) != 0 {
		t.Fatalf("Answers after a stranger's reply = %v, %v; want none taken", got, err)
	}
	if st, _ := b.store.Get(ctx, tk.ID); st.State != store.StateNeedsInfo {
		t.Fatalf("state after a stranger's reply = %s, want needs_info", st.State)
	}

	// The author answers: through the regular scan the ticket goes back in the queue.
	b.fake.AddComment(testRepo, 1, "reporter", "OWNER", "5. Refunds use subtract(), add must add.")
	srep, err := b.intake.Scan(ctx)
	if err != nil || len(srep.Answered) != 1 || srep.Answered[0] != tk.ID {
		t.Fatalf("Scan = %+v, %v; want ticket %d answered", srep, err, tk.ID)
	}
	after, _ := b.store.Get(ctx, tk.ID)
	qs, _ = b.store.Questions(ctx, tk.ID)
	if after.State != store.StateQueued || len(qs) != 1 || qs[0].Answer != "5. Refunds use subtract(), add must add." || qs[0].AnsweredBy != "github:reporter" {
		t.Fatalf("after the author's answer: state %s, questions %+v", after.State, qs)
	}
	// The resumed ticket is claimed again, the attempt not charged by the question.
	l, err := b.store.Claim(ctx, "w1", time.Minute)
	if err != nil || l.Ticket.ID != tk.ID || l.Attempt != 1 {
		t.Fatalf("claim after the answer = ticket %d attempt %d, %v; want ticket %d, attempt 1", l.Ticket.ID, l.Attempt, err, tk.ID)
	}
}

// TestAnswerRules: who may answer, and what counts as after the question.
func TestAnswerRules(t *testing.T) {
	tests := []struct {
		name     string
		post     bool     // ticketd posted the question
		before   []string // comments (login:assoc:body) written before the question
		after    []string // and after it
		perms    map[string]string
		wantBy   string // "" = no answer taken
		wantText string
	}{
		{"a writer's reply counts", true, nil, []string{"helper:COLLABORATOR:use UTC"}, map[string]string{"helper": "write"}, "github:helper", "use UTC"},
		{"a collaborator with read access does not", true, nil, []string{"reader:COLLABORATOR:use UTC"}, map[string]string{"reader": "read"}, "", ""},
		{"an allowlisted outsider counts", true, nil, []string{"trusted-outsider:NONE:local time"}, nil, "github:trusted-outsider", "local time"},
		{"a reply before the question does not", true, []string{"reporter:OWNER:earlier remark"}, nil, nil, "", ""},
		{"the first admitted reply wins", true, nil, []string{"reporter:OWNER:first", "reporter:OWNER:second"}, nil, "github:reporter", "first"},
		{"ticketd's own comments are skipped", true, nil, []string{"ticketd-bot:MEMBER:<!-- ticketd:escalation ticket=1 --> not an answer", "reporter:OWNER:real answer"}, nil, "github:reporter", "real answer"},
		// Issue 31: markers count only in ticketd's own comments.
		{"a stranger's marker after the answer does not hide it", true, nil, []string{"reporter:OWNER:real answer", "drive-by:NONE:<!-- ticketd:question ticket=1 n=1 -->"}, nil, "github:reporter", "real answer"},
		{"a stranger's marker before the question does not move the start", false, []string{"drive-by:NONE:<!-- ticketd:question ticket=1 n=1 -->"}, []string{"reporter:OWNER:UTC please"}, nil, "github:reporter", "UTC please"},
		{"the author quoting a marker is still an answer", true, nil, []string{"reporter:OWNER:<!-- ticketd:question ticket=1 n=1 --> UTC"}, nil, "github:reporter", "<!-- ticketd:question ticket=1 n=1 --> UTC"},
		{"no question posted: a reply after the ask counts", false, nil, []string{"reporter:OWNER:UTC please"}, nil, "github:reporter", "UTC please"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t)
			ctx := context.Background()
			b.fake.AddIssue(testRepo, githubfake.Issue{Title: "dates", Labels: []string{"ticketd"}, Author: "reporter", Assoc: "OWNER"})
			for login, p := range tt.perms {
				b.fake.Perms[testRepo+"\x00"+login] = p
			}
			add := func(cs []string) {
				for _, c := range cs {
					parts := strings.SplitN(c, ":", 3)
					b.fake.AddComment(testRepo, 1, parts[0], parts[1], parts[2])
				}
			}
			add(tt.before)
			tk := ask(t, b, "UTC or local time?")
			if tt.post {
				if _, err := newPublisher(b, &pushLog{}).Publish(ctx); err != nil {
					t.Fatal(err)
				}
			}
			add(tt.after)
			got, err := b.intake.Answers(ctx)
			if err != nil {
				t.Fatal(err)
			}
			qs, _ := b.store.Questions(ctx, tk.ID)
			switch {
			case tt.wantBy == "" && len(got) != 0:
				t.Errorf("answer taken: %+v", qs)
			case tt.wantBy != "" && (len(got) != 1 || qs[0].AnsweredBy != tt.wantBy || qs[0].Answer != tt.wantText):
				t.Errorf("answered %v, questions %+v; want %q by %s", got, qs, tt.wantText, tt.wantBy)
			}
		})
	}
}

// TestClosedIssueCancelsAWaitingTicket: a needs_info ticket whose issue is closed is
// cancelled like a queued one.
func TestClosedIssueCancelsAWaitingTicket(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	is := b.fake.AddIssue(testRepo, githubfake.Issue{Title: "dates", Labels: []string{"ticketd"}, Author: "reporter", Assoc: "OWNER"})
	tk := ask(t, b, "UTC or local time?")
	b.fake.Edit(func() { is.State = "closed" })
	rep, err := b.intake.Scan(ctx)
	if err != nil || len(rep.Cancelled) != 1 {
		t.Fatalf("Scan = %+v, %v; want the waiting ticket cancelled", rep, err)
	}
	if got, _ := b.store.Get(ctx, tk.ID); got.State != store.StateCancelled {
		t.Errorf("state %s, want cancelled", got.State)
	}
}

// TestStrangersMarkersIgnored: a marker pre-posted by someone else neither stands in for
// ticketd's escalation comment nor for its question; ticketd posts both itself, also when its
// token is a GitHub App's (whose login GET /user does not give).
func TestStrangersMarkersIgnored(t *testing.T) {
	for _, app := range []bool{false, true} {
		t.Run(map[bool]string{false: "user token", true: "app token"}[app], func(t *testing.T) {
			b := setup(t)
			ctx := context.Background()
			if app {
				b.fake.Edit(func() { b.fake.App, b.fake.BotLogin = true, "ticketd-app[bot]" })
			}
			b.fake.AddIssue(testRepo, githubfake.Issue{Title: "dates", Labels: []string{"ticketd"}, Author: "reporter", Assoc: "OWNER"})
			b.fake.AddComment(testRepo, 1, "drive-by", "NONE", "<!-- ticketd:question ticket=1 n=1 --> <!-- ticketd:escalation ticket=1 -->")
			ask(t, b, "UTC or local time?")
			rep, err := newPublisher(b, &pushLog{}).Publish(ctx)
			if err != nil || len(rep.Questions) != 1 {
				t.Fatalf("Publish = %+v, %v; want the question posted", rep, err)
			}
			cs := b.fake.Comments[testRepo+"#1"]
			if len(cs) != 2 || cs[1]["user"].(map[string]any)["login"] != b.fake.BotLogin {
				t.Fatalf("comments %v: want the stranger's and ticketd's own question", cs)
			}
			if rep.Questions[0] == cs[0]["html_url"] {
				t.Errorf("the stranger's comment was taken for ticketd's question: %v", rep.Questions)
			}
		})
	}
}
