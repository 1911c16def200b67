package githubfake

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Review is a pull request review as a person (or a bot) submits it on GitHub: a state, an
// optional body, and line comments, each of which starts a review thread.
type Review struct {
	User string
	// Bot makes the author a bot account: user type "Bot" (GitHub Apps' logins also end in
	// "[bot]"; set the login so for those).
	Bot   bool
	State string // APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED
	Body  string
	// Assoc is the author_association; default COLLABORATOR.
	Assoc    string
	Comments []LineComment
}

// LineComment is one review comment on a line of the pull request's diff.
type LineComment struct {
	Path string
	// Line is the line in the new file; 0 for a comment GitHub keeps without one (line is
	// null in the API, as on an outdated diff).
	Line int
	Body string
}

// Thread is one review thread: its comments in order, and whether a human resolved it.
type Thread struct {
	ID       string
	Path     string
	Line     int
	Resolved bool
	Outdated bool
	Comments []threadComment
}

type threadComment struct {
	ID   int64
	User string
	Bot  bool
	Body string
	URL  string
	At   time.Time
}

// CheckRun is one check run of a commit, as the Checks API lists it.
type CheckRun struct {
	ID         int64
	Name       string
	Status     string // queued, in_progress, completed, waiting, requested, pending
	Conclusion string // "" (null) until completed; success, failure, action_required, ...
	// JobLog is the plain-text log of the Actions job behind the run (its id is the run's).
	JobLog string
}

// Status is one commit status (the older Statuses API).
type Status struct {
	Context, State, Description string
}

// pullState is the fake's per-pull-request data, under f.mu.
type pullState struct {
	reviews   []map[string]any
	comments  []map[string]any
	threads   []*Thread
	requested []string
}

func (f *Server) routePulls(mux *http.ServeMux) {
	mux.HandleFunc("GET /repos/{o}/{r}/pulls/{n}/reviews", f.listReviews)
	mux.HandleFunc("GET /repos/{o}/{r}/pulls/{n}/comments", f.listReviewComments)
	mux.HandleFunc("POST /repos/{o}/{r}/pulls/{n}/requested_reviewers", f.requestReviewers)
	mux.HandleFunc("GET /repos/{o}/{r}/commits/{ref}/check-runs", f.listCheckRuns)
	mux.HandleFunc("GET /repos/{o}/{r}/commits/{ref}/status", f.combinedStatus)
	mux.HandleFunc("GET /repos/{o}/{r}/actions/jobs/{id}/logs", f.jobLogs)
	mux.HandleFunc("GET /raw-logs/{id}", f.rawLog)
}

func (f *Server) pull(repo string, n int) *pullState {
	key := repo + "#" + strconv.Itoa(n)
	p := f.pulls[key]
	if p == nil {
		p = &pullState{}
		f.pulls[key] = p
	}
	return p
}

func userJSON(login string, bot bool) map[string]any {
	typ := "User"
	if bot {
		typ = "Bot"
	}
	return map[string]any{"login": login, "type": typ, "id": len(login)}
}

// AddReview submits a review on pull request n of repo and returns its id. Each line
// comment opens an unresolved review thread.
func (f *Server) AddReview(repo string, n int, rv Review) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.pull(repo, n)
	f.nextID++
	id := f.nextID
	f.clock = f.clock.Add(time.Second)
	assoc := rv.Assoc
	if assoc == "" {
		assoc = "COLLABORATOR"
	}
	p.reviews = append(p.reviews, map[string]any{"id": id, "node_id": fmt.Sprintf("PRR_%d", id), "user": userJSON(rv.User, rv.Bot),
		"body": rv.Body, "state": rv.State, "author_association": assoc, "submitted_at": f.clock.Format(time.RFC3339),
		"html_url": fmt.Sprintf("https://github.example/%s/pull/%d#pullrequestreview-%d", repo, n, id), "commit_id": "0000000"})
	for _, c := range rv.Comments {
		f.nextID++
		cid := f.nextID
		url := fmt.Sprintf("https://github.example/%s/pull/%d#discussion_r%d", repo, n, cid)
		var line any // null when the comment has no line, as GitHub sends it
		if c.Line > 0 {
			line = c.Line
		}
		p.comments = append(p.comments, map[string]any{"id": cid, "pull_request_review_id": id, "user": userJSON(rv.User, rv.Bot),
			"body": c.Body, "path": c.Path, "line": line, "original_line": c.Line, "html_url": url, "author_association": assoc,
			"created_at": f.clock.Format(time.RFC3339)})
		p.threads = append(p.threads, &Thread{ID: fmt.Sprintf("PRRT_%d", cid), Path: c.Path, Line: c.Line,
			Comments: []threadComment{{ID: cid, User: rv.User, Bot: rv.Bot, Body: c.Body, URL: url, At: f.clock}}})
	}
	return id
}

// ThreadsOf returns pull request n's review threads; change them (Resolved) inside Edit.
func (f *Server) ThreadsOf(repo string, n int) []*Thread { return f.pull(repo, n).threads }

// RequestedReviewers returns who review was requested from on pull request n, in order.
func (f *Server) RequestedReviewers(repo string, n int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.pull(repo, n).requested...)
}

