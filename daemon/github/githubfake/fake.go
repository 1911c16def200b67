// Package githubfake is a TEST DOUBLE: an in-memory stand-in for the parts of the GitHub
// REST API ticketd uses, served by httptest. It behaves like the real API where ticketd
// depends on it (bearer auth, label filtering, Link-header pagination, strong ETags with 304
// answers that cost no rate limit, X-RateLimit headers, author_association, 422 on a
// duplicate pull request) so tests exercise the real client code.
package githubfake

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// MaxBody is the longest pull request or comment body GitHub takes, in characters (code
// points); longer ones are refused with 422.
const MaxBody = 65536

// Token is the only bearer token the fake accepts.
const Token = "test-token"

// Server is the fake API. Its exported fields are for tests to read and set under Edit.
type Server struct {
	t     testing.TB
	srv   *httptest.Server
	token string

	mu            sync.Mutex
	issues        map[string][]*Issue // "owner/name" -> issues
	Perms         map[string]string   // "owner/name\x00login" -> admin|write|read
	Pulls         []map[string]any
	Comments      map[string][]map[string]any // "owner/name#n" -> comments
	Requests      []string                    // "METHOD path?query", in order
	NotModified   int
	RateRemaining int
	// GraphQLRemaining is the GraphQL API's budget, apart from the REST one (RateRemaining)
	// as on GitHub, which reports it with X-RateLimit-Resource: graphql.
	GraphQLRemaining int
	rateReset        time.Time
	DefaultBranch    string
	// BotLogin and BotAssoc are the user and author_association of comments created
	// through the API (the token's own account); default "ticketd-bot", "MEMBER".
	BotLogin, BotAssoc string
	// NoDrafts makes the repositories private ones of a GitHub Free or Pro account: a draft
	// pull request is refused with 422, as GitHub does there.
	NoDrafts bool
	// NoPullWrite makes the token a fine-grained one without "Pull requests: write": opening
	// a pull request is refused with 403, as GitHub does.
	NoPullWrite bool
	// App makes the token a GitHub App's installation token: GET /user answers 403, as
	// GitHub does for those, and the GraphQL viewer is BotLogin (set it to "name[bot]").
	App bool
	// Enterprise lays the API out as GitHub Enterprise Server does (see route); set it
	// before reading URL.
	Enterprise bool
	pulls      map[string]*pullState        // "owner/name#n" -> reviews, threads, requested reviewers
	branches   map[string]map[string]string // "owner/name" -> branch -> commit
	checkRuns  map[string][]CheckRun        // "owner/name@sha"
	statuses   map[string][]Status
	nextID     int64
	// clock stamps comments' created_at: one second apart, in creation order, as GitHub's
	// second-resolution timestamps of comments written in turn.
	clock time.Time
}

// Issue is one issue (or pull request, when PullRequest) of a repository.
type Issue struct {
	Number      int
	Title, Body string
	State       string
	Labels      []string
	Author      string
	Assoc       string
	PullRequest bool
}

