package github

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	gh "github.com/google/go-github/v89/github"

	"github.com/ticketd/ticketd/pipeline/secret"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/worktree"
)

// The morning loop on a done ticket's pull request: a writer's review asks a round
// (store.Revise) with every unresolved thread; when the round ends done, its one commit is
// pushed, one comment answers the threads, and review is asked again of the reviewers.

// roundMarker identifies the comment that answered round n of a ticket.
func roundMarker(ticketID int64, n int) string {
	return fmt.Sprintf("<!-- ticketd:round ticket=%d n=%d -->", ticketID, n)
}

// pullNumberOf reads the number from a pull request's html_url (".../pull/N").
func pullNumberOf(url string) (int, error) {
	i := strings.LastIndex(url, "/pull/")
	if i < 0 {
		return 0, fmt.Errorf("pull request URL %q: want .../pull/NUMBER", url)
	}
	n, err := strconv.Atoi(strings.TrimRight(url[i+len("/pull/"):], "/"))
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("pull request URL %q: want .../pull/NUMBER", url)
	}
	return n, nil
}

// pullOf returns the number of ticket t's published pull request, 0 when it has none.
func (p *Publisher) pullOf(ctx context.Context, id int64) (int, error) {
	outs, err := p.Store.Outputs(ctx, id)
	if err != nil {
		return 0, err
	}
	for _, o := range outs {
		if o.Kind == store.OutputPullRequest {
			return pullNumberOf(o.URL)
		}
	}
	return 0, nil
}

// doneTickets lists the done GitHub tickets, at most publishBatch*5.
func (p *Publisher) doneTickets(ctx context.Context) ([]store.Ticket, error) {
	list, err := p.Store.List(ctx, store.Filter{States: []store.State{store.StateDone}, Limit: publishBatch * 5})
	if err != nil {
		return nil, err
	}
	var out []store.Ticket
	for _, s := range list {
		if s.Source == Source {
			out = append(out, s.Ticket)
		}
	}
	return out, nil
}

// ReviewRounds reads the new reviews of every done ticket's pull request and asks a round
// for those a writer submitted, then answers the rounds that ended done. It returns the
// tickets revised.
func (p *Publisher) ReviewRounds(ctx context.Context) ([]int64, error) {
	tickets, err := p.doneTickets(ctx)
	if err != nil {
		return nil, err
	}
	var revised []int64
	var errs []error
	for _, t := range tickets {
		did, err := p.reviewRound(ctx, t)
		if err != nil {
			errs = append(errs, fmt.Errorf("reviews of ticket %d (%s): %w", t.ID, t.ExternalID, err))
			if errors.Is(err, ErrRateLimited) {
				return revised, errors.Join(errs...)
			}
			continue
		}
		if did {
			revised = append(revised, t.ID)
			continue
		}
		if err := p.answerRound(ctx, t); err != nil {
			errs = append(errs, fmt.Errorf("answer the round of ticket %d (%s): %w", t.ID, t.ExternalID, err))
			if errors.Is(err, ErrRateLimited) {
				return revised, errors.Join(errs...)
			}
		}
	}
	return revised, errors.Join(errs...)
}

// reviewRound asks a round of done ticket t when a writer reviewed its pull request since
// the last review handled.
func (p *Publisher) reviewRound(ctx context.Context, t store.Ticket) (bool, error) {
	num, err := p.pullOf(ctx, t.ID)
	if err != nil || num == 0 {
		return false, err
	}
	_, ref, _, err := p.target(t.ExternalID)
	if err != nil {
		return false, err
	}
	w, err := p.Store.PullWatchOf(ctx, t.ID)
	if err != nil {
		return false, err
	}
	reviews, err := listReviews(ctx, p.Client, ref, num)
	if err != nil {
		return false, err
	}
	self, err := p.Client.Self(ctx)
	if err != nil {
		return false, err
	}
	cursor, askers, err := p.newAsks(ctx, ref, reviews, w.ReviewCursor, self)
	if err != nil || cursor == w.ReviewCursor {
		return false, err
	}
	if len(askers) > 0 {
		if err := p.revise(ctx, t, ref, num, askers, self); err != nil {
			return false, err
		}
	}
	return len(askers) > 0, p.Store.SetReviewCursor(ctx, t.ID, cursor)
}

