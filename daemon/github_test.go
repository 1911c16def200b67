package daemon

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/daemon/github"
	"github.com/ticketd/ticketd/daemon/github/githubfake"
	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/store/clock/clocktest"
)

// TestGitHubNight runs a night whose tickets come from a fake GitHub: closing one issue
// while its ticket runs cancels it through the watch and the worker's next heartbeat; the
// other is fixed, its branch pushed and a draft pull request opened; publishing again after
// a restart opens nothing twice.
func TestGitHubNight(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	ctx := context.Background()
	f := newFixture(t, 2)
	_, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
	// Both attempts wait at their checker until the close has cancelled one of them: the
	// other cannot be done before, nor the cancelled one finish first, at any load.
	hold := holdRole(t, url, "checker", "")
	cfg := f.config(t, hold.URL, 2)
	fake := githubfake.New(t)
	cfg.Night.Lease, cfg.Night.Heartbeat = 5*time.Second, 50*time.Millisecond
	remote := useGitHub(t, &cfg, fake, time.Second, 50*time.Millisecond)
	// The held requests are the checker's first: the second must not wait the default 20 s
	// for the first's answer (the prompt-cache warm-up gate) before it is held too.
	cfg.Models.WarmupWait = 200 * time.Millisecond
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range f.cases {
		fake.AddIssue("acme/shop", githubfake.Issue{Title: c.Match, Body: "see title", Labels: []string{"ticketd"}, Author: "maintainer"})
	}
	fake.AddIssue("acme/shop", githubfake.Issue{Title: "spam", Labels: []string{"ticketd"}, Author: "stranger", Assoc: "NONE"})

	st, err := OpenStore(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	// The night's log is shown when the test fails: a publish error is only logged.
	var logs bytes.Buffer
	logw := &syncWriter{w: &logs}
	log := slog.New(slog.NewTextHandler(logw, nil))
	t.Cleanup(func() {
		if t.Failed() {
			logw.mu.Lock()
			defer logw.mu.Unlock()
			t.Logf("the night's log:\n%s", logs.String())
		}
	})
	getenv := func(string) string { return githubfake.Token }
	sync, err := github.New(cfg, getenv, st, log, github.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := &Daemon{Config: cfg, Store: st, Logger: log, GitHub: sync}
	done := make(chan NightReport, 1)
	go func() {
		rep, err := d.RunNight(ctx, "test")
		if err != nil {
			t.Errorf("night: %v", err)
		}
		done <- rep
	}()
	hold.waitArrived(t)
	hold.waitArrived(t)
	id := waitRunning(t, st)
	tk, err := st.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	_, num, _ := github.ParseExternalID(tk.ExternalID)
	closed := time.Now()
	fake.Edit(func() {
		for _, is := range fake.IssuesOf("acme/shop") {
			if is.Number == num {
				is.State = "closed"
			}
		}
	})
	clocktest.WaitFor(t, 5*time.Minute, "the close requests the cancel", func() bool {
		got, err := st.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.State.Terminal() && !got.CancelRequested && got.State != store.StateCancelled {
			t.Fatalf("ticket %d ended %s before the close was noticed", id, got.State)
		}
		return got.CancelRequested || got.State == store.StateCancelled
	})
	t.Logf("issue closed -> cancel requested in %s (watch %s, heartbeat %s)", time.Since(closed).Round(time.Millisecond), cfg.GitHub.Watch, cfg.Night.Heartbeat)
	hold.waitAbandoned(t) // the cancelled attempt stopped spending
	hold.Release()
	awaitNight(t, done)
	if got, _ := st.Get(ctx, id); got.State == store.StateCancelled {
		t.Logf("issue closed -> ticket cancelled (worker stopped) in %s", got.FinishedAt.Sub(closed).Round(time.Millisecond))
	}

	list, _ := st.List(ctx, store.Filter{})
	if len(list) != 2 {
		t.Fatalf("tickets = %d, want 2 (the spam issue ignored)", len(list))
	}
	var fixed store.Summary
	for _, s := range list {
		want := store.StateDone
		if s.ID == id {
			want = store.StateCancelled
		} else {
			fixed = s
		}
		if s.State != want {
			t.Errorf("ticket %d (%s): %s (%s), want %s", s.ID, s.ExternalID, s.State, s.Reason, want)
		}
	}
	_, fixedNum, _ := github.ParseExternalID(fixed.ExternalID)
	var pulls []map[string]any
	fake.Edit(func() { pulls = append(pulls, fake.Pulls...) })
	if len(pulls) != 1 {
		t.Fatalf("pull requests = %d, want 1", len(pulls))
	}
	wantTitle := github.PullRequestTitle(fixedNum, fixed.Title)
	if pulls[0]["title"] != wantTitle || pulls[0]["draft"] != true ||
		!strings.HasPrefix(pulls[0]["body"].(string), "Fixes #") || !strings.Contains(pulls[0]["body"].(string), "# ") {
		t.Errorf("pull request = title %q draft %v body:\n%s\nwant title %q, a draft, Fixes and the report", pulls[0]["title"], pulls[0]["draft"], pulls[0]["body"], wantTitle)
	}
	if got := strings.TrimSpace(git(t, remote, "rev-parse", fixed.Branch)); got != strings.TrimSpace(git(t, f.repo, "rev-parse", fixed.Branch)) {
		t.Errorf("pushed branch %s at %s, not the local commit", fixed.Branch, got)
	}
	// A restarted daemon publishes nothing twice.
	sync2, err := github.New(cfg, getenv, st, log, github.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sync2.Scan(ctx)
	if n := fake.Count("POST", "/repos/acme/shop/pulls"); n != 1 {
		t.Errorf("pull request creations after restart = %d, want 1", n)
	}
}

// TestCommitMessage: a GitHub ticket's fix commit names its issue (the issue's number, not
// the ticket id); a folder ticket's names none; what the issue and the model wrote is defused.
func TestCommitMessage(t *testing.T) {
	const z = "\u200d"
	out := pipeline.Outcome{Artifacts: pipeline.Artifacts{Summary: "Guarded the empty list; @octocat closes #3, see https://github.com/o/r/issues/4"}}
	tests := []struct {
		name   string
		ticket store.Ticket
		want   string
	}{
		{"github", store.Ticket{ID: 7, Source: github.Source, ExternalID: "o/r#42", Title: "mean() crashes @alice fixes #9"},
			"Fixes #42: mean() crashes @" + z + "alice fixes" + z + " #" + z + "9\n\nGuarded the empty list; @" + z + "octocat closes" + z + " #" + z + "3, see https" + z + "://github.com/o/r/issues/4\n\nticketd ticket 7 (github o/r#" + z + "42)."},
		{"folder", store.Ticket{ID: 8, Source: "dir", ExternalID: "issues/01.md", Title: "mean() crashes"},
			"mean() crashes\n\nGuarded the empty list; @" + z + "octocat closes" + z + " #" + z + "3, see https" + z + "://github.com/o/r/issues/4\n\nticketd ticket 8 (dir issues/01.md)."},
	}
	for _, tt := range tests {
		if got := commitMessage(tt.ticket, out); got != tt.want {
			t.Errorf("%s:\n got  %q\n want %q", tt.name, got, tt.want)
		}
	}
}

// TestGitHubRefusalInNightOutcome: a night whose fix GitHub refuses to publish (a token
// without "Pull requests: write") is not ok: its outcome is partial and says what GitHub
// refused, where an operator reads it (ticketctl nights, the status page, the exit code),
// not only on /metrics. The ticket is done, its branch pushed and kept.
func TestGitHubRefusalInNightOutcome(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	ctx := context.Background()
	f := newFixture(t, 1)
	_, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
	cfg := f.config(t, url, 1)
	fake := githubfake.New(t)
	fake.NoPullWrite = true
	useGitHub(t, &cfg, fake, time.Hour, 15*time.Second)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	fake.AddIssue("acme/shop", githubfake.Issue{Title: f.cases[0].Match, Body: "see title", Labels: []string{"ticketd"}, Author: "maintainer"})
	st, err := OpenStore(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	sync, err := github.New(cfg, func(string) string { return githubfake.Token }, st, log, github.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := &Daemon{Config: cfg, Store: st, Logger: log, GitHub: sync}
	rep, err := d.RunNight(ctx, "test")
	if err != nil {
		t.Fatalf("night: %v", err)
	}
	if rep.Outcome != store.OutcomePartial || !strings.Contains(rep.Error, "GitHub refused") ||
		!strings.Contains(rep.Error, "publish: ") || !strings.Contains(rep.Error, "Resource not accessible by personal access token") {
		t.Errorf("night outcome %s (%q); want partial, naming the refused publish and GitHub's words", rep.Outcome, rep.Error)
	}
	list, _ := st.List(ctx, store.Filter{})
	if len(list) != 1 || list[0].State != store.StateDone {
		t.Fatalf("tickets = %+v; want the one done (GitHub's refusal is not the fix's)", list)
	}
	if n := fake.Count("POST", "/repos/acme/shop/pulls"); n == 0 {
		t.Error("no pull request was tried: the refusal under test never happened")
	}

	// The operator gives the token Pull requests write during the day: the next night asks
	// GitHub again at once (the refusal's backoff is the last night's) and publishes.
	fake.Edit(func() { fake.NoPullWrite = false })
	rep, err = d.RunNight(ctx, "test")
	if err != nil {
		t.Fatalf("second night: %v", err)
	}
	if rep.Outcome != store.OutcomeOK {
		t.Errorf("second night outcome %s (%q); want ok, the pull request opened", rep.Outcome, rep.Error)
	}
	if len(fake.Pulls) != 1 {
		t.Errorf("%d pull requests open after the second night, want 1", len(fake.Pulls))
	}
}

// useGitHub points cfg at fake's acme/shop instead of the intake folder, publishing to a new
// bare remote (returned), with the given poll and watch intervals.
func useGitHub(t *testing.T, cfg *config.Config, fake *githubfake.Server, poll, watch time.Duration) (remote string) {
	t.Helper()
	remote = filepath.Join(t.TempDir(), "shop.git")
	git(t, filepath.Dir(remote), "init", "-q", "--bare", remote)
	cfg.Intake = nil
	cfg.GitHub.APIURL, cfg.GitHub.Poll, cfg.GitHub.Watch = fake.URL(), poll, watch
	cfg.GitHub.Repos = []config.GitHubRepo{{Name: "acme/shop", Repo: "shop", Label: "ticketd", PushURL: remote}}
	cfg.GitHub.Output.Enabled = true
	return remote
}