// New starts a fake closed at the end of the test.
func New(t testing.TB) *Server {
	t.Helper()
	f := &Server{t: t, token: Token, issues: map[string][]*Issue{}, Perms: map[string]string{},
		Comments: map[string][]map[string]any{}, RateRemaining: 5000, GraphQLRemaining: 5000, rateReset: time.Now().Add(time.Hour), DefaultBranch: "main",
		BotLogin: "ticketd-bot", BotAssoc: "MEMBER", clock: time.Now().UTC().Truncate(time.Second),
		pulls: map[string]*pullState{}, branches: map[string]map[string]string{}, checkRuns: map[string][]CheckRun{}, statuses: map[string][]Status{}, nextID: 1000}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /repos/{o}/{r}", f.getRepo)
	mux.HandleFunc("GET /repos/{o}/{r}/issues", f.listIssues)
	mux.HandleFunc("GET /repos/{o}/{r}/issues/{n}", f.getIssue)
	mux.HandleFunc("GET /repos/{o}/{r}/collaborators/{u}/permission", f.permission)
	mux.HandleFunc("GET /repos/{o}/{r}/pulls", f.listPulls)
	mux.HandleFunc("POST /repos/{o}/{r}/pulls", f.createPull)
	mux.HandleFunc("GET /repos/{o}/{r}/issues/{n}/comments", f.listComments)
	mux.HandleFunc("POST /repos/{o}/{r}/issues/{n}/comments", f.createComment)
	mux.HandleFunc("GET /repos/{o}/{r}/git/matching-refs/{ref...}", f.matchingRefs)
	mux.HandleFunc("DELETE /repos/{o}/{r}/git/refs/{ref...}", f.deleteRef)
	mux.HandleFunc("GET /user", f.user)
	mux.HandleFunc("POST /graphql", f.graphql)
	f.routePulls(mux)
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.Requests = append(f.Requests, r.Method+" "+r.URL.RequestURI())
		f.mu.Unlock()
		if strings.HasPrefix(r.URL.Path, "/raw-logs/") {
			mux.ServeHTTP(w, r) // a signed log URL: GitHub's storage wants no token
			return
		}
		if !f.route(r) {
			http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+f.token {
			http.Error(w, `{"message":"Bad credentials"}`, http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// URL is the API base URL, with its trailing slash: for an Enterprise fake, https://HOST/api/v3/.
func (f *Server) URL() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.srv.URL + f.prefix() + "/"
}

// prefix is the REST API's path on the host: "/api/v3" on GitHub Enterprise Server, "" on
// github.com (api.github.com). Called with f.mu held.
func (f *Server) prefix() string {
	if f.Enterprise {
		return "/api/v3"
	}
	return ""
}

// route maps a request's path onto the fake's routes as the server's layout has it, false
// for a path the server does not serve. GitHub Enterprise Server serves REST under
// /api/v3/ and GraphQL at /api/graphql (not /api/v3/graphql); github.com serves both at
// the root of api.github.com.
func (f *Server) route(r *http.Request) bool {
	f.mu.Lock()
	enterprise := f.Enterprise
	f.mu.Unlock()
	if !enterprise {
		return true
	}
	switch rest, ok := strings.CutPrefix(r.URL.Path, "/api/v3/"); {
	case r.URL.Path == "/api/graphql":
		r.URL.Path = "/graphql"
	case !ok || rest == "graphql":
		return false
	default:
		r.URL.Path = "/" + rest
	}
	r.URL.RawPath = ""
	return true
}

// AddIssue adds an issue (number, state and association defaulted) and returns it; change
// it later only inside Edit.
func (f *Server) AddIssue(repo string, is Issue) *Issue {
	f.mu.Lock()
	defer f.mu.Unlock()
	if is.State == "" {
		is.State = "open"
	}
	if is.Assoc == "" {
		is.Assoc = "OWNER"
	}
	if is.Number == 0 {
		is.Number = len(f.issues[repo]) + 1
	}
	p := &is
	f.issues[repo] = append(f.issues[repo], p)
	return p
}

// Edit runs fn with the fake locked, for changing issues and fields.
func (f *Server) Edit(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn()
}

// Count returns how many requests matched method and a path prefix.
func (f *Server) Count(method, prefix string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, r := range f.Requests {
		if strings.HasPrefix(r, method+" "+prefix) {
			n++
		}
	}
	return n
}

func (f *Server) issueJSON(repo string, is *Issue) map[string]any {
	labels := []map[string]any{}
	for _, l := range is.Labels {
		labels = append(labels, map[string]any{"name": l})
	}
	m := map[string]any{"number": is.Number, "title": is.Title, "body": is.Body, "state": is.State,
		"labels": labels, "user": map[string]any{"login": is.Author}, "author_association": is.Assoc,
		"html_url": fmt.Sprintf("https://github.example/%s/issues/%d", repo, is.Number)}
	if is.PullRequest {
		m["pull_request"] = map[string]any{"url": "x"}
	}
	return m
}

// reply writes v as JSON with a strong ETag, answering 304 (rate limit untouched) when the
// client already has it. Called with f.mu held.
func (f *Server) reply(w http.ResponseWriter, r *http.Request, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		f.t.Errorf("fake github: marshal: %v", err)
	}
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:8]) + `"`
	h := w.Header()
	h.Set("X-RateLimit-Limit", "5000")
	h.Set("X-RateLimit-Reset", strconv.FormatInt(f.rateReset.Unix(), 10))
	h.Set("X-RateLimit-Resource", "core")
	if r.URL.Path == "/graphql" {
		f.GraphQLRemaining--
		h.Set("X-RateLimit-Resource", "graphql")
		h.Set("X-RateLimit-Remaining", strconv.Itoa(f.GraphQLRemaining))
		h.Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(body)
		return
	}
	if r.Method == http.MethodGet && status == 200 {
		h.Set("ETag", etag)
		if r.Header.Get("If-None-Match") == etag {
			f.NotModified++
			// GitHub's 304 carries no pagination: the ETag covers the page's items, not
			// its Link header, so a page that gained a next page still answers 304.
			h.Del("Link")
			h.Set("X-RateLimit-Remaining", strconv.Itoa(f.RateRemaining))
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	f.RateRemaining--
	h.Set("X-RateLimit-Remaining", strconv.Itoa(f.RateRemaining))
	h.Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

func repoOf(r *http.Request) string { return r.PathValue("o") + "/" + r.PathValue("r") }

func (f *Server) getRepo(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reply(w, r, 200, map[string]any{"full_name": repoOf(r), "default_branch": f.DefaultBranch})
}

func (f *Server) listIssues(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	repo, q := repoOf(r), r.URL.Query()
	var match []map[string]any
	for _, is := range f.issues[repo] {
		if st := q.Get("state"); st != "all" && is.State != st {
			continue
		}
		if want := q.Get("labels"); want != "" && !slices.Contains(is.Labels, want) {
			continue
		}
		match = append(match, f.issueJSON(repo, is))
	}
	lo, hi := f.page(w, r, len(match))
	f.reply(w, r, 200, append([]map[string]any{}, match[lo:hi]...))
}

// page is the slice [lo:hi] of n items that the request's page and per_page (default 30,
// at most 100, as GitHub) select; it sets the Link header's rel="next" when more follow.
func (f *Server) page(w http.ResponseWriter, r *http.Request, n int) (lo, hi int) {
	q := r.URL.Query()
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per <= 0 {
		per = 30
	}
	per = min(per, 100)
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	lo, hi = min((page-1)*per, n), min(page*per, n)
	if hi < n {
		next := *r.URL
		nq := next.Query()
		nq.Set("page", strconv.Itoa(page+1))
		next.RawQuery = nq.Encode()
		w.Header().Set("Link", fmt.Sprintf(`<%s%s%s>; rel="next"`, f.srv.URL, f.prefix(), next.RequestURI()))
	}
	return lo, hi
}

func (f *Server) findIssue(r *http.Request) (string, *Issue) {
	repo := repoOf(r)
	n, _ := strconv.Atoi(r.PathValue("n"))
	for _, is := range f.issues[repo] {
		if is.Number == n {
			return repo, is
		}
	}
	return repo, nil
}

func (f *Server) getIssue(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	repo, is := f.findIssue(r)
	if is == nil {
		f.reply(w, r, 404, map[string]any{"message": "Not Found"})
		return
	}
	f.reply(w, r, 200, f.issueJSON(repo, is))
}

func (f *Server) permission(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.Perms[repoOf(r)+"\x00"+r.PathValue("u")]
	if !ok {
		f.reply(w, r, 404, map[string]any{"message": "Not Found"})
		return
	}
	f.reply(w, r, 200, map[string]any{"permission": p, "user": map[string]any{"login": r.PathValue("u")}})
}

// listPulls filters as GitHub does: state (default open; all), head (OWNER:BRANCH), base.
func (f *Server) listPulls(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := r.URL.Query()
	repo, head, base, state := repoOf(r), q.Get("head"), q.Get("base"), q.Get("state")
	if state == "" {
		state = "open"
	}
	out := []map[string]any{}
	for _, p := range f.Pulls {
		pb, _ := p["base"].(map[string]any)
		switch {
		case p["repo"] != repo, head != "" && head != p["head_label"], base != "" && (pb == nil || pb["ref"] != base),
			state != "all" && p["state"] != state:
			continue
		}
		out = append(out, p)
	}
	lo, hi := f.page(w, r, len(out))
	f.reply(w, r, 200, out[lo:hi])
}

func (f *Server) createPull(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Title, Head, Base, Body string
		Draft                   bool
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if utf8.RuneCountInString(in.Body) > MaxBody {
		f.reply(w, r, 422, map[string]any{"message": "Validation Failed", "errors": []map[string]any{{"resource": "Issue",
			"code": "custom", "field": "body", "message": "body is too long (maximum is 65536 characters)"}},
			"documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request", "status": "422"})
		return
	}
	if f.NoPullWrite {
		f.reply(w, r, 403, map[string]any{"message": "Resource not accessible by personal access token",
			"documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request", "status": "403"})
		return
	}
	if in.Draft && f.NoDrafts {
		f.reply(w, r, 422, map[string]any{"message": "Draft pull requests are not supported in this repository.",
			"documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request", "status": "422"})
		return
	}
	repo := repoOf(r)
	label := r.PathValue("o") + ":" + in.Head
	for _, p := range f.Pulls {
		if p["repo"] == repo && p["head_label"] == label {
			f.reply(w, r, 422, map[string]any{"message": "Validation Failed",
				"errors":            []map[string]any{{"resource": "PullRequest", "code": "custom", "message": "A pull request already exists for " + label + "."}},
				"documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request", "status": "422"})
			return
		}
	}
	n := 100 + len(f.Pulls)
	p := map[string]any{"repo": repo, "number": n, "title": in.Title, "body": in.Body, "draft": in.Draft,
		"head_label": label, "head": map[string]any{"ref": in.Head, "label": label}, "base": map[string]any{"ref": in.Base},
		"html_url": fmt.Sprintf("https://github.example/%s/pull/%d", repo, n), "state": "open"}
	f.Pulls = append(f.Pulls, p)
	f.reply(w, r, 201, p)
}

func (f *Server) listComments(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := repoOf(r) + "#" + r.PathValue("n")
	lo, hi := f.page(w, r, len(f.Comments[key]))
	f.reply(w, r, 200, append([]map[string]any{}, f.Comments[key][lo:hi]...))
}

func (f *Server) createComment(w http.ResponseWriter, r *http.Request) {
	var in struct{ Body string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if utf8.RuneCountInString(in.Body) > MaxBody {
		f.reply(w, r, 422, map[string]any{"message": "Validation Failed", "errors": []map[string]any{{"resource": "IssueComment",
			"code": "unprocessable", "field": "data", "message": "Body is too long (maximum is 65536 characters)"}},
			"documentation_url": "https://docs.github.com/rest/issues/comments#create-an-issue-comment", "status": "422"})
		return
	}
	n, _ := strconv.Atoi(r.PathValue("n"))
	c := f.addComment(repoOf(r), n, f.BotLogin, f.BotAssoc, in.Body)
	f.reply(w, r, 201, c)
}

// AddComment adds a comment by login (with its author_association, e.g. OWNER, MEMBER,
// COLLABORATOR, CONTRIBUTOR, NONE) to issue n of repo, as a person writing on GitHub does.
func (f *Server) AddComment(repo string, n int, login, assoc, body string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.addComment(repo, n, login, assoc, body)
}

// addComment appends a comment; called with f.mu held.
func (f *Server) addComment(repo string, n int, login, assoc, body string) map[string]any {
	key := repo + "#" + strconv.Itoa(n)
	f.clock = f.clock.Add(time.Second)
	id := len(f.Comments[key]) + 1
	c := map[string]any{"id": id, "body": body, "user": map[string]any{"login": login}, "author_association": assoc,
		"created_at": f.clock.Format(time.RFC3339),
		"html_url":   fmt.Sprintf("https://github.example/%s/issues/%d#comment-%d", repo, n, id)}
	f.Comments[key] = append(f.Comments[key], c)
	return c
}

// IssuesOf returns repo's issues; call it inside Edit to change them.
func (f *Server) IssuesOf(repo string) []*Issue { return f.issues[repo] }

// user answers GET /user: the token's account, or for an installation token the 403 GitHub
// sends.
func (f *Server) user(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.App {
		f.reply(w, r, http.StatusForbidden, map[string]any{"message": "Resource not accessible by integration",
			"documentation_url": "https://docs.github.com/rest/users/users#get-the-authenticated-user", "status": "403"})
		return
	}
	f.reply(w, r, 200, map[string]any{"login": f.BotLogin, "id": 1, "type": "User"})
}

// graphql answers the queries ticketd sends: { viewer { login } }, for any token, a pull
// request's reviewThreads (variables owner, name, number, cursor) and a review thread's
// comments by its node id (variables id, cursor), paginated as GitHub's connections are.
func (f *Server) graphql(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Query     string `json:"query"`
		Variables struct {
			Owner  string  `json:"owner"`
			Name   string  `json:"name"`
			Number int     `json:"number"`
			ID     string  `json:"id"`
			Cursor *string `json:"cursor"`
		} `json:"variables"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		http.Error(w, `{"message":"Problems parsing JSON"}`, http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	v := in.Variables
	var answer map[string]any
	var err error
	switch {
	case strings.Contains(in.Query, "reviewThreads"):
		answer, err = f.reviewThreadsJSON(in.Query, v.Owner, v.Name, v.Number, v.Cursor)
	case strings.Contains(in.Query, "node(id:"):
		answer, err = f.threadCommentsJSON(in.Query, v.ID, v.Cursor)
	case strings.Contains(in.Query, "viewer"):
		answer = map[string]any{"data": map[string]any{"viewer": map[string]any{"login": f.BotLogin}}}
	default:
		err = fmt.Errorf("the fake serves viewer, reviewThreads and a review thread's comments only")
	}
	if err != nil {
		// GitHub answers 200 with errors for a query it cannot run.
		answer = map[string]any{"data": nil, "errors": []map[string]any{{"message": err.Error()}}}
	}
	f.reply(w, r, 200, answer)
}

// SetBranch points branch of repo at commit sha, as a push does; "" deletes it.
func (f *Server) SetBranch(repo, branch, sha string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.branches[repo] == nil {
		f.branches[repo] = map[string]string{}
	}
	if sha == "" {
		delete(f.branches[repo], branch)
		return
	}
	f.branches[repo][branch] = sha
}

// BranchesOf returns repo's branches, sorted.
func (f *Server) BranchesOf(repo string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for b := range f.branches[repo] {
		out = append(out, b)
	}
	slices.Sort(out)
	return out
}

func refJSON(base, repo, branch, sha string) map[string]any {
	return map[string]any{"ref": "refs/heads/" + branch, "node_id": "REF_" + sha[:min(len(sha), 8)],
		"url":    base + "/repos/" + repo + "/git/refs/heads/" + branch,
		"object": map[string]any{"sha": sha, "type": "commit", "url": base + "/repos/" + repo + "/git/commits/" + sha}}
}

// matchingRefs answers GET /repos/{o}/{r}/git/matching-refs/{ref}: every branch whose
// refs/<ref> name starts with ref, sorted, in one array (GitHub does not paginate it); []
// for none.
func (f *Server) matchingRefs(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	repo, prefix := repoOf(r), "refs/"+r.PathValue("ref")
	var names []string
	for b := range f.branches[repo] {
		if strings.HasPrefix("refs/heads/"+b, prefix) {
			names = append(names, b)
		}
	}
	slices.Sort(names)
	out := []map[string]any{}
	for _, b := range names {
		out = append(out, refJSON(f.srv.URL, repo, b, f.branches[repo][b]))
	}
	f.reply(w, r, 200, out)
}

// deleteRef answers DELETE /repos/{o}/{r}/git/refs/heads/{branch}: 204, or 422 "Reference
// does not exist" as GitHub says it.
func (f *Server) deleteRef(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	repo := repoOf(r)
	branch, ok := strings.CutPrefix(r.PathValue("ref"), "heads/")
	if _, found := f.branches[repo][branch]; !ok || !found {
		f.reply(w, r, 422, map[string]any{"message": "Reference does not exist",
			"documentation_url": "https://docs.github.com/rest/git/refs#delete-a-reference", "status": "422"})
		return
	}
	delete(f.branches[repo], branch)
	f.RateRemaining--
	w.Header().Set("X-RateLimit-Limit", "5000")
	w.Header().Set("X-RateLimit-Remaining", strconv.Itoa(f.RateRemaining))
	w.WriteHeader(http.StatusNoContent)
}
