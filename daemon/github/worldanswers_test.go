package github

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/daemon/github/githubfake"
	"github.com/ticketd/ticketd/store"
)

// canned is a transport that answers chosen paths with exact bytes, as GitHub would, and
// sends everything else to the fake.
type canned struct {
	next http.RoundTripper
	mu   sync.Mutex
	// answers maps "METHOD /path" to a reply; a reply's Location may start with "BASE/".
	answers map[string]reply
	// once holds replies given to the first matching request only, before answers.
	once map[string]reply
	// seen counts the requests by "METHOD /path", canned or not.
	seen map[string]int
}

// count is how many requests key had.
func (c *canned) count(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen[key]
}

// unset sends key to the fake again.
func (c *canned) unset(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.answers, key)
}

type reply struct {
	status int
	header map[string]string
	body   string
}

func (c *canned) set(key string, r reply) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.answers[key] = r
}

// setOnce makes the first request to key get r; later ones go on as before.
func (c *canned) setOnce(key string, r reply) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.once == nil {
		c.once = map[string]reply{}
	}
	c.once[key] = r
}

func (c *canned) RoundTrip(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	key := req.Method + " " + req.URL.Path
	if c.seen == nil {
		c.seen = map[string]int{}
	}
	c.seen[key]++
	r, ok := c.once[key]
	if ok {
		delete(c.once, key)
	} else {
		r, ok = c.answers[key]
	}
	c.mu.Unlock()
	if !ok {
		return c.next.RoundTrip(req)
	}
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	h := http.Header{"Content-Type": {"application/json; charset=utf-8"}}
	for k, v := range r.header {
		h.Set(k, strings.ReplaceAll(v, "BASE/", req.URL.Scheme+"://"+req.URL.Host+"/"))
	}
	return &http.Response{StatusCode: r.status, Status: http.StatusText(r.status), Header: h, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Body: io.NopCloser(strings.NewReader(r.body)), ContentLength: int64(len(r.body)), Request: req}, nil
}

// setupCanned is setup with a client whose answers the test may replace path by path.
func setupCanned(t *testing.T) (bundle, *canned) {
	t.Helper()
	b := setup(t)
	cn := &canned{next: http.DefaultTransport, answers: map[string]reply{}}
	c, err := NewClient(ClientOptions{BaseURL: b.fake.URL(), Token: githubfake.Token, Reserve: 100, Transport: cn})
	if err != nil {
		t.Fatal(err)
	}
	b.client, b.intake.Client = c, c
	return b, cn
}

