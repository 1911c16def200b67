// Package github connects ticketd to GitHub: it turns labelled issues into tickets (only
// from authors allowed to start a paid run), cancels a ticket whose issue was closed or
// unlabelled, and, when output is enabled, pushes a done ticket's branch and opens a draft
// pull request, or comments on the issue of an escalated one. Every write is looked up
// first, so a restart never opens a second pull request or posts a second comment.
package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	gh "github.com/google/go-github/v89/github"
)

// ErrRateLimited is returned while the API budget is paused (below the reserve, or after a
// rate-limit answer) until the window resets.
var ErrRateLimited = errors.New("github API rate limit: paused until the window resets")

// Client is the GitHub API as ticketd uses it: go-github with conditional GETs and a
// rate-limit guard shared by intake and output.
type Client struct {
	api   *gh.Client
	cache *etagCache
	now   func() time.Time
	// reserve is how many calls of the hourly budget Scan leaves untouched.
	reserve int

	mu          sync.Mutex
	rate        gh.Rate
	pausedUntil time.Time
	self        string // the login ticketd posts as, once known (Self)
}

// ClientOptions configure NewClient; zero fields take the defaults.
type ClientOptions struct {
	BaseURL string // default https://api.github.com/
	Token   string // required: sent as a bearer token, never logged
	// Reserve is the rate-limit reserve below which Scan pauses (default 100).
	Reserve   int
	Transport http.RoundTripper // default http.DefaultTransport
	Now       func() time.Time  // default time.Now
	Timeout   time.Duration     // per request, default 30s
}

// NewClient builds a client for the API at opts.BaseURL.
func NewClient(opts ClientOptions) (*Client, error) {
	if opts.Token == "" {
		return nil, errors.New("github client: no token (set the variable named by github.token_env)")
	}
	base := opts.BaseURL
	if base == "" {
		base = "https://api.github.com/"
	}
	if opts.Timeout == 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	cache := newETagCache(opts.Transport)
	api, err := gh.NewClient(gh.WithTransport(cache), gh.WithAuthToken(opts.Token), gh.WithURLs(&base, &base),
		gh.WithTimeout(opts.Timeout), gh.WithUserAgent("ticketd"))
	if err != nil {
		return nil, fmt.Errorf("github client for %s: %w", base, err)
	}
	return &Client{api: api, cache: cache, now: opts.Now, reserve: opts.Reserve}, nil
}

// NotModified is how many GETs GitHub answered 304 (free of rate limit) so far.
func (c *Client) NotModified() int64 { return c.cache.notModified.Load() }

// Rate is the last REST (core) rate-limit state GitHub reported.
func (c *Client) Rate() gh.Rate {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rate
}

// ready returns ErrRateLimited while paused; withReserve also pauses when fewer than the
// reserve calls are left (intake stops before output and the cancel watch run dry).
func (c *Client) ready(withReserve bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if now.Before(c.pausedUntil) {
		return fmt.Errorf("%w (until %s)", ErrRateLimited, c.pausedUntil.UTC().Format(time.RFC3339))
	}
	if withReserve && c.rate.Limit > 0 && c.rate.Remaining < c.reserve && now.Before(c.rate.Reset.Time) {
		return fmt.Errorf("%w: %d of %d calls left, reserve %d (until %s)", ErrRateLimited,
			c.rate.Remaining, c.rate.Limit, c.reserve, c.rate.Reset.UTC().Format(time.RFC3339))
	}
	return nil
}

// observe records the REST rate-limit state of a response and pauses on a rate-limit error.
func (c *Client) observe(resp *gh.Response, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// The REST budget only: GraphQL answers (review threads, the viewer) count against a
	// budget of their own, named in X-RateLimit-Resource.
	if resp != nil && resp.Rate.Limit > 0 && (resp.Rate.Resource == "" || resp.Rate.Resource == "core") {
		c.rate = resp.Rate
	}
	var rl *gh.RateLimitError
	var abuse *gh.AbuseRateLimitError
	switch {
	case errors.As(err, &rl):
		c.pausedUntil = rl.Rate.Reset.Time
	case errors.As(err, &abuse):
		wait := time.Minute
		if abuse.RetryAfter != nil {
			wait = *abuse.RetryAfter
		}
		c.pausedUntil = c.now().Add(wait)
	case resp != nil && (resp.StatusCode == http.StatusTooManyRequests || secondaryLimit(err)):
		wait := time.Minute
		if s, e := strconv.Atoi(resp.Header.Get("Retry-After")); e == nil && s > 0 {
			wait = time.Duration(s) * time.Second
		}
		c.pausedUntil = c.now().Add(wait)
	}
}

