package github

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/daemon/github/githubfake"
	"github.com/ticketd/ticketd/store"
)

type pushLog struct {
	mu     sync.Mutex
	pushes []string
}

func (p *pushLog) push(_ context.Context, dir, url, branch, token string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pushes = append(p.pushes, url+" "+branch+" token="+token)
	return nil
}

func newPublisher(b bundle, pl *pushLog) *Publisher {
	return &Publisher{Client: b.client, Store: b.store, Token: "push-token", Push: pl.push, Logger: b.intake.Logger,
		Targets: []Target{{Name: testRepo, Dir: "/repos/app", PushURL: "https://github.example/acme/app.git"}}}
}

// finish enqueues issue ext as a GitHub ticket and drives it to done (with a report) or
// escalated (with reason).
func finish(t *testing.T, b bundle, ext, title string, done bool, reason string) store.Ticket {
	t.Helper()
	ctx := context.Background()
	id, _, err := b.store.Enqueue(ctx, store.NewTicket{Source: Source, ExternalID: ext, Repo: "app", Title: title, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	l, err := b.store.Claim(ctx, "w1", time.Minute)
	if err != nil || l.Ticket.ID != id {
		t.Fatalf("claim: %v (got ticket %d, want %d)", err, l.Ticket.ID, id)
	}
	dir := t.TempDir()
	if done {
		os.WriteFile(filepath.Join(dir, "report.md"), []byte("# Report\n\nChanged money.py; tests pass. Thanks @someone, this fixes #99.\n"), 0o644)
		err = b.store.Complete(ctx, id, l.Token, store.Result{Branch: "ticketd/1-average", ResultDir: dir, Summary: "fixed"})
	} else {
		_, err = b.store.Fail(ctx, id, l.Token, store.Failure{Kind: store.FailFix, Reason: reason, ResultDir: dir})
	}
	if err != nil {
		t.Fatal(err)
	}
	tk, err := b.store.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func TestPublishDraftPullRequest(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	tk := finish(t, b, "acme/app#1", "average of an empty list", true, "")
	pl := &pushLog{}
	rep, err := newPublisher(b, pl).Publish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.fake.Pulls) != 1 {
		t.Fatalf("pulls = %d, want 1 (report %+v)", len(b.fake.Pulls), rep)
	}
	pr := b.fake.Pulls[0]
	body, _ := pr["body"].(string)
	checks := []struct {
		what string
		ok   bool
	}{
		{"title " + pr["title"].(string), pr["title"] == "Fixes #1: average of an empty list"},
		{"draft", pr["draft"] == true},
		{"head", pr["head_label"] == "acme:ticketd/1-average"},
		{"base", pr["base"].(map[string]any)["ref"] == "main"},
		{"body starts with Fixes #1", strings.HasPrefix(body, "Fixes #1\n")},
		{"body has the report", strings.Contains(body, "Changed money.py; tests pass.")},
		{"body has the marker", strings.Contains(body, "<!-- ticketd:pr ticket=1 -->")},
		{"mention defused", !strings.Contains(body, "@someone") && strings.Contains(body, "@\u200dsomeone")},
		{"closing keyword in the report defused", !strings.Contains(body, "fixes #99")},
		{"pushed first", len(pl.pushes) == 1 && pl.pushes[0] == "https://github.example/acme/app.git ticketd/1-average token=push-token"},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: not as wanted\nbody:\n%s\npushes: %v", c.what, body, pl.pushes)
		}
	}
	outs, err := b.store.Outputs(ctx, tk.ID)
	if err != nil || len(outs) != 1 || outs[0].URL != "https://github.example/acme/app/pull/100" {
		t.Errorf("outputs = %+v, %v; want the pull request recorded", outs, err)
	}

	// A restart (new publisher, same database) neither opens a second pull request nor asks GitHub.
	before := len(b.fake.Requests)
	if _, err := newPublisher(b, pl).Publish(ctx); err != nil {
		t.Fatal(err)
	}
	if len(b.fake.Pulls) != 1 || len(b.fake.Requests) != before {
		t.Errorf("after restart: %d pulls, %d new requests; want 1 and 0", len(b.fake.Pulls), len(b.fake.Requests)-before)
	}
}

// A crash after GitHub created the pull request but before the store recorded it: the next
// process finds it by head branch instead of opening another.
func TestPublishFindsPullRequestAfterCrash(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	tk := finish(t, b, "acme/app#1", "average", true, "")
	b.fake.Pulls = append(b.fake.Pulls, map[string]any{"repo": testRepo, "number": 7, "head_label": "acme:ticketd/1-average",
		"html_url": "https://github.example/acme/app/pull/7", "title": "Fixes #1: average"})
	if _, err := newPublisher(b, &pushLog{}).Publish(ctx); err != nil {
		t.Fatal(err)
	}
	if n := b.fake.Count("POST", "/repos/acme/app/pulls"); n != 0 || len(b.fake.Pulls) != 1 {
		t.Errorf("pull request creations = %d (pulls %d), want 0 and 1", n, len(b.fake.Pulls))
	}
	outs, _ := b.store.Outputs(ctx, tk.ID)
	if len(outs) != 1 || outs[0].URL != "https://github.example/acme/app/pull/7" {
		t.Errorf("outputs = %+v, want the existing pull request", outs)
	}
}

func TestPublishEscalationComment(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	tk := finish(t, b, "acme/app#2", "flaky thing", false, "budget exhausted: 40 steps without passing tests; cc @maintainer")
	pl := &pushLog{}
	p := newPublisher(b, pl)
	p.Branches = func(context.Context, string, int64) ([]string, error) {
		return []string{"ticketd/2-flaky-thing-a1", "ticketd/2-flaky-thing-a2"}, nil
	}
	if _, err := p.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	cs := b.fake.Comments["acme/app#2"]
	if len(cs) != 1 {
		t.Fatalf("comments = %d, want 1", len(cs))
	}
	body := cs[0]["body"].(string)
	for _, want := range []string{"after 1 attempt(s)", "**Why it stopped:** fix: budget exhausted: 40 steps without passing tests",
		"`ticketd/2-flaky-thing-a1` `ticketd/2-flaky-thing-a2`", "<!-- ticketd:escalation ticket=" + strconv.FormatInt(tk.ID, 10) + " -->", "@\u200dmaintainer"} {
		if !strings.Contains(body, want) {
			t.Errorf("comment lacks %q:\n%s", want, body)
		}
	}
	if len(pl.pushes) != 2 {
		t.Errorf("pushes = %v, want both attempt branches", pl.pushes)
	}
	// Lost record (crash after posting): the marker is found, nothing is posted again.
	b2 := b
	st2, err := store.Open(ctx, filepath.Join(t.TempDir(), "fresh.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	b2.store = st2
	finish(t, b2, "acme/app#2", "flaky thing", false, "budget exhausted")
	if _, err := newPublisher(b2, pl).Publish(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(b.fake.Comments["acme/app#2"]); n != 1 {
		t.Errorf("comments after a lost record = %d, want still 1", n)
	}
	// And a restart on the same database does not even look.
	before := len(b.fake.Requests)
	if _, err := newPublisher(b, pl).Publish(ctx); err != nil || len(b.fake.Requests) != before {
		t.Errorf("restart: %d requests, err %v; want none", len(b.fake.Requests)-before, err)
	}
}

func TestDefuse(t *testing.T) {
	const z = "\u200d"
	tests := []struct{ in, want string }{
		{"thanks @alice", "thanks @" + z + "alice"},
		{"@octocat closes #3", "@" + z + "octocat closes" + z + " #" + z + "3"},
		{"cc @acme/team", "cc @" + z + "acme/team"},
		// A login never ends in a hyphen: the one after "@ann" leads a mention of its own.
		{"cc @ann-@bob", "cc @" + z + "ann-@" + z + "bob"},
		{"cc @ann-lee", "cc @" + z + "ann-lee"},
		{"mail me at a@b.com", "mail me at a@b.com"},
		{"`@code`", "`@code`"},
		// Issue 31: after an unclosed backtick a mention is plain text, and notifies.
		{"`@alice and more", "`@" + z + "alice and more"},
		{"``@bob` @carol``", "``@bob` @carol``"},
		{"`a` @dave `b", "`a` @" + z + "dave `b"},
		{"```\n@erin\n```", "```\n@erin\n```"},
		{"`x`` @frank", "`x`` @" + z + "frank"},
		{"Fixes #12", "Fixes" + z + " #" + z + "12"},
		{"this closes: acme/app#3", "this closes" + z + ": acme/app#" + z + "3"},
		{"issue #12 is related", "issue #" + z + "12 is related"},
		{"see GH-7", "see GH-" + z + "7"},
		{"Resolved gh-7", "Resolved" + z + " gh-" + z + "7"},
		{"Fixes https://github.com/o/r/issues/2", "Fixes" + z + " https" + z + "://github.com/o/r/issues/2"},
		{"see https://ghe.corp/o/r/pull/9 and www.github.com/o/r/issues/4", "see https" + z + "://ghe.corp/o/r/pull/9 and www" + z + ".github.com/o/r/issues/4"},
		{"docs at https://example.com/guide#3", "docs at https://example.com/guide#" + z + "3"},
		{"an entity &#39; stays", "an entity &#39; stays"},
		{"fix the bug", "fix the bug"},
	}
	for _, tt := range tests {
		if got := defuse(tt.in); got != tt.want {
			t.Errorf("defuse(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if again := defuse(tt.want); again != tt.want {
			t.Errorf("defuse is not idempotent on %q: %q", tt.want, again)
		}
	}
	if got := PullRequestTitle(5, "@octocat closes #3"); got != "Fixes #5: @"+z+"octocat closes"+z+" #"+z+"3" {
		t.Errorf("PullRequestTitle = %q: the issue title is not defused", got)
	}
}

// TestStrangersEscalationMarkerIgnored: a stranger who pre-posts the escalation comment's
// marker does not stop ticketd from posting its own (issue 31).
func TestStrangersEscalationMarkerIgnored(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	b.fake.AddIssue(testRepo, githubfake.Issue{Title: "flaky", Labels: []string{"ticketd"}, Author: "reporter", Assoc: "OWNER"})
	b.fake.AddComment(testRepo, 1, "drive-by", "NONE", "nothing to see <!-- ticketd:escalation ticket=1 -->")
	finish(t, b, testRepo+"#1", "flaky", false, "budget exhausted")
	rep, err := newPublisher(b, &pushLog{}).Publish(ctx)
	if err != nil || len(rep.Comments) != 1 {
		t.Fatalf("Publish = %+v, %v; want one escalation comment", rep, err)
	}
	cs := b.fake.Comments[testRepo+"#1"]
	if len(cs) != 2 || cs[1]["user"].(map[string]any)["login"] != b.fake.BotLogin || rep.Comments[0] != cs[1]["html_url"] {
		t.Errorf("comments %v, published %v: want ticketd's own escalation comment after the stranger's", cs, rep.Comments)
	}
}

// TestPublishLongReportFits: a report at the length limit that quotes many mentions or
// references grows when defused (a zero-width joiner each); the pull request body must still
// be within GitHub's 65,536 characters, or GitHub refuses it at every poll and the fix is
// never published.
func TestPublishLongReportFits(t *testing.T) {
	for _, unit := range []string{"@a ", "#1 ", "x"} {
		t.Run(strconv.Quote(unit), func(t *testing.T) {
			b := setup(t)
			ctx := context.Background()
			tk := finish(t, b, "acme/app#1", "average", true, "")
			if err := os.WriteFile(filepath.Join(tk.ResultDir, "report.md"), []byte(strings.Repeat(unit, 70000/len(unit))), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := newPublisher(b, &pushLog{}).Publish(ctx); err != nil {
				t.Fatalf("publish a long report of %q: %v", unit, err)
			}
			if len(b.fake.Pulls) != 1 {
				t.Fatalf("pulls = %d, want 1", len(b.fake.Pulls))
			}
			body := b.fake.Pulls[0]["body"].(string)
			if n := len([]rune(body)); n > githubfake.MaxBody || !strings.Contains(body, "(report truncated)") || !strings.Contains(body, "<!-- ticketd:pr ticket=1 -->") {
				t.Errorf("body: %d characters (max %d), truncation note %v, marker %v", n, githubfake.MaxBody,
					strings.Contains(body, "(report truncated)"), strings.Contains(body, "<!-- ticketd:pr"))
			}
		})
	}
}