// runningTicket takes issue acme/app#1 through intake and a claim.
func runningTicket(t *testing.T, b bundle) store.Ticket {
	t.Helper()
	ctx := context.Background()
	b.fake.AddIssue(testRepo, githubfake.Issue{Title: "average", Labels: []string{"ticketd"}, Author: "owner"})
	if _, err := b.intake.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := b.store.Claim(ctx, "w1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return l.Ticket
}

// TestWatchOddAnswers: what GitHub answers when the issue of a running ticket is read.
// An issue transferred, deleted or gone is cancelled with the reason; a repository the
// token can no longer see, a rate limit or GitHub's own failure cancels nothing (the ticket
// keeps its work) and comes back as an error that says what to do.
func TestWatchOddAnswers(t *testing.T) {
	const issuePath = "GET /repos/acme/app/issues/1"
	rateHeaders := map[string]string{"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "0", "X-RateLimit-Used": "5000",
		"X-RateLimit-Reset": "4102444800", "X-RateLimit-Resource": "core"}
	tests := []struct {
		name    string
		answers map[string]reply
		cancel  string // the reason wanted; "" = not cancelled
		errHas  string // in the error wanted; "" = no error
	}{
		{name: "transferred to another repository (301)", answers: map[string]reply{
			issuePath: {301, map[string]string{"Location": "BASE/repositories/42/issues/7"},
				`{"message":"Moved Permanently","url":"https://api.github.com/repositories/42/issues/7","documentation_url":"https://docs.github.com/rest/guides/best-practices-for-using-the-rest-api#follow-redirects"}`},
			"GET /repositories/42/issues/7": {200, nil,
				`{"number":7,"state":"open","title":"average","body":null,"user":{"login":"owner"},"author_association":"OWNER",` +
					`"labels":[{"name":"ticketd","description":null}],"locked":false,"state_reason":null,` +
					`"repository_url":"https://api.github.com/repos/other/place","html_url":"https://github.com/other/place/issues/7"}`},
		}, cancel: "issue acme/app#1 was transferred to other/place#7 on GitHub"},
		{name: "repository renamed (301, same issue)", answers: map[string]reply{
			issuePath: {301, map[string]string{"Location": "BASE/repositories/42/issues/1"},
				`{"message":"Moved Permanently","url":"https://api.github.com/repositories/42/issues/1","documentation_url":"https://docs.github.com/rest/guides/best-practices-for-using-the-rest-api#follow-redirects"}`},
			"GET /repositories/42/issues/1": {200, nil,
				`{"number":1,"state":"open","title":"average","body":null,"user":null,"author_association":"NONE",` +
					`"labels":[{"name":"ticketd","description":null}],"locked":true,"active_lock_reason":"too heated","state_reason":"reopened",` +
					`"repository_url":"https://api.github.com/repos/acme/app-renamed","html_url":"https://github.com/acme/app-renamed/issues/1"}`},
		}},
		{name: "deleted (410)", answers: map[string]reply{
			issuePath: {410, nil, `{"message":"This issue was deleted","documentation_url":"https://docs.github.com/rest/issues/issues#get-an-issue","status":"410"}`},
		}, cancel: "issue acme/app#1 is gone from GitHub (HTTP 410)"},
		{name: "gone where the token cannot read (404), repository visible", answers: map[string]reply{
			issuePath: {404, nil, `{"message":"Not Found","documentation_url":"https://docs.github.com/rest/issues/issues#get-an-issue","status":"404"}`},
		}, cancel: "issue acme/app#1 is gone from GitHub (HTTP 404)"},
		{name: "repository no longer visible to the token (404)", answers: map[string]reply{
			issuePath:             {404, nil, `{"message":"Not Found","documentation_url":"https://docs.github.com/rest/issues/issues#get-an-issue","status":"404"}`},
			"GET /repos/acme/app": {404, nil, `{"message":"Not Found","documentation_url":"https://docs.github.com/rest/repos/repos#get-a-repository","status":"404"}`},
		}, errHas: "token"},
		{name: "rate limited (403, remaining 0)", answers: map[string]reply{
			issuePath: {403, rateHeaders, `{"message":"API rate limit exceeded for user ID 1.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-rate-limits"}`},
		}, errHas: "rate limit"},
		{name: "GitHub down (502)", answers: map[string]reply{
			issuePath: {502, map[string]string{"Content-Type": "text/html"}, "<html><body><h1>502 Bad Gateway</h1></body></html>"},
		}, errHas: "502"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, cn := setupCanned(t)
			ctx := context.Background()
			tk := runningTicket(t, b)
			for k, r := range tt.answers {
				cn.set(k, r)
			}
			rep, err := b.intake.Watch(ctx)
			t.Logf("report %+v, err %v", rep, err)
			got, gerr := b.store.Get(ctx, tk.ID)
			if gerr != nil {
				t.Fatal(gerr)
			}
			switch {
			case tt.cancel != "" && (!got.CancelRequested || len(rep.Cancelled) != 1):
				t.Errorf("cancel requested %v (report %+v, err %v), want cancelled: %s", got.CancelRequested, rep, err, tt.cancel)
			case tt.cancel == "" && (got.CancelRequested || len(rep.Cancelled) != 0):
				t.Errorf("cancel requested (reason %q), want the running ticket kept", got.Reason)
			}
			if tt.cancel != "" && got.Reason != tt.cancel {
				t.Errorf("reason %q, want %q", got.Reason, tt.cancel)
			}
			if (err != nil) != (tt.errHas != "") || (err != nil && !strings.Contains(err.Error(), tt.errHas)) {
				t.Errorf("err = %v, want one containing %q", err, tt.errHas)
			}
			if err != nil && strings.Contains(err.Error(), githubfake.Token) {
				t.Errorf("err = %v names the token", err)
			}
		})
	}
}

