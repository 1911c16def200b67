package main

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ticketd/ticketd/daemon/github/githubfake"
	"github.com/ticketd/ticketd/store"
)

// TestKillWhilePublishingPR: a GitHub ticket's fix is pushed and its draft pull request
// created on GitHub (the GitHub API test double), and ticketd is SIGKILLed before the answer
// reaches it: the pull request exists, but ticketd never recorded it. The next night must
// adopt that pull request, not open a second one nor push the branch again; the ticket is
// done once with its one attempt, and the night is ok.
func TestKillWhilePublishingPR(t *testing.T) {
	t.Parallel() // a process, folder, database and model server of its own
	if testing.Short() {
		t.Skip("builds the ticketd binary and kills it mid-publish")
	}
	bin := buildTicketd(t)
	c := newChaosNight(t, "sqlite", 1)
	fake := githubfake.New(t)
	fake.AddIssue("acme/shop", githubfake.Issue{Title: "Surcharge rule 0 charges one cent too much",
		Body: "surcharge_0(100) gives 101, want 100.", Labels: []string{"ticketd"}, Author: "maintainer"})
	// In front of the fake: the first pull request's creation reaches GitHub, and its answer
	// is held until the daemon is gone.
	target, err := neturl.Parse(fake.URL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(&neturl.URL{Scheme: target.Scheme, Host: target.Host})
	created := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/pulls") {
			first := false
			once.Do(func() { first = true })
			if first {
				rec := httptest.NewRecorder()
				proxy.ServeHTTP(rec, r) // GitHub makes it
				close(created)
				<-r.Context().Done() // the answer never comes: the daemon is killed first
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c.useGitHub(t, srv.URL)

	cmd, done := c.startOnce(t, bin)
	select {
	case <-created:
	case err := <-done:
		t.Fatalf("ticketd once ended (%v) before it opened a pull request\n%s", err, c.log(40))
	case <-time.After(4 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("no pull request within 4 minutes\n%s", c.log(40))
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatal(err)
	}
	<-done
	t.Logf("SIGKILLed ticketd with its pull request made on GitHub, unanswered")

	n := c.runOnce(t, bin)
	if n.code != exitOK || n.run.Outcome != store.OutcomeOK {
		t.Errorf("the next night: exit %d, %s (%s); want 0, ok\n%s", n.code, n.run.Outcome, n.run.Error, c.log(30))
	}
	var pulls []map[string]any
	fake.Edit(func() { pulls = append(pulls, fake.Pulls...) })
	t.Logf("pull request creations asked of GitHub: %d", fake.Count("POST", "/repos/acme/shop/pulls"))
	if len(pulls) != 1 {
		t.Errorf("%d pull requests on GitHub; want the one made before the kill", len(pulls))
	}
	list := c.summaries(t)
	if len(list) != 1 {
		t.Fatalf("%d tickets; want 1", len(list))
	}
	tk := list[0]
	var evs []store.Event
	c.look(t, func(s *store.Store) { evs, _ = s.Events(t.Context(), tk.ID) })
	terminal := 0
	for _, e := range evs {
		if e.ToState.Terminal() && e.FromState != e.ToState {
			terminal++
		}
	}
	if tk.State != store.StateDone || tk.Attempts != 1 || terminal != 1 {
		t.Errorf("ticket %d: %s, %d attempts, %d terminal events (%s); want done once with one attempt", tk.ID, tk.State, tk.Attempts, terminal, tk.Reason)
	}
	if out := strings.TrimSpace(gitOut(t, c.repo, "rev-list", "--count", "main.."+tk.Branch)); out != "1" {
		t.Errorf("ticket %d's branch %s has %s commits over main; want one", tk.ID, tk.Branch, out)
	}
	if n := c.pushedTimes(t, tk.Branch); n != 1 {
		t.Errorf("the remote updated %s %d times; want once", tk.Branch, n)
	}
	if wt := gitOut(t, c.repo, "worktree", "list", "--porcelain"); strings.Count(wt, "worktree ") != 1 {
		t.Errorf("worktrees left registered:\n%s", wt)
	}
	if t.Failed() {
		t.Logf("log:\n%s", c.log(60))
	}
}

// useGitHub takes the night's issues from the GitHub API at api (the test double, or a proxy
// in front of it), repository acme/shop, and publishes its fixes there: pushed to the bare
// remote, draft pull requests opened.
func (c *chaosNight) useGitHub(t *testing.T, api string) {
	t.Helper()
	cfg, err := os.ReadFile(c.config)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(cfg), "intake: [{kind: dir, path: issues}]\n", "", 1)
	text = strings.Replace(text, "    push_remote: pub\n", "", 1)
	text += fmt.Sprintf("github:\n  api_url: %s/\n  poll: 1s\n  watch: 1s\n  repos: [{name: acme/shop, repo: shop, label: ticketd, push_url: %s}]\n  output: {enabled: true}\n", api, c.remote)
	if err := os.WriteFile(c.config, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	c.env = append(c.env, "GITHUB_TOKEN="+githubfake.Token)
}