// statusOf returns the HTTP status of a go-github error, or 0.
func statusOf(err error) int {
	var er *gh.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return er.Response.StatusCode
	}
	return 0
}

// rateLimited reports whether err is a rate-limit pause: the client's own (ErrRateLimited)
// or GitHub's answer that started it (observe), primary or secondary.
func rateLimited(err error) bool {
	var rl *gh.RateLimitError
	var abuse *gh.AbuseRateLimitError
	return errors.Is(err, ErrRateLimited) || errors.As(err, &rl) || errors.As(err, &abuse) ||
		statusOf(err) == http.StatusTooManyRequests || secondaryLimit(err)
}

// secondaryLimit reports whether err is a secondary rate limit that go-github left a plain
// 403: it knows one only by its documentation_url, which GitHub does not always send. The
// message says it ("You have exceeded a secondary rate limit", formerly "abuse detection
// mechanism"), or a Retry-After header does; GitHub wants a wait of at least a minute.
func secondaryLimit(err error) bool {
	var er *gh.ErrorResponse
	if !errors.As(err, &er) || er.Response == nil || er.Response.StatusCode != http.StatusForbidden {
		return false
	}
	m := strings.ToLower(er.Message)
	return strings.Contains(m, "secondary rate limit") || strings.Contains(m, "abuse detection") ||
		er.Response.Header.Get("Retry-After") != ""
}

// ssoHint is the fix for a 403 GitHub answered because the organization enforces SAML
// single sign-on and the token is not authorized for it (an X-GitHub-SSO header, with the
// URL that authorizes it for an hour), "" for any other error. No token scope helps there.
func ssoHint(err error) string {
	var er *gh.ErrorResponse
	if !errors.As(err, &er) || er.Response == nil || er.Response.StatusCode != http.StatusForbidden {
		return ""
	}
	sso := er.Response.Header.Get("X-GitHub-SSO")
	if sso == "" {
		return ""
	}
	hint := "; the organization enforces SAML single sign-on and the token is not authorized for it: authorize it " +
		"(GitHub: Settings, Developer settings, the token, Configure SSO)"
	for _, part := range strings.Split(sso, ";") {
		if u, ok := strings.CutPrefix(strings.TrimSpace(part), "url="); ok && strings.HasPrefix(u, "https://") {
			hint += " at " + u + " (valid for an hour)"
		}
	}
	return hint
}

// writeHint says what to fix when GitHub refuses a write (what: "open pull requests",
// "comment on issues") for a reason an operator must act on, prefixed "; ", "" otherwise.
func writeHint(err error, what, permission string) string {
	if rateLimited(err) {
		return ""
	}
	if h := ssoHint(err); h != "" {
		return h
	}
	var er *gh.ErrorResponse
	if !errors.As(err, &er) || er.Response == nil {
		return ""
	}
	m := strings.ToLower(er.Message)
	switch {
	case er.Response.StatusCode == http.StatusForbidden && strings.Contains(m, "archived"):
		return "; the repository is archived (read-only): unarchive it or remove it from github.repos"
	case er.Response.StatusCode == http.StatusForbidden && strings.Contains(m, "locked"):
		return "; the issue is locked: unlock it, or give the token's account write access to the repository (writers may comment on locked issues)"
	case er.Response.StatusCode == http.StatusForbidden && strings.Contains(m, "not accessible"):
		return "; the token may not " + what + ": give it " + permission + " (fine-grained token) or the repo scope (classic token)"
	}
	return ""
}

