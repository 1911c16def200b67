package github

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	gh "github.com/google/go-github/v89/github"

	"github.com/ticketd/ticketd/pipeline/secret"
	"github.com/ticketd/ticketd/store"
)

// questionMarker identifies the comment that asked question n of a ticket.
func questionMarker(ticketID int64, n int) string {
	return fmt.Sprintf("<!-- ticketd:question ticket=%d n=%d -->", ticketID, n)
}

// ticketdMarker starts every hidden marker ticketd puts in what it writes on GitHub; a
// comment carrying one, when ticketd's own account wrote it (Client.Self), is never an answer.
const ticketdMarker = "<!-- ticketd:"

// QuestionComment is the comment that puts a maker's question on its issue: the question
// (model output, defused), how to answer it, and the hidden marker.
func QuestionComment(t store.Ticket, q store.Question, mark string) string {
	var b strings.Builder
	b.WriteString("ticketd needs an answer before it can fix this issue.\n\n")
	question := truncateRunes(strings.TrimSpace(q.Text), 2000)
	fmt.Fprintf(&b, "**Question:** %s\n\n", defuse(secret.Redact(question)))
	b.WriteString("Reply with a comment on this issue: the first reply after this one by the issue's author or by a maintainer with write access is taken as the answer, and ticketd tries again with it.\n\n")
	fmt.Fprintf(&b, "ticketd ticket %d (on the ticketd host: `ticketctl answer %d \"...\"`).\n\n%s\n", t.ID, t.ID, mark)
	return b.String()
}

// questions posts the open question of every needs_info GitHub ticket whose question is not
// on its issue yet: looked up by its marker first, recorded after, so a restart never posts
// it twice.
func (p *Publisher) questions(ctx context.Context) ([]string, error) {
	waiting, err := p.Store.WaitingForAnswer(ctx, Source, 0)
	if err != nil {
		return nil, err
	}
	var (
		urls []string
		errs []error
		sent int
	)
	for _, w := range waiting {
		if w.Question.CommentURL != "" {
			continue
		}
		if sent == publishBatch {
			break
		}
		sent++
		url, err := p.held(fmt.Sprintf("question %d", w.Question.N), w.Ticket.ID, func() (string, error) { return p.question(ctx, w) })
		if err != nil {
			errs = append(errs, fmt.Errorf("question comment for ticket %d (%s): %w", w.Ticket.ID, w.Ticket.ExternalID, err))
			if errors.Is(err, ErrRateLimited) {
				break
			}
			continue
		}
		urls = append(urls, url)
	}
	return urls, errors.Join(errs...)
}

func (p *Publisher) question(ctx context.Context, w store.Waiting) (string, error) {
	_, ref, num, err := p.target(w.Ticket.ExternalID)
	if err != nil {
		return "", err
	}
	mark := questionMarker(w.Ticket.ID, w.Question.N)
	if url, found, err := findComment(ctx, p.Client, ref, num, mark); err != nil {
		return "", err
	} else if found {
		return url, p.Store.RecordQuestionComment(ctx, w.Ticket.ID, w.Question.N, url)
	}
	c, resp, err := p.Client.api.Issues.CreateComment(ctx, ref.owner, ref.name, num,
		&gh.IssueComment{Body: gh.Ptr(QuestionComment(w.Ticket, w.Question, mark))})
	p.Client.observe(resp, err)
	if err != nil {
		return "", fmt.Errorf("comment on %s%s: %w", w.Ticket.ExternalID, writeHint(err, "comment on issues", "Issues read and write"), err)
	}
	p.logger().Info("github question posted", "ticket", w.Ticket.ID, "url", c.GetHTMLURL())
	return c.GetHTMLURL(), p.Store.RecordQuestionComment(ctx, w.Ticket.ID, w.Question.N, c.GetHTMLURL())
}

// findComment looks for a comment carrying mark on issue num, every page.
func findComment(ctx context.Context, c *Client, ref repoRef, num int, mark string) (string, bool, error) {
	cs, err := listComments(ctx, c, ref, num)
	if err != nil {
		return "", false, err
	}
	for _, cm := range cs {
		if !strings.Contains(cm.GetBody(), mark) {
			continue
		}
		if own, err := c.ownComment(ctx, cm); err != nil {
			return "", false, err
		} else if own {
			return cm.GetHTMLURL(), true, nil
		}
	}
	return "", false, nil
}

// listComments reads every comment of issue num, oldest first (conditional GETs: an
// unchanged page costs no rate limit).
func listComments(ctx context.Context, c *Client, ref repoRef, num int) ([]*gh.IssueComment, error) {
	if err := c.ready(false); err != nil {
		return nil, err
	}
	opts := &gh.IssueListCommentsOptions{ListOptions: gh.ListOptions{PerPage: 100}}
	var out []*gh.IssueComment
	for {
		cs, resp, err := c.api.Issues.ListComments(ctx, ref.owner, ref.name, num, opts)
		c.observe(resp, err)
		if err != nil {
			return nil, fmt.Errorf("read comments on %s#%d: %w", ref, num, err)
		}
		out = append(out, cs...)
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.ListOptions.Page = resp.NextPage
	}
}

// maxAnswerRunes bounds an answer taken from a comment; the prompt clips it further.
const maxAnswerRunes = 8000

