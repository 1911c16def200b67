package github

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/daemon/github/githubfake"
	"github.com/ticketd/ticketd/store"
)

// TestReadChecksSparseAnswers: a server that answers the check runs or the combined status
// with null, an empty body, or objects without their lists (a proxy, an old GitHub
// Enterprise) gives a verdict (pending: nothing read is green), never a panic.
func TestReadChecksSparseAnswers(t *testing.T) {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	runsPath := "GET /repos/acme/app/commits/" + sha + "/check-runs"
	statusPath := "GET /repos/acme/app/commits/" + sha + "/status"
	tests := []struct {
		name         string
		runs, status string
		want         string
	}{
		{"both null", `null`, `null`, store.CIPending},
		{"both empty", ``, ``, store.CIPending},
		{"no lists", `{"total_count":0}`, `{"state":"pending","sha":"` + sha + `"}`, store.CIPending},
		{"a failed run, statuses null", `{"total_count":1,"check_runs":[{"id":1,"name":"test","status":"completed","conclusion":"failure","app":null,"output":null}]}`, `null`, store.CIRed},
		{"runs null, a failed status", `null`, `{"state":"failure","statuses":[{"context":"ci","state":"failure","description":null,"target_url":null,"creator":null}]}`, store.CIRed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, cn := setupCanned(t)
			cn.set(runsPath, reply{200, nil, tt.runs})
			cn.set(statusPath, reply{200, nil, tt.status})
			runs, combined, err := readChecks(context.Background(), b.client, repoRef{"acme", "app"}, sha)
			if err != nil {
				t.Fatal(err)
			}
			if v := classifyChecks(runs, combined, time.Minute, time.Hour); v.State != tt.want {
				t.Errorf("runs %s, status %s: verdict %s (%s), want %s", tt.runs, tt.status, v.State, v.Detail, tt.want)
			}
		})
	}
}

// TestWatchIssueWithoutLabels: an issue answer that omits its labels (or sends null) says
// nothing about the label: the running ticket is not cancelled for "label removed". An
// empty list still is.
func TestWatchIssueWithoutLabels(t *testing.T) {
	const issuePath = "GET /repos/acme/app/issues/1"
	tests := []struct {
		name   string
		labels string // the labels member, "" to leave it out
		cancel bool
	}{
		{"labels left out", "", false},
		{"labels null", `"labels":null,`, false},
		{"labels empty", `"labels":[],`, true},
		{"label there", `"labels":[{"name":"TicketD"}],`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, cn := setupCanned(t)
			tk := runningTicket(t, b)
			cn.set(issuePath, reply{200, nil, `{"number":1,"state":"open","title":"average","body":null,"user":null,` + tt.labels +
				`"html_url":"https://github.com/acme/app/issues/1"}`})
			rep, err := b.intake.Watch(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			got, _ := b.store.Get(context.Background(), tk.ID)
			if cancelled := len(rep.Cancelled) > 0; cancelled != tt.cancel || got.CancelRequested != tt.cancel {
				t.Errorf("cancelled %v (ticket cancel requested %v, reason %q), want %v", rep.Cancelled, got.CancelRequested, strings.TrimSpace(got.Reason), tt.cancel)
			}
		})
	}
}

// TestEnterpriseServer: against GitHub Enterprise Server's layout (REST under /api/v3/,
// GraphQL at /api/graphql), with an App's installation token (GET /user refused), intake
// pages through the issues, the pull request opens, and a review's threads are read (all
// pages) to ask a round.
func TestEnterpriseServer(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	b.fake.Edit(func() {
		b.fake.Enterprise, b.fake.App, b.fake.BotLogin = true, true, "ticketd[bot]"
		b.fake.Perms[testRepo+"\x00alice"] = "write"
	})
	c, err := NewClient(ClientOptions{BaseURL: b.fake.URL(), Token: githubfake.Token})
	if err != nil {
		t.Fatal(err)
	}
	b.client, b.intake.Client = c, c
	tk := finish(t, b, "acme/app#121", "average", true, "")
	for i := range 120 {
		b.fake.AddIssue(testRepo, githubfake.Issue{Title: fmt.Sprintf("bug %d", i), Labels: []string{"ticketd"}, Author: "owner"})
	}
	rep, err := b.intake.Scan(ctx)
	if err != nil || rep.Listed != 120 || len(rep.Added) != 120 {
		t.Fatalf("scan: listed %d, added %d, %v; want 120 of each", rep.Listed, len(rep.Added), err)
	}
	p := newPublisher(b, &pushLog{})
	if _, err := p.Publish(ctx); err != nil {
		t.Fatalf("publish: %v", err)
	}
	if n, _ := p.pullOf(ctx, tk.ID); n == 0 {
		t.Fatal("no pull request recorded")
	}
	const pr = 100
	var comments []githubfake.LineComment
	for i := range 105 {
		comments = append(comments, githubfake.LineComment{Path: "money.py", Line: i + 1, Body: fmt.Sprintf("nit %d", i)})
	}
	b.fake.AddReview(testRepo, pr, githubfake.Review{User: "alice", State: "CHANGES_REQUESTED", Comments: comments})
	if rev, err := p.ReviewRounds(ctx); err != nil || len(rev) != 1 {
		t.Fatalf("review rounds: revised %v, %v; want one", rev, err)
	}
	if b.fake.Count("POST", "/api/graphql") < 2 || b.fake.Count("POST", "/graphql") != 0 || b.fake.Count("POST", "/api/v3/graphql") != 0 {
		t.Errorf("GraphQL requests: %d at /api/graphql, %d at /graphql, %d at /api/v3/graphql; want them all at /api/graphql (viewer, two pages of threads)",
			b.fake.Count("POST", "/api/graphql"), b.fake.Count("POST", "/graphql"), b.fake.Count("POST", "/api/v3/graphql"))
	}
}

// TestPublishFindsSparsePullRequest: the pull request GitHub lists for the fix branch may
// come with its head repository deleted (null), a ghost author (null) and a null body; it
// is still the one recorded, and no second one is opened.
func TestPublishFindsSparsePullRequest(t *testing.T) {
	b, cn := setupCanned(t)
	ctx := context.Background()
	tk := finish(t, b, "acme/app#1", "average", true, "")
	cn.set("GET /repos/acme/app/pulls", reply{200, nil, `[{"number":7,"state":"open","draft":true,"title":"Fixes #1","body":null,"user":null,` +
		`"html_url":"https://github.example/acme/app/pull/7","head":{"ref":"` + tk.Branch + `","label":"acme:` + tk.Branch + `","sha":"abc","repo":null,"user":null},` +
		`"base":{"ref":"main","repo":null},"labels":null,"assignees":null,"requested_reviewers":null}]`})
	if _, err := newPublisher(b, &pushLog{}).Publish(ctx); err != nil {
		t.Fatal(err)
	}
	outs, err := b.store.Outputs(ctx, tk.ID)
	if err != nil || len(outs) != 1 || outs[0].URL != "https://github.example/acme/app/pull/7" {
		t.Errorf("outputs %+v, %v; want pull request 7 recorded", outs, err)
	}
	if n := cn.count("POST /repos/acme/app/pulls"); n != 0 {
		t.Errorf("%d pull requests opened; want none", n)
	}
}