func pullNumber(r *http.Request) int {
	n, _ := strconv.Atoi(r.PathValue("n"))
	return n
}

func (f *Server) listReviews(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rs := f.pull(repoOf(r), pullNumber(r)).reviews
	lo, hi := f.page(w, r, len(rs))
	f.reply(w, r, 200, append([]map[string]any{}, rs[lo:hi]...))
}

func (f *Server) listReviewComments(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cs := f.pull(repoOf(r), pullNumber(r)).comments
	lo, hi := f.page(w, r, len(cs))
	f.reply(w, r, 200, append([]map[string]any{}, cs[lo:hi]...))
}

// requestReviewers answers as GitHub does: 201 with the pull request; a login that is the
// pull request's author (the token's account) is refused with 422.
func (f *Server) requestReviewers(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Reviewers []string `json:"reviewers"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, u := range in.Reviewers {
		if strings.EqualFold(u, f.BotLogin) {
			f.reply(w, r, 422, map[string]any{"message": "Reviews may only be requested from collaborators. One or more of the users or teams you specified is not a collaborator of the " + repoOf(r) + " repository."})
			return
		}
	}
	p := f.pull(repoOf(r), pullNumber(r))
	p.requested = append(p.requested, in.Reviewers...)
	for _, pr := range f.Pulls {
		if pr["repo"] == repoOf(r) && pr["number"] == pullNumber(r) {
			f.reply(w, r, 201, pr)
			return
		}
	}
	f.reply(w, r, 201, map[string]any{"number": pullNumber(r)})
}

// SetCheckRuns sets the check runs of commit sha of repo (replacing earlier ones).
func (f *Server) SetCheckRuns(repo, sha string, runs []CheckRun) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checkRuns[repo+"@"+sha] = runs
}

// SetStatuses sets the commit statuses of commit sha of repo.
func (f *Server) SetStatuses(repo, sha string, sts []Status) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statuses[repo+"@"+sha] = sts
}

func (f *Server) listCheckRuns(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	runs := []map[string]any{}
	for _, c := range f.checkRuns[repoOf(r)+"@"+r.PathValue("ref")] {
		var concl any
		if c.Conclusion != "" {
			concl = c.Conclusion
		}
		runs = append(runs, map[string]any{"id": c.ID, "name": c.Name, "status": c.Status, "conclusion": concl,
			"head_sha": r.PathValue("ref"), "html_url": fmt.Sprintf("https://github.example/%s/runs/%d", repoOf(r), c.ID),
			"details_url": fmt.Sprintf("https://github.example/%s/actions/runs/1/job/%d", repoOf(r), c.ID),
			"app":         map[string]any{"slug": "github-actions"}})
	}
	// Paginated like a listing (Link header), total_count counting every page's runs.
	lo, hi := f.page(w, r, len(runs))
	f.reply(w, r, 200, map[string]any{"total_count": len(runs), "check_runs": runs[lo:hi]})
}

func (f *Server) combinedStatus(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sts := []map[string]any{}
	state := "pending" // GitHub's combined state with no statuses at all
	worst := map[string]int{"success": 0, "pending": 1, "failure": 2, "error": 2}
	rank := -1
	for _, s := range f.statuses[repoOf(r)+"@"+r.PathValue("ref")] {
		sts = append(sts, map[string]any{"context": s.Context, "state": s.State, "description": s.Description, "target_url": nil})
		if worst[s.State] > rank {
			rank, state = worst[s.State], s.State
		}
	}
	// The state is over all statuses; the statuses themselves come a page at a time.
	lo, hi := f.page(w, r, len(sts))
	f.reply(w, r, 200, map[string]any{"state": state, "sha": r.PathValue("ref"), "total_count": len(sts), "statuses": sts[lo:hi]})
}

// jobLogs answers as GitHub does: 302 to a short-lived plain-text URL (which needs no token).
func (f *Server) jobLogs(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	for _, runs := range f.checkRuns {
		for _, c := range runs {
			if c.ID == id {
				http.Redirect(w, r, fmt.Sprintf("%s/raw-logs/%d", f.srv.URL, id), http.StatusFound)
				return
			}
		}
	}
	f.reply(w, r, 404, map[string]any{"message": "Not Found"})
}

func (f *Server) rawLog(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	for _, runs := range f.checkRuns {
		for _, c := range runs {
			if c.ID == id {
				w.Header().Set("Content-Type", "text/plain")
				w.Write([]byte(c.JobLog))
				return
			}
		}
	}
	http.NotFound(w, r)
}

// ReplyToThread adds a reply by login to review thread id of pull request n, as a person
// answering in the thread on GitHub does.
func (f *Server) ReplyToThread(repo string, n int, id, login string, bot bool, body string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, th := range f.pull(repo, n).threads {
		if th.ID != id {
			continue
		}
		f.nextID++
		f.clock = f.clock.Add(time.Second)
		th.Comments = append(th.Comments, threadComment{ID: f.nextID, User: login, Bot: bot, Body: body, At: f.clock,
			URL: fmt.Sprintf("https://github.example/%s/pull/%d#discussion_r%d", repo, n, f.nextID)})
		return
	}
	f.t.Errorf("fake github: no review thread %s on %s#%d", id, repo, n)
}

// connectionFirst is the first argument of connection name in query, checked as GitHub
// checks it: required for a paginated connection, and at most 100.
func connectionFirst(query, name string) (int, error) {
	m := regexp.MustCompile(regexp.QuoteMeta(name) + `\(\s*first:\s*(\d+)`).FindStringSubmatch(query)
	if m == nil {
		return 0, fmt.Errorf("You must provide a `first` or `last` value to properly paginate the `%s` connection.", name)
	}
	n, _ := strconv.Atoi(m[1])
	if n > 100 {
		return 0, fmt.Errorf("Requesting %d records on the `%s` connection exceeds the `first` limit of 100 records.", n, name)
	}
	return n, nil
}

// cursorOf is the opaque cursor of the item at index i of a connection (GitHub's are base64
// too); afterCursor reads one back as the index to start after, -1 for none.
func cursorOf(i int) string {
	return base64.StdEncoding.EncodeToString([]byte("cursor:v2:" + strconv.Itoa(i)))
}

func afterCursor(c *string) (int, error) {
	if c == nil {
		return -1, nil
	}
	raw, err := base64.StdEncoding.DecodeString(*c)
	rest, ok := strings.CutPrefix(string(raw), "cursor:v2:")
	n, aerr := strconv.Atoi(rest)
	if err != nil || !ok || aerr != nil || n < 0 {
		return 0, fmt.Errorf("`%s` does not appear to be a valid cursor.", *c)
	}
	return n, nil
}

// connection is one page of n items after cursor: the slice [lo:hi] and its pageInfo.
func connection(n, first int, after *string) (lo, hi int, info map[string]any, err error) {
	start, err := afterCursor(after)
	if err != nil {
		return 0, 0, nil, err
	}
	lo = min(start+1, n)
	hi = min(lo+first, n)
	var end any // null on an empty page, as GitHub sends it
	if hi > lo {
		end = cursorOf(hi - 1)
	}
	return lo, hi, map[string]any{"hasNextPage": hi < n, "hasPreviousPage": lo > 0, "endCursor": end}, nil
}

// commentsJSON is one page of a thread's comments (author null for a deleted account).
func commentsJSON(th *Thread, first int, after *string) (map[string]any, error) {
	lo, hi, info, err := connection(len(th.Comments), first, after)
	if err != nil {
		return nil, err
	}
	cs := []map[string]any{}
	for _, c := range th.Comments[lo:hi] {
		var author any
		if c.User != "" {
			typ := "User"
			if c.Bot {
				typ = "Bot"
			}
			author = map[string]any{"login": c.User, "__typename": typ}
		}
		cs = append(cs, map[string]any{"databaseId": c.ID, "author": author, "body": c.Body, "url": c.URL,
			"createdAt": c.At.Format(time.RFC3339)})
	}
	return map[string]any{"nodes": cs, "pageInfo": info}, nil
}

// reviewThreadsJSON answers the GraphQL reviewThreads query of pull request n: a page of its
// threads after cursor, resolved or not, each with the first page of its comments. Called
// with f.mu held.
func (f *Server) reviewThreadsJSON(query, owner, name string, n int, after *string) (map[string]any, error) {
	first, err := connectionFirst(query, "reviewThreads")
	if err != nil {
		return nil, err
	}
	cfirst, err := connectionFirst(query, "comments")
	if err != nil {
		return nil, err
	}
	threads := f.pull(owner+"/"+name, n).threads
	lo, hi, info, err := connection(len(threads), first, after)
	if err != nil {
		return nil, err
	}
	nodes := []map[string]any{}
	for _, th := range threads[lo:hi] {
		cs, err := commentsJSON(th, cfirst, nil)
		if err != nil {
			return nil, err
		}
		var line any
		if th.Line > 0 {
			line = th.Line
		}
		nodes = append(nodes, map[string]any{"id": th.ID, "isResolved": th.Resolved, "isOutdated": th.Outdated, "path": th.Path,
			"line": line, "comments": cs})
	}
	return map[string]any{"data": map[string]any{"repository": map[string]any{"pullRequest": map[string]any{
		"reviewThreads": map[string]any{"nodes": nodes, "pageInfo": info}}}}}, nil
}

// threadCommentsJSON answers node(id:) { ... on PullRequestReviewThread { comments } }: a
// page of the thread's comments after cursor; node is null for an unknown id, as on GitHub
// (with an error). Called with f.mu held.
func (f *Server) threadCommentsJSON(query, id string, after *string) (map[string]any, error) {
	first, err := connectionFirst(query, "comments")
	if err != nil {
		return nil, err
	}
	for _, p := range f.pulls {
		for _, th := range p.threads {
			if th.ID != id {
				continue
			}
			cs, err := commentsJSON(th, first, after)
			if err != nil {
				return nil, err
			}
			return map[string]any{"data": map[string]any{"node": map[string]any{"comments": cs}}}, nil
		}
	}
	return nil, fmt.Errorf("Could not resolve to a node with the global id of '%s'", id)
}