// Answers reads the issues of the needs_info GitHub tickets and takes, as each one's answer,
// the first comment after its question by the issue's author or by someone the author gate
// admits (write access, or github.allow_authors): the ticket goes back in the queue. Comments
// by anyone else are ignored (logged once): anyone can comment on a public issue, and the
// answer steers a paid attempt. The question's comment, when ticketd posted one, marks where
// "after" starts; otherwise the time it was asked does.
func (in *Intake) Answers(ctx context.Context) ([]int64, error) {
	in.init()
	waiting, err := in.Store.WaitingForAnswer(ctx, Source, 0)
	if err != nil {
		return nil, err
	}
	var (
		answered []int64
		errs     []error
	)
	for _, w := range waiting {
		ok, err := in.answer(ctx, w)
		if err != nil {
			errs = append(errs, fmt.Errorf("github answer for %s: %w", w.Ticket.ExternalID, err))
			if errors.Is(err, ErrRateLimited) {
				break
			}
			continue
		}
		if ok {
			answered = append(answered, w.Ticket.ID)
		}
	}
	return answered, errors.Join(errs...)
}

func (in *Intake) answer(ctx context.Context, w store.Waiting) (bool, error) {
	name, num, err := ParseExternalID(w.Ticket.ExternalID)
	if err != nil {
		return false, err
	}
	if !in.configured(name) {
		return false, nil // its repository left the config: ticketctl answer still works
	}
	ref, err := parseRepo(name)
	if err != nil {
		return false, err
	}
	if err := in.Client.ready(false); err != nil {
		return false, err
	}
	issue, resp, err := in.Client.api.Issues.Get(ctx, ref.owner, ref.name, num)
	in.Client.observe(resp, err)
	if err != nil {
		return false, fmt.Errorf("read issue %s: %w", w.Ticket.ExternalID, err)
	}
	cs, err := listComments(ctx, in.Client, ref, num)
	if err != nil {
		return false, err
	}
	self, err := in.Client.Self(ctx)
	if err != nil {
		return false, err
	}
	for _, c := range replies(cs, self, w) {
		login := c.GetUser().GetLogin()
		ok, err := in.mayAnswer(ctx, ref, issue, c, w.Ticket.ExternalID)
		if err != nil {
			return false, err
		}
		if !ok {
			continue
		}
		err = in.Store.Answer(ctx, w.Ticket.ID, truncateRunes(strings.TrimSpace(c.GetBody()), maxAnswerRunes), "github:"+login)
		if errors.Is(err, store.ErrInvalidTransition) {
			return false, nil // answered or requeued meanwhile
		}
		if err != nil {
			return false, err
		}
		in.Logger.Info("github answer taken: ticket back in the queue", "ticket", w.Ticket.ID, "issue", w.Ticket.ExternalID, "by", login)
		return true, nil
	}
	return false, nil
}

// configured reports whether the repository named (owner/name) is in the intake's config.
func (in *Intake) configured(name string) bool {
	for _, r := range in.Repos {
		if strings.EqualFold(r.Name, name) {
			return true
		}
	}
	return false
}

// replies are the comments that may answer w's question, in order: those after ticketd's
// latest copy of the question (or, when none is found, those made since it was asked),
// less ticketd's own and empty ones. Only ticketd's own comments (by self) carry markers
// that count: a stranger's copy of the question's marker must not move where "after"
// starts, nor hide an answer.
func replies(cs []*gh.IssueComment, self string, w store.Waiting) []*gh.IssueComment {
	own := func(c *gh.IssueComment) bool { return strings.EqualFold(c.GetUser().GetLogin(), self) }
	mark := questionMarker(w.Ticket.ID, w.Question.N)
	start := -1
	for i, c := range cs {
		if own(c) && strings.Contains(c.GetBody(), mark) {
			start = i + 1
		}
	}
	askedAt := w.Question.AskedAt.Truncate(time.Second) // GitHub stamps comments to the second
	var out []*gh.IssueComment
	for i, c := range cs {
		switch {
		case start >= 0 && i < start,
			start < 0 && c.GetCreatedAt().Time.Before(askedAt),
			own(c) && strings.Contains(c.GetBody(), ticketdMarker),
			strings.TrimSpace(c.GetBody()) == "":
			continue
		}
		out = append(out, c)
	}
	return out
}

// mayAnswer reports whether comment c may answer the question on issue: the issue's
// author may, anyone else only as the intake gate allows (the answer goes into a prompt).
func (in *Intake) mayAnswer(ctx context.Context, ref repoRef, issue *gh.Issue, c *gh.IssueComment, ext string) (bool, error) {
	login := c.GetUser().GetLogin()
	if login != "" && strings.EqualFold(login, issue.GetUser().GetLogin()) {
		return true, nil
	}
	// The comments come from the Issue Comments REST endpoint, which keeps
	// author_association; GitHub dropped it only from Events API payloads.
	//lint:ignore SA1019 read from the REST endpoint, not the Events API
	allowed, why, err := in.gate.allowed(ctx, ref, &gh.Issue{User: c.GetUser(), AuthorAssociation: c.AuthorAssociation})
	if err != nil {
		return false, err
	}
	if !allowed {
		in.ignoreOnce(fmt.Sprintf("%s comment %d", ext, c.GetID()), "github comment not taken as an answer", why)
	}
	return allowed, nil
}

// ignoreOnce logs an ignored item the first time this process sees it.
func (in *Intake) ignoreOnce(key, msg, why string) {
	in.mu.Lock()
	seen := in.ignored[key]
	in.ignored[key] = true
	in.mu.Unlock()
	if !seen {
		in.Logger.Warn(msg, "item", key, "why", why)
	}
}
