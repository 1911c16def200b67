package github

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
)

// fakeGitHub is an in-memory stand-in for the parts of the GitHub REST API ticketd uses. It
// behaves like the real one where ticketd depends on it: bearer auth, label filtering,
// Link-header pagination, strong ETags with 304 answers that do not count against the rate
// limit, X-RateLimit headers, author_association, and 422 on a duplicate pull request.
type fakeGitHub struct {
	t     *testing.T
	srv   *httptest.Server
	token string

	mu            sync.Mutex
	issues        map[string][]*fakeIssue // "owner/name" -> issues
	perms         map[string]string       // "owner/name\x00login" -> admin|write|read
	pulls         []map[string]any
	comments      map[string][]map[string]any // "owner/name#n" -> comments
	requests      []string                    // "METHOD path?query", in order
	notModified   int
	rateRemaining int
	rateReset     time.Time
	defaultBranch string
}

type fakeIssue struct {
	Number      int
	Title, Body string
	State       string
	Labels      []string
	Author      string
	Assoc       string
	PullRequest bool
}

func newFakeGitHub(t *testing.T) *fakeGitHub {
	t.Helper()
	f := &fakeGitHub{t: t, token: "test-token", issues: map[string][]*fakeIssue{}, perms: map[string]string{},
		comments: map[string][]map[string]any{}, rateRemaining: 5000, rateReset: time.Now().Add(time.Hour), defaultBranch: "main"}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /repos/{o}/{r}", f.getRepo)
	mux.HandleFunc("GET /repos/{o}/{r}/issues", f.listIssues)
	mux.HandleFunc("GET /repos/{o}/{r}/issues/{n}", f.getIssue)
	mux.HandleFunc("GET /repos/{o}/{r}/collaborators/{u}/permission", f.permission)
	mux.HandleFunc("GET /repos/{o}/{r}/pulls", f.listPulls)
	mux.HandleFunc("POST /repos/{o}/{r}/pulls", f.createPull)
	mux.HandleFunc("GET /repos/{o}/{r}/issues/{n}/comments", f.listComments)
	mux.HandleFunc("POST /repos/{o}/{r}/issues/{n}/comments", f.createComment)
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.requests = append(f.requests, r.Method+" "+r.URL.RequestURI())
		f.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+f.token {
			http.Error(w, `{"message":"Bad credentials"}`, http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeGitHub) URL() string { return f.srv.URL + "/" }

func (f *fakeGitHub) addIssue(repo string, is fakeIssue) *fakeIssue {
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

func (f *fakeGitHub) edit(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn()
}

// count returns how many requests matched method and a path prefix.
func (f *fakeGitHub) count(method, prefix string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, r := range f.requests {
		if strings.HasPrefix(r, method+" "+prefix) {
			n++
		}
	}
	return n
}

func (f *fakeGitHub) issueJSON(repo string, is *fakeIssue) map[string]any {
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
func (f *fakeGitHub) reply(w http.ResponseWriter, r *http.Request, status int, v any) {
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
	if r.Method == http.MethodGet && status == 200 {
		h.Set("ETag", etag)
		if r.Header.Get("If-None-Match") == etag {
			f.notModified++
			h.Set("X-RateLimit-Remaining", strconv.Itoa(f.rateRemaining))
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	f.rateRemaining--
	h.Set("X-RateLimit-Remaining", strconv.Itoa(f.rateRemaining))
	h.Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

func repoOf(r *http.Request) string { return r.PathValue("o") + "/" + r.PathValue("r") }

func (f *fakeGitHub) getRepo(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reply(w, r, 200, map[string]any{"full_name": repoOf(r), "default_branch": f.defaultBranch})
}

func (f *fakeGitHub) listIssues(w http.ResponseWriter, r *http.Request) {
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
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per <= 0 {
		per = 30
	}
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	lo, hi := min((page-1)*per, len(match)), min(page*per, len(match))
	if hi < len(match) {
		next := *r.URL
		nq := next.Query()
		nq.Set("page", strconv.Itoa(page+1))
		next.RawQuery = nq.Encode()
		w.Header().Set("Link", fmt.Sprintf(`<%s%s>; rel="next"`, f.srv.URL, next.RequestURI()))
	}
	f.reply(w, r, 200, append([]map[string]any{}, match[lo:hi]...))
}

func (f *fakeGitHub) findIssue(r *http.Request) (string, *fakeIssue) {
	repo := repoOf(r)
	n, _ := strconv.Atoi(r.PathValue("n"))
	for _, is := range f.issues[repo] {
		if is.Number == n {
			return repo, is
		}
	}
	return repo, nil
}

func (f *fakeGitHub) getIssue(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	repo, is := f.findIssue(r)
	if is == nil {
		f.reply(w, r, 404, map[string]any{"message": "Not Found"})
		return
	}
	f.reply(w, r, 200, f.issueJSON(repo, is))
}

func (f *fakeGitHub) permission(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.perms[repoOf(r)+"\x00"+r.PathValue("u")]
	if !ok {
		f.reply(w, r, 404, map[string]any{"message": "Not Found"})
		return
	}
	f.reply(w, r, 200, map[string]any{"permission": p, "user": map[string]any{"login": r.PathValue("u")}})
}

func (f *fakeGitHub) listPulls(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	repo, head := repoOf(r), r.URL.Query().Get("head")
	out := []map[string]any{}
	for _, p := range f.pulls {
		if p["repo"] == repo && (head == "" || head == p["head_label"]) {
			out = append(out, p)
		}
	}
	f.reply(w, r, 200, out)
}

func (f *fakeGitHub) createPull(w http.ResponseWriter, r *http.Request) {
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
	repo := repoOf(r)
	label := r.PathValue("o") + ":" + in.Head
	for _, p := range f.pulls {
		if p["repo"] == repo && p["head_label"] == label {
			f.reply(w, r, 422, map[string]any{"message": "Validation Failed",
				"errors": []map[string]any{{"message": "A pull request already exists for " + label + "."}}})
			return
		}
	}
	n := 100 + len(f.pulls)
	p := map[string]any{"repo": repo, "number": n, "title": in.Title, "body": in.Body, "draft": in.Draft,
		"head_label": label, "head": map[string]any{"ref": in.Head, "label": label}, "base": map[string]any{"ref": in.Base},
		"html_url": fmt.Sprintf("https://github.example/%s/pull/%d", repo, n), "state": "open"}
	f.pulls = append(f.pulls, p)
	f.reply(w, r, 201, p)
}

func (f *fakeGitHub) listComments(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := repoOf(r) + "#" + r.PathValue("n")
	f.reply(w, r, 200, append([]map[string]any{}, f.comments[key]...))
}

func (f *fakeGitHub) createComment(w http.ResponseWriter, r *http.Request) {
	var in struct{ Body string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	key := repoOf(r) + "#" + r.PathValue("n")
	c := map[string]any{"id": len(f.comments[key]) + 1, "body": in.Body,
		"html_url": fmt.Sprintf("https://github.example/%s/issues/%s#comment-%d", repoOf(r), r.PathValue("n"), len(f.comments[key])+1)}
	f.comments[key] = append(f.comments[key], c)
	f.reply(w, r, 201, c)
}
