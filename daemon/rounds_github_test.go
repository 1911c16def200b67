package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/daemon/github"
	"github.com/ticketd/ticketd/daemon/github/githubfake"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/store"
)

// TestGitHubReviewRoundNight: the morning loop end to end against the GitHub fake, with real
// git, real pytest and the scripted model. Night 1 fixes the issue and opens the draft pull
// request; a writer's review with three line comments asks one round (a bot's review asks
// none); night 2 works the round from the pushed branch's head and ends with ONE new commit
// on the pull request's branch (pushed), ONE comment answering the three threads, none of
// them resolved, and review asked again of the writer.
func TestGitHubReviewRoundNight(t *testing.T) {
	t.Parallel() // nights of their own: repository, store, model servers
	realNight(t)
	ctx := context.Background()
	f := newFixture(t, 1)
	_, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
	fake := githubfake.New(t)
	remote := filepath.Join(t.TempDir(), "shop.git")
	git(t, filepath.Dir(remote), "init", "-q", "--bare", remote)
	withGitHub := func(cfg config.Config) config.Config {
		cfg.Intake = nil
		cfg.GitHub.APIURL, cfg.GitHub.Poll = fake.URL(), time.Hour // publishing at the night's end only
		cfg.GitHub.Repos = []config.GitHubRepo{{Name: "acme/shop", Repo: "shop", Label: "ticketd", PushURL: remote}}
		cfg.GitHub.Output.Enabled = true
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	cfg := withGitHub(f.config(t, url, 1))
	fake.AddIssue("acme/shop", githubfake.Issue{Title: f.cases[0].Match, Body: "see title", Labels: []string{"ticketd"}, Author: "maintainer"})
	fake.Edit(func() {
		fake.Perms["acme/shop\x00alice"] = "write"
		fake.Perms["acme/shop\x00review-bot[bot]"] = "write"
	})
	st, err := OpenStore(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	getenv := func(string) string { return githubfake.Token }
	night := func(cfg config.Config) {
		t.Helper()
		sync, err := github.New(cfg, getenv, st, log, github.ClientOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d := &Daemon{Config: cfg, Store: st, Logger: log, GitHub: sync}
		if _, err := d.RunNight(ctx, "test"); err != nil {
			t.Fatalf("night: %v", err)
		}
	}
	night(cfg)
	tk, err := st.Get(ctx, 1)
	if err != nil || tk.State != store.StateDone {
		t.Fatalf("night 1: ticket %s (%s), %v; want done", tk.State, tk.Reason, err)
	}
	var pr int
	fake.Edit(func() {
		if len(fake.Pulls) == 1 {
			pr = fake.Pulls[0]["number"].(int)
		}
	})
	if pr == 0 {
		t.Fatal("night 1 opened no pull request")
	}
	fixCommit := strings.TrimSpace(git(t, remote, "rev-parse", tk.Branch))

	// The morning: a bot reviews first (nothing), then the writer, with three comments.
	sync, err := github.New(cfg, getenv, st, log, github.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fake.AddReview("acme/shop", pr, githubfake.Review{User: "review-bot[bot]", Bot: true, State: "CHANGES_REQUESTED",
		Comments: []githubfake.LineComment{{Path: "shop/rule_00.py", Line: 6, Body: "nit: style"}}})
	if rev, err := sync.Publisher.ReviewRounds(ctx); err != nil || len(rev) != 0 {
		t.Fatalf("a bot's review: revised %v, %v; want none", rev, err)
	}
	fake.AddReview("acme/shop", pr, githubfake.Review{User: "alice", State: "CHANGES_REQUESTED", Comments: []githubfake.LineComment{
		{Path: "shop/rule_00.py", Line: 6, Body: "drop the + 0, it reads like a leftover"},
		{Path: "shop/rule_00.py", Line: 5, Body: "the docstring still says 0 cents"},
		{Path: "tests/test_rule_00.py", Line: 8, Body: "fine as is"}}})
	if rev, err := sync.Publisher.ReviewRounds(ctx); err != nil || !slices.Equal(rev, []int64{1}) {
		t.Fatalf("alice's review: revised %v, %v; want ticket 1", rev, err)
	}

	// Night 2: the double makes the reviewer's change, an edit of the line the fix wrote.
	f.cases = []scriptedmodel.Case{{Match: tk.Title, Patch: roundPatch}}
	server, url2 := f.scripted(t, scriptedmodel.Options{Seed: 1})
	night(withGitHub(f.config(t, url2, 1)))

	tk, _ = st.Get(ctx, 1)
	if tk.State != store.StateDone {
		t.Fatalf("night 2: ticket %s (%s); want done", tk.State, tk.Reason)
	}
	head := strings.TrimSpace(git(t, remote, "rev-parse", tk.Branch))
	if parent := strings.TrimSpace(git(t, remote, "rev-parse", tk.Branch+"^")); head == fixCommit || parent != fixCommit {
		t.Errorf("pushed %s at %s (parent %s); want one new commit on the fix %s", tk.Branch, head, parent, fixCommit)
	}
	var answers []string
	fake.Edit(func() {
		for _, c := range fake.Comments[fmt.Sprintf("acme/shop#%d", pr)] {
			if b := c["body"].(string); strings.Contains(b, "ticketd:round") {
				answers = append(answers, b)
			}
		}
		for _, th := range fake.ThreadsOf("acme/shop", pr) {
			if th.Resolved {
				t.Errorf("thread %s resolved by ticketd", th.ID)
			}
		}
	})
	if len(answers) != 1 {
		t.Fatalf("%d round comments; want one", len(answers))
	}
	for _, want := range []string{"shop/rule_00.py:6", "shop/rule_00.py:5", "tests/test_rule_00.py:8"} {
		if !strings.Contains(answers[0], want) {
			t.Errorf("the round comment does not answer %s:\n%s", want, answers[0])
		}
	}
	if strings.Contains(answers[0], "nit: style") {
		t.Errorf("the round comment answers the bot's thread:\n%s", answers[0])
	}
	if got := fake.RequestedReviewers("acme/shop", pr); !slices.Equal(got, []string{"alice"}) {
		t.Errorf("review re-requested of %v; want alice", got)
	}
	quoted := false
	for _, req := range server.Requests() {
		if req.Role == "maker" && strings.Contains(string(req.Body), "the docstring still says 0 cents") {
			quoted = true
		}
	}
	if !quoted {
		t.Error("the round's maker never read the review threads")
	}
}
