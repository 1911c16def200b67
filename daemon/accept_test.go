package daemon

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/daemon/github"
	"github.com/ticketd/ticketd/daemon/github/githubfake"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/worktree"
)

// An accepted GitHub ticket gets its draft pull request as a done ticket does, exactly once:
// accept run twice (the second finding it accepted), then the daemon's own publishing pass,
// open one pull request whose body is the accepted report, from the fix branch.
func TestAcceptGitHubPullRequestOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, 1)
	title := "Surcharge rule 0 charges one cent too much"
	fix := worktree.BranchName(1, title)
	kept := fix + "-attempt-1"
	git(t, f.repo, "checkout", "-q", "-b", kept)
	write(t, filepath.Join(f.repo, "shop", "rule_00.py"), "def surcharge_0(cents):\n    return cents\n")
	git(t, f.repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-am", "ticketd attempt 1 at ticket 1 (not accepted)")
	git(t, f.repo, "checkout", "-q", "main")

	fake := githubfake.New(t)
	fake.AddIssue("acme/shop", githubfake.Issue{Title: title, Labels: []string{"ticketd"}, Author: "owner"})
	client, err := github.NewClient(github.ClientOptions{BaseURL: fake.URL(), Token: githubfake.Token, Reserve: 10})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, filepath.Join(f.dir, "t.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	id, _, err := st.Enqueue(ctx, store.NewTicket{Source: github.Source, ExternalID: github.ExternalID("acme/shop", 1), Repo: "shop", Title: title})
	if err != nil {
		t.Fatal(err)
	}
	l, err := st.Claim(ctx, "w1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Fail(ctx, id, l.Token, store.Failure{Kind: store.FailHuman, Branch: kept, Reason: "changes tests the base passed"}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var pushes []string
	pub := &github.Publisher{Client: client, Store: st, Token: "push-token", Logger: slog.New(slog.DiscardHandler),
		Targets: []github.Target{{Name: "acme/shop", Dir: f.repo, PushURL: "https://github.example/acme/shop.git"}},
		Push: func(_ context.Context, _, url, branch, _ string) error {
			mu.Lock()
			defer mu.Unlock()
			pushes = append(pushes, branch)
			return nil
		}}
	cfg := config.Config{Output: filepath.Join(f.dir, "results"), Repos: map[string]config.Repo{"shop": {Path: f.repo, BaseRef: "main"}}}
	opts := AcceptOptions{Who: "status page", PullRequest: pub.PullRequest}
	first, err := Accept(ctx, st, cfg, id, opts)
	if err != nil {
		t.Fatal(err)
	}
	if first.Resumed || first.By != "status page" || first.Branch != fix || !strings.HasPrefix(first.PullRequest, "http") {
		t.Errorf("first accept: %+v", first)
	}
	second, err := Accept(ctx, st, cfg, id, opts)
	if err != nil || !second.Resumed || second.PullRequest != first.PullRequest {
		t.Errorf("second accept: %+v, %v; want it resumed with the same pull request", second, err)
	}
	if _, err := pub.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	if len(fake.Pulls) != 1 {
		t.Fatalf("%d pull requests, want 1: %v", len(fake.Pulls), fake.Pulls)
	}
	pr := fake.Pulls[0]
	if !strings.HasSuffix(anyString(pr["head"]), fix) {
		t.Errorf("pull request head %v, want %s", pr["head"], fix)
	}
	if body := anyString(pr["body"]); !strings.Contains(body, "accepted by status page") || !strings.Contains(body, "Fixes #1") {
		t.Errorf("pull request body:\n%s", body)
	}
	for _, p := range pushes {
		if p != fix {
			t.Errorf("pushed %s, want only the fix branch %s", p, fix)
		}
	}
}

func anyString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case map[string]any:
		if ref, ok := x["ref"].(string); ok {
			return ref
		}
	}
	return ""
}