// TestScanRefusedSaysWhatToFix: a listing refused for the token (401) or hidden from it
// (404, also what a GitHub Enterprise URL without /api/v3/ gets) names the fix, never the
// token, and cancels nothing.
func TestScanRefusedSaysWhatToFix(t *testing.T) {
	tests := []struct {
		status int
		body   string
		want   string
	}{
		{401, `{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest","status":"401"}`, "github.token_env"},
		{404, `{"message":"Not Found","documentation_url":"https://docs.github.com/rest/issues/issues#list-repository-issues","status":"404"}`, "token's access"},
		{403, `{"message":"Resource not accessible by personal access token","documentation_url":"https://docs.github.com/rest/issues/issues#list-repository-issues","status":"403"}`, "Issues read"},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.status), func(t *testing.T) {
			b, cn := setupCanned(t)
			ctx := context.Background()
			tk := runningTicket(t, b)
			cn.set("GET /repos/acme/app/issues", reply{tt.status, nil, tt.body})
			cn.set("GET /repos/acme/app/issues/1", reply{tt.status, nil, tt.body})
			cn.set("GET /repos/acme/app", reply{tt.status, nil, tt.body})
			rep, err := b.intake.Scan(ctx)
			t.Logf("err: %v", err)
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), githubfake.Token) {
				t.Errorf("err = %v, want one naming %q and not the token", err, tt.want)
			}
			if got, _ := b.store.Get(ctx, tk.ID); got.CancelRequested || len(rep.Cancelled) != 0 {
				t.Errorf("cancelled %v (reason %q), want nothing cancelled", rep.Cancelled, got.Reason)
			}
		})
	}
}

// TestWatchLabelRecased: GitHub's label names are unique without case, and renaming a
// label's case ("ticketd" to "Ticketd") relabels every issue: the label is still on the
// issue, and its running ticket must keep its work.
func TestWatchLabelRecased(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	tk := runningTicket(t, b)
	b.fake.Edit(func() { b.fake.IssuesOf(testRepo)[0].Labels = []string{"Ticketd"} })
	rep, err := b.intake.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.store.Get(ctx, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.CancelRequested || len(rep.Cancelled) != 0 {
		t.Errorf("label recased to %q: cancel requested (reason %q), want the running ticket kept", "Ticketd", got.Reason)
	}
}

// TestRateIsTheRESTBudget: GitHub keeps the GraphQL budget apart from the REST one and says
// which a response counted against (X-RateLimit-Resource). A GraphQL answer with little
// left must neither pause intake (the REST reserve) nor show as the REST budget on /metrics.
func TestRateIsTheRESTBudget(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	b.fake.Edit(func() { b.fake.GraphQLRemaining = 20 })
	if _, err := b.intake.Scan(ctx); err != nil { // a REST listing: core budget seen
		t.Fatal(err)
	}
	if _, err := b.client.viewer(ctx); err != nil { // a GraphQL query, as for review threads
		t.Fatal(err)
	}
	if got := b.client.Rate(); got.Remaining < 4000 || got.Resource == "graphql" {
		t.Errorf("rate after a GraphQL answer = %+v, want the REST (core) budget, about 5000 left", got)
	}
	if err := b.client.ready(true); err != nil {
		t.Errorf("intake paused by the GraphQL budget: %v", err)
	}
}
