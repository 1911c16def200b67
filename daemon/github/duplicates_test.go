package github

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/daemon/github/githubfake"
	"github.com/ticketd/ticketd/store"
)

// TestPublishDuplicateComment: a duplicate closed with another issue's fix gets one comment
// pointing at that fix's pull request, and no pull request of its own; a restart posts
// nothing again.
func TestPublishDuplicateComment(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	enq := func(ext, title string) int64 {
		id, _, err := b.store.Enqueue(ctx, store.NewTicket{Source: Source, ExternalID: ext, Repo: "app", Title: title, MaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	first := enq("acme/app#1", "average of an empty list")
	dup := enq("acme/app#2", "mean crashes with @someone's data")
	if _, err := b.store.LinkDuplicate(ctx, dup, first, "same innermost traceback frame stats.py:mean"); err != nil {
		t.Fatal(err)
	}
	l, err := b.store.Claim(ctx, "w1", time.Minute)
	if err != nil || l.Ticket.ID != first {
		t.Fatalf("claim: %v (%d)", err, l.Ticket.ID)
	}
	if err := b.store.Complete(ctx, first, l.Token, store.Result{Branch: "ticketd/1-average", ResultDir: t.TempDir(), Summary: "fixed"}); err != nil {
		t.Fatal(err)
	}
	if s, err := b.store.SettleDuplicates(ctx, first); err != nil || len(s.Closed) != 1 {
		t.Fatalf("settle = %+v, %v", s, err)
	}
	pl := &pushLog{}
	if _, err := newPublisher(b, pl).Publish(ctx); err != nil {
		t.Fatal(err)
	}
	if len(b.fake.Pulls) != 1 || len(pl.pushes) != 1 {
		t.Errorf("pulls %d pushes %v; want one pull request, for #1 only", len(b.fake.Pulls), pl.pushes)
	}
	cs := b.fake.Comments["acme/app#2"]
	if len(cs) != 1 {
		t.Fatalf("comments on #2 = %d, want 1", len(cs))
	}
	body := cs[0]["body"].(string)
	for _, want := range []string{"same failure as #1", "stats.py:mean", "https://github.example/acme/app/pull/100", "`ticketd/1-average`", "<!-- ticketd:duplicate ticket=2 -->"} {
		if !strings.Contains(body, want) {
			t.Errorf("comment lacks %q:\n%s", want, body)
		}
	}
	before := len(b.fake.Requests)
	if _, err := newPublisher(b, pl).Publish(ctx); err != nil || len(b.fake.Requests) != before {
		t.Errorf("restart: %d requests, err %v; want none", len(b.fake.Requests)-before, err)
	}
}

// TestSyncerAfterIntake: a scan that added tickets runs AfterIntake before publishing (the
// daemon links duplicates there); a scan that added none does not.
func TestSyncerAfterIntake(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	calls := 0
	s := &Syncer{Intake: b.intake, Logger: b.intake.Logger, AfterIntake: func(context.Context) { calls++ }}
	b.fake.AddIssue(testRepo, githubfake.Issue{Title: "crash", Labels: []string{"ticketd"}, Author: "owner"})
	if rep := s.Scan(ctx); len(rep.Added) != 1 || calls != 1 {
		t.Errorf("first scan added %d, AfterIntake ran %d times; want 1 and 1", len(rep.Added), calls)
	}
	if s.Scan(ctx); calls != 1 {
		t.Errorf("a scan that added nothing ran AfterIntake (%d calls)", calls)
	}
}
