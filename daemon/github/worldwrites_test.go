package github

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/store"
)

// TestPublishOddAnswers: what GitHub answers when ticketd opens a done ticket's pull
// request. Drafts missing on the plan, or a pull request that exists though the lookup
// missed it, still end published; a refusal an operator must fix says what to fix; a
// secondary rate limit is a pause, not a failure.
func TestPublishOddAnswers(t *testing.T) {
	const create = "POST /repos/acme/app/pulls"
	tests := []struct {
		name      string
		noDrafts  bool
		prior     bool             // a pull request from the branch exists already
		once      map[string]reply // first answers only
		answers   map[string]reply
		published bool   // recorded as published, one pull request open
		draft     bool   // the pull request is a draft
		errHas    string // "" = no error
		paused    bool   // the error is a rate-limit pause
	}{
		{name: "drafts not supported on the plan (422)", noDrafts: true, published: true},
		{name: "already exists though the lookup listed none (422)", prior: true, published: true, draft: true,
			once: map[string]reply{"GET /repos/acme/app/pulls": {200, nil, `[]`}}},
		{name: "no commits between base and branch (422)", answers: map[string]reply{create: {422, nil,
			`{"message":"Validation Failed","errors":[{"resource":"PullRequest","code":"custom","message":"No commits between main and ticketd/1-average"}],"documentation_url":"https://docs.github.com/rest/pulls/pulls#create-a-pull-request","status":"422"}`}},
			errHas: "no commits beyond main"},
		{name: "token lacks pull requests write (403)", answers: map[string]reply{create: {403, nil,
			`{"message":"Resource not accessible by personal access token","documentation_url":"https://docs.github.com/rest/pulls/pulls#create-a-pull-request","status":"403"}`}},
			errHas: "Pull requests read and write"},
		{name: "repository archived (403)", answers: map[string]reply{create: {403, nil,
			`{"message":"Repository was archived so is read-only.","documentation_url":"https://docs.github.com/rest/pulls/pulls#create-a-pull-request","status":"403"}`}},
			errHas: "archived"},
		{name: "organization SAML SSO (403, X-GitHub-SSO)", answers: map[string]reply{create: {403,
			map[string]string{"X-GitHub-SSO": "required; url=https://github.com/orgs/acme/sso?authorization_request=A1B2"},
			`{"message":"Resource protected by organization SAML enforcement. You must grant your Personal Access token access to this organization.","documentation_url":"https://docs.github.com/articles/authenticating-to-a-github-organization-with-saml-single-sign-on/"}`}},
			errHas: "https://github.com/orgs/acme/sso?authorization_request=A1B2"},
		{name: "secondary rate limit on content creation (403)", answers: map[string]reply{create: {403, nil,
			`{"message":"You have exceeded a secondary rate limit and have been temporarily blocked from content creation. Please retry your request again later.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"}`}},
			errHas: "secondary rate limit", paused: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, cn := setupCanned(t)
			ctx := context.Background()
			b.fake.Edit(func() { b.fake.NoDrafts = tt.noDrafts })
			for k, r := range tt.answers {
				cn.set(k, r)
			}
			for k, r := range tt.once {
				cn.setOnce(k, r)
			}
			tk := finish(t, b, "acme/app#1", "average of an empty list", true, "")
			if tt.prior {
				b.fake.Edit(func() {
					b.fake.Pulls = append(b.fake.Pulls, map[string]any{"repo": testRepo, "number": 100, "draft": true,
						"head_label": "acme:" + tk.Branch, "html_url": "https://github.example/acme/app/pull/100", "state": "open"})
				})
			}
			_, err := newPublisher(b, &pushLog{}).Publish(ctx)
			t.Logf("err: %v", err)
			if (err != nil) != (tt.errHas != "") || (err != nil && !strings.Contains(err.Error(), tt.errHas)) {
				t.Errorf("err = %v, want one containing %q", err, tt.errHas)
			}
			if got := rateLimited(err); got != tt.paused {
				t.Errorf("rateLimited(err) = %v, want %v", got, tt.paused)
			}
			if tt.paused {
				if rerr := b.client.ready(false); !errors.Is(rerr, ErrRateLimited) {
					t.Errorf("client ready after a secondary limit: %v, want paused", rerr)
				}
			}
			left, err := b.store.Unpublished(ctx, Source, store.StateDone, store.OutputPullRequest, 10)
			if err != nil {
				t.Fatal(err)
			}
			if published := len(left) == 0; published != tt.published {
				t.Errorf("published = %v, want %v", published, tt.published)
			}
			if !tt.published {
				return
			}
			if len(b.fake.Pulls) != 1 {
				t.Fatalf("%d pull requests open, want 1", len(b.fake.Pulls))
			}
			if draft, _ := b.fake.Pulls[0]["draft"].(bool); draft != tt.draft {
				t.Errorf("draft = %v, want %v", draft, tt.draft)
			}
			if body, _ := b.fake.Pulls[0]["body"].(string); !tt.prior && !tt.draft && !strings.HasPrefix(body, noDraftNote) {
				t.Errorf("body of a pull request opened without draft does not say so: %q", body)
			}
		})
	}
}