// newAsks returns the newest review id and the reviews after cursor that ask a round: a
// person's (not a bot's, not ticketd's) with write access or listed in allow_authors.
func (p *Publisher) newAsks(ctx context.Context, ref repoRef, reviews []*gh.PullRequestReview, cursor int64, self string) (int64, []*gh.PullRequestReview, error) {
	newest := cursor
	var asks []*gh.PullRequestReview
	for _, r := range reviews {
		if r.GetID() <= cursor {
			continue
		}
		newest = max(newest, r.GetID())
		if !reviewAsks(r, self) {
			continue
		}
		ok, why, err := p.gate().allowedLogin(ctx, ref, r.GetUser().GetLogin(), r.GetAuthorAssociation())
		if err != nil {
			return cursor, nil, err
		}
		if !ok {
			p.logger().Info("github review asks no round", "repo", ref.String(), "review", r.GetID(), "why", why)
			continue
		}
		asks = append(asks, r)
	}
	return newest, asks, nil
}

// revise asks the round: the unresolved threads a person opened, and the asking reviews'
// own text, as untrusted data for the maker, within the bounds pickRoundThreads keeps.
func (p *Publisher) revise(ctx context.Context, t store.Ticket, ref repoRef, num int, asks []*gh.PullRequestReview, self string) error {
	all, err := fetchThreads(ctx, p.Client, ref, num)
	if err != nil {
		return err
	}
	var reviews []store.Thread
	var who []string
	for _, r := range asks {
		who = append(who, r.GetUser().GetLogin())
		if body := strings.TrimSpace(r.GetBody()); body != "" {
			reviews = append(reviews, store.Thread{ID: "review-" + strconv.FormatInt(r.GetID(), 10), Author: r.GetUser().GetLogin(),
				Body: body, URL: r.GetHTMLURL()})
		}
	}
	picked := pickRoundThreads(openThreads(all, self), reviews)
	threads := picked.Threads
	actor := "github:" + strings.Join(slices.Compact(who), ",")
	_, err = p.Store.Revise(ctx, t.ID, actor, store.RoundAsk{Source: store.RoundReview, Note: picked.Note, Threads: threads, MaxRounds: p.maxRounds()})
	switch {
	case errors.Is(err, store.ErrRoundsSpent):
		p.logger().Warn("github review past review.max_rounds: ticket escalated", "ticket", t.ID, "pull", num, "open_threads", len(threads))
		return nil
	case errors.Is(err, store.ErrInvalidTransition):
		return nil // it left done meanwhile (requeued, cancelled): the review waits for the next poll
	case err != nil:
		return err
	}
	p.logger().Info("github review asks a round", "ticket", t.ID, "pull", num, "threads", len(threads), "left_out", picked.LeftOut, "by", actor)
	return nil
}

func (p *Publisher) maxRounds() int {
	if p.MaxRounds > 0 {
		return p.MaxRounds
	}
	return 3
}

func (p *Publisher) gate() *authorGate {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.authors == nil {
		p.authors = newAuthorGate(p.Client, p.Allow, p.Client.now)
	}
	return p.authors
}