// accessHint says what to fix when GitHub refuses the token or hides the repository
// (prefixed "; "), "" for any other error.
func accessHint(err error) string {
	if rateLimited(err) {
		return ""
	}
	if h := ssoHint(err); h != "" {
		return h
	}
	switch statusOf(err) {
	case http.StatusUnauthorized:
		return "; GitHub refused the token (expired, revoked or mistyped): export a new one in the variable github.token_env names"
	case http.StatusForbidden:
		return "; the token may not read this repository's issues: give it Issues read (fine-grained token) or the repo scope (classic token)"
	case http.StatusNotFound:
		return "; the repository does not exist or the token cannot see it: check github.repos[].name, github.api_url " +
			"(GitHub Enterprise Server: https://HOST/api/v3/) and the token's access (fine-grained: this repository with Issues read; classic: the repo scope)"
	}
	return ""
}

// repoRef is OWNER/NAME split.
type repoRef struct{ owner, name string }

func (r repoRef) String() string { return r.owner + "/" + r.name }

func parseRepo(full string) (repoRef, error) {
	owner, name, ok := strings.Cut(full, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return repoRef{}, fmt.Errorf("github repository %q: want OWNER/NAME", full)
	}
	return repoRef{owner, name}, nil
}

// ExternalID is a ticket's external id for issue number of repo: "OWNER/NAME#N".
func ExternalID(repo string, number int) string { return repo + "#" + strconv.Itoa(number) }

// ParseExternalID splits "OWNER/NAME#N".
func ParseExternalID(id string) (repo string, number int, err error) {
	repo, num, ok := strings.Cut(id, "#")
	if !ok {
		return "", 0, fmt.Errorf("github external id %q: want OWNER/NAME#NUMBER", id)
	}
	n, err := strconv.Atoi(num)
	if err != nil || n <= 0 {
		return "", 0, fmt.Errorf("github external id %q: issue number %q is not a positive integer", id, num)
	}
	if _, err := parseRepo(repo); err != nil {
		return "", 0, fmt.Errorf("github external id %q: %w", id, err)
	}
	return repo, n, nil
}

// Source is the store source name of GitHub tickets.
const Source = "github"

// Self returns the login of the account ticketd posts as, asked of GitHub once: GET /user for
// a user's token; for a GitHub App's installation token, which GET /user refuses (403), the
// GraphQL viewer, the app's bot ("name[bot]"). A comment is ticketd's own only when this
// account wrote it: anyone can copy a hidden marker into a comment.
func (c *Client) Self(ctx context.Context) (string, error) {
	c.mu.Lock()
	self := c.self
	c.mu.Unlock()
	if self != "" {
		return self, nil
	}
	if err := c.ready(false); err != nil {
		return "", err
	}
	u, resp, err := c.api.Users.Get(ctx, "")
	c.observe(resp, err)
	login := u.GetLogin()
	if statusOf(err) == http.StatusForbidden || statusOf(err) == http.StatusNotFound {
		login, err = c.viewer(ctx)
	}
	switch {
	case err != nil:
		return "", fmt.Errorf("find out which account the GitHub token posts as (GET /user): %w", err)
	case login == "":
		return "", errors.New("find out which account the GitHub token posts as: GitHub named no login")
	}
	c.mu.Lock()
	c.self = login
	c.mu.Unlock()
	return login, nil
}

// viewer asks the GraphQL API whose token this is; it answers for installation tokens too.
func (c *Client) viewer(ctx context.Context) (string, error) {
	var out struct {
		Data struct {
			Viewer struct {
				Login string `json:"login"`
			} `json:"viewer"`
		} `json:"data"`
	}
	if err := c.graphQL(ctx, "query { viewer { login } }", nil, &out); err != nil {
		return "", fmt.Errorf("GraphQL viewer: %w", err)
	}
	return out.Data.Viewer.Login, nil
}

// ownComment reports whether a comment was written by the account ticketd posts as.
func (c *Client) ownComment(ctx context.Context, cm *gh.IssueComment) (bool, error) {
	self, err := c.Self(ctx)
	if err != nil {
		return false, err
	}
	return strings.EqualFold(cm.GetUser().GetLogin(), self), nil
}