// TestScanSecondaryLimitAndSSO: a listing refused by a secondary rate limit whose
// documentation_url go-github does not know is a pause, not a token fault; one refused for
// SAML SSO names that fix (and its URL), not a token scope.
func TestScanSecondaryLimitAndSSO(t *testing.T) {
	tests := []struct {
		name    string
		r       reply
		paused  bool
		want    string
		wantNot string
	}{
		{"secondary rate limit, no header", reply{403, nil,
			`{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID 1234:5678.","documentation_url":"https://docs.github.com/rest"}`},
			true, "secondary rate limit", "Issues read"},
		{"secondary rate limit, retry-after only", reply{403, map[string]string{"Retry-After": "120"},
			`{"message":"Forbidden"}`}, true, "Forbidden", "Issues read"},
		{"SAML SSO", reply{403, map[string]string{"X-GitHub-SSO": "required; url=https://github.com/orgs/acme/sso?authorization_request=A1B2"},
			`{"message":"Resource protected by organization SAML enforcement. You must grant your Personal Access token access to this organization.","documentation_url":"https://docs.github.com/articles/authenticating-to-a-github-organization-with-saml-single-sign-on/"}`},
			false, "SAML single sign-on and the token is not authorized for it: authorize it (GitHub: Settings, Developer settings, the token, Configure SSO) at https://github.com/orgs/acme/sso?authorization_request=A1B2", "Issues read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, cn := setupCanned(t)
			cn.set("GET /repos/acme/app/issues", tt.r)
			_, err := b.intake.Scan(context.Background())
			t.Logf("err: %v", err)
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), tt.wantNot) {
				t.Errorf("err = %v, want one containing %q and not %q", err, tt.want, tt.wantNot)
			}
			if got := rateLimited(err); got != tt.paused {
				t.Errorf("rateLimited(err) = %v, want %v", got, tt.paused)
			}
			if rerr := b.client.ready(false); errors.Is(rerr, ErrRateLimited) != tt.paused {
				t.Errorf("client ready: %v, want paused %v", rerr, tt.paused)
			}
		})
	}
}

// TestEscalationCommentFoundOnPageTwo: GitHub lists an issue's comments 100 at a time; the
// escalation comment ticketd already posted, on a busy issue's second page, is found, not
// posted again.
func TestEscalationCommentFoundOnPageTwo(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	tk := finish(t, b, "acme/app#1", "average", false, "budget spent")
	for i := range 150 {
		if i == 120 {
			b.fake.AddComment(testRepo, 1, "ticketd-bot", "MEMBER", "earlier\n\n"+marker("escalation", tk.ID))
			continue
		}
		b.fake.AddComment(testRepo, 1, "someone", "NONE", "me too")
	}
	if _, err := newPublisher(b, &pushLog{}).Publish(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(b.fake.Comments[testRepo+"#1"]); n != 150 {
		t.Errorf("%d comments on the issue, want the 150 there were (the escalation comment on page 2 found)", n)
	}
	if left, _ := b.store.Unpublished(ctx, Source, store.StateEscalated, store.OutputComment, 10); len(left) != 0 {
		t.Errorf("escalation not recorded as published")
	}
}

// TestEscalationCommentLockedIssue: GitHub refuses a comment on a locked issue (403) to
// an account without write access; the error says so, and the escalation stays unpublished
// for the next poll.
func TestEscalationCommentLockedIssue(t *testing.T) {
	b, cn := setupCanned(t)
	ctx := context.Background()
	finish(t, b, "acme/app#1", "average", false, "budget spent")
	cn.set("POST /repos/acme/app/issues/1/comments", reply{403, nil,
		`{"message":"Unable to create comment because issue is locked.","documentation_url":"https://docs.github.com/articles/locking-conversations/"}`})
	_, err := newPublisher(b, &pushLog{}).Publish(ctx)
	if err == nil || !strings.Contains(err.Error(), "the issue is locked: unlock it") || rateLimited(err) {
		t.Errorf("err = %v, want one saying the issue is locked and what to do", err)
	}
	if left, _ := b.store.Unpublished(ctx, Source, store.StateEscalated, store.OutputComment, 10); len(left) != 1 {
		t.Errorf("escalation recorded as published, want it kept for the next poll")
	}
}