// answerRound finishes ticket t's last round when it ended done and is not answered yet:
// the fix branch (one commit more) is pushed, one comment answers the threads (looked up by
// its marker first), and review is asked again of those who asked the round.
func (p *Publisher) answerRound(ctx context.Context, t store.Ticket) error {
	rounds, err := p.Store.Rounds(ctx, t.ID)
	if err != nil || len(rounds) == 0 {
		return err
	}
	r := rounds[len(rounds)-1]
	if r.Outcome != string(store.StateDone) || r.CommentURL != "" {
		return nil
	}
	num, err := p.pullOf(ctx, t.ID)
	if err != nil || num == 0 {
		return err
	}
	tg, ref, _, err := p.target(t.ExternalID)
	if err != nil {
		return err
	}
	if err := p.push(ctx, tg.Dir, tg.PushURL, t.Branch, p.Token); err != nil {
		return err
	}
	mark := roundMarker(t.ID, r.N)
	url, found, err := findComment(ctx, p.Client, ref, num, mark)
	if err != nil {
		return err
	}
	if !found {
		c, resp, err := p.Client.api.Issues.CreateComment(ctx, ref.owner, ref.name, num, &gh.IssueComment{Body: gh.Ptr(RoundComment(t, r, mark))})
		p.Client.observe(resp, err)
		if err != nil {
			return fmt.Errorf("comment on pull request %d: %w", num, err)
		}
		url = c.GetHTMLURL()
	}
	if err := p.Store.RecordRoundComment(ctx, t.ID, r.N, url); err != nil {
		return err
	}
	p.logger().Info("github round answered", "ticket", t.ID, "round", r.N, "url", url)
	p.rerequest(ctx, ref, num, r)
	return nil
}

// rerequest asks review again of the people who asked the round. A refusal (a reviewer who
// lost access) is logged: the comment already answered.
func (p *Publisher) rerequest(ctx context.Context, ref repoRef, num int, r store.Round) {
	self, _ := p.Client.Self(ctx)
	var who []string
	for _, th := range r.Threads {
		if th.Author != "" && !strings.EqualFold(th.Author, self) && !slices.Contains(who, th.Author) {
			who = append(who, th.Author)
		}
	}
	if len(who) == 0 {
		return
	}
	_, resp, err := p.Client.api.PullRequests.RequestReviewers(ctx, ref.owner, ref.name, num, gh.ReviewersRequest{Reviewers: who})
	p.Client.observe(resp, err)
	if err != nil {
		p.logger().Warn("github re-request review", "pull", num, "reviewers", strings.Join(who, ","), "err", err)
	}
}

func (p *Publisher) push(ctx context.Context, dir, url, branch, token string) error {
	if p.Push != nil {
		return p.Push(ctx, dir, url, branch, token)
	}
	return worktree.Push(ctx, dir, url, branch, token)
}

// RoundComment is the one comment that answers a round: what changed, each thread by its
// link with the maker's answer (model output, defused), and the hidden marker. Threads are
// never resolved by ticketd: that is the reviewer's call.
func RoundComment(t store.Ticket, r store.Round, mark string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ticketd round %d: one commit pushed to `%s`, checked against the base as before (tests, lint, types, reviewers, judge).\n\n", r.N, t.Branch)
	if len(r.Threads) > 0 {
		b.WriteString("Threads answered (left open for you to resolve):\n")
		for _, th := range r.Threads {
			where := th.Path
			if where != "" && th.Line > 0 {
				where = fmt.Sprintf("%s:%d", th.Path, th.Line)
			}
			if where == "" {
				where = "review"
			}
			fmt.Fprintf(&b, "- [%s](%s) by %s\n", defuse(where), th.URL, defuse(th.Author))
		}
		b.WriteString("\n")
	}
	if note := strings.TrimSpace(r.Note); note != "" {
		fmt.Fprintf(&b, "Note: %s\n\n", defuse(truncateRunes(note, 1000)))
	}
	if s := strings.TrimSpace(t.Summary); s != "" {
		fmt.Fprintf(&b, "**What changed** (ticketd's summary, answering each thread):\n\n%s\n\n", defuse(secret.Redact(truncateRunes(s, 4000))))
	}
	b.WriteString(mark + "\n")
	return b.String()
}

// listReviews reads every review of pull request num, oldest first (conditional GETs).
func listReviews(ctx context.Context, c *Client, ref repoRef, num int) ([]*gh.PullRequestReview, error) {
	if err := c.ready(false); err != nil {
		return nil, err
	}
	opts := &gh.ListOptions{PerPage: 100}
	var out []*gh.PullRequestReview
	for {
		rs, resp, err := c.api.PullRequests.ListReviews(ctx, ref.owner, ref.name, num, opts)
		c.observe(resp, err)
		if err != nil {
			return nil, fmt.Errorf("list reviews of %s#%d: %w", ref, num, err)
		}
		out = append(out, rs...)
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// maxThreadPages bounds the GraphQL requests one fetchThreads makes (100 threads, or 100
// comments of a thread, a page): a server that keeps answering hasNextPage must not spend
// the whole GraphQL budget on one pull request.
const maxThreadPages = 200

// fetchThreads reads all of pull request num's review threads through GraphQL, page after
// page by cursor, and all comments of a thread longer than its first page.
func fetchThreads(ctx context.Context, c *Client, ref repoRef, num int) ([]reviewThread, error) {
	var all []reviewThread
	var cursor any // null: the first page
	seen := map[string]bool{}
	requests := 0
	for {
		var raw json.RawMessage
		if err := c.graphQL(ctx, reviewThreadsQuery, map[string]any{"owner": ref.owner, "name": ref.name, "number": num, "cursor": cursor}, &raw); err != nil {
			return nil, fmt.Errorf("review threads of %s#%d: %w", ref, num, err)
		}
		requests++
		page, err := parseReviewThreads(raw)
		if err != nil {
			return nil, fmt.Errorf("review threads of %s#%d: %w", ref, num, err)
		}
		for i, after := range page.MoreComments {
			th := &page.Threads[i]
			for after != "" {
				if requests >= maxThreadPages {
					return nil, fmt.Errorf("review threads of %s#%d: more than %d pages (GitHub kept answering hasNextPage)", ref, num, maxThreadPages)
				}
				var raw json.RawMessage
				if err := c.graphQL(ctx, threadCommentsQuery, map[string]any{"id": th.ID, "cursor": after}, &raw); err != nil {
					return nil, fmt.Errorf("comments of review thread %s of %s#%d: %w", th.ID, ref, num, err)
				}
				requests++
				more, next, err := parseThreadComments(raw)
				if err != nil {
					return nil, fmt.Errorf("comments of review thread %s of %s#%d: %w", th.ID, ref, num, err)
				}
				th.Comments = append(th.Comments, more...)
				if next == after {
					return nil, fmt.Errorf("comments of review thread %s of %s#%d: GitHub answered the same cursor %q again", th.ID, ref, num, next)
				}
				after = next
			}
		}
		all = append(all, page.Threads...)
		switch {
		case page.Next == "":
			return all, nil
		case seen[page.Next]:
			return nil, fmt.Errorf("review threads of %s#%d: GitHub answered the cursor %q twice", ref, num, page.Next)
		case requests >= maxThreadPages:
			return nil, fmt.Errorf("review threads of %s#%d: more than %d pages (GitHub kept answering hasNextPage)", ref, num, maxThreadPages)
		}
		seen[page.Next] = true
		cursor = page.Next
	}
}

// graphQLURL is the GraphQL endpoint beside REST base URL base: base's graphql on
// github.com (api.github.com/graphql), and https://HOST/api/graphql for GitHub Enterprise
// Server's https://HOST/api/v3/. Absolute, since go-github refuses a path with "..".
func graphQLURL(base string) string {
	if b, ok := strings.CutSuffix(base, "/api/v3/"); ok {
		return b + "/api/graphql"
	}
	return base + "graphql"
}

// graphQL posts query with variables to GitHub's GraphQL endpoint and decodes the answer
// into out; GraphQL's own errors (status 200) are out's to read.
func (c *Client) graphQL(ctx context.Context, query string, vars map[string]any, out any) error {
	if err := c.ready(false); err != nil {
		return err
	}
	req, err := c.api.NewRequest(ctx, http.MethodPost, graphQLURL(c.api.BaseURL()), map[string]any{"query": query, "variables": vars})
	if err != nil {
		return err
	}
	resp, err := c.api.Do(req, out)
	c.observe(resp, err)
	return err
}
