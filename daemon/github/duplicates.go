package github

import (
	"context"
	"errors"
	"fmt"
	"strings"

	gh "github.com/google/go-github/v89/github"

	"github.com/ticketd/ticketd/store"
)

// closedDuplicate reports whether done ticket t was closed as a duplicate (no fix of its
// own: it gets a comment pointing at the fix, not a pull request).
func (p *Publisher) closedDuplicate(ctx context.Context, t store.Ticket) (store.Link, bool, error) {
	l, err := p.Store.DuplicateOf(ctx, t.ID)
	if errors.Is(err, store.ErrNotDuplicate) || (err == nil && l.Unlinked) {
		return store.Link{}, false, nil
	}
	if err != nil {
		return store.Link{}, false, err
	}
	return l, true, nil
}

// duplicateComment posts, once, on a closed duplicate's issue a comment pointing at the fix
// of the ticket it duplicated (its pull request, or its branch when it has none), and
// records it; the pull request output is recorded as that fix's, so none is opened for the
// duplicate. A GitHub ticket whose pull request is not open yet is waited for.
func (p *Publisher) duplicateComment(ctx context.Context, t store.Ticket, l store.Link) (string, error) {
	_, ref, num, err := p.target(t.ExternalID)
	if err != nil {
		return "", err
	}
	of, err := p.Store.Get(ctx, l.Of)
	if err != nil {
		return "", err
	}
	pr := ""
	outs, err := p.Store.Outputs(ctx, of.ID)
	if err != nil {
		return "", err
	}
	for _, o := range outs {
		if o.Kind == store.OutputPullRequest {
			pr = o.URL
		}
	}
	if pr == "" && of.Source == Source {
		return "", fmt.Errorf("ticket %d is closed with ticket %d, whose pull request is not open yet: the comment waits for it", t.ID, of.ID)
	}
	mark := marker("duplicate", t.ID)
	if err := p.Client.ready(false); err != nil {
		return "", err
	}
	url, err := p.postedComment(ctx, t, ref, num, mark)
	if err != nil {
		return "", err
	}
	if url == "" {
		c, resp, err := p.Client.api.Issues.CreateComment(ctx, ref.owner, ref.name, num,
			&gh.IssueComment{Body: gh.Ptr(DuplicateComment(of, l, pr, mark))})
		p.Client.observe(resp, err)
		if err != nil {
			return "", fmt.Errorf("comment on %s%s: %w", t.ExternalID, writeHint(err, "comment on issues", "Issues read and write"), err)
		}
		url = c.GetHTMLURL()
		p.logger().Info("github duplicate comment posted", "ticket", t.ID, "of", of.ID, "url", url)
	}
	if err := p.Store.RecordOutput(ctx, t.ID, store.OutputComment, url); err != nil {
		return "", err
	}
	return url, p.Store.RecordOutput(ctx, t.ID, store.OutputPullRequest, pr)
}

// DuplicateComment is the comment on a duplicate's issue: which issue it duplicated, why
// (defused: the reason quotes issue text), and where the fix is.
func DuplicateComment(of store.Ticket, l store.Link, pr, mark string) string {
	var b strings.Builder
	name := fmt.Sprintf("ticket %d", of.ID)
	if _, n, err := ParseExternalID(of.ExternalID); of.Source == Source && err == nil {
		name = fmt.Sprintf("#%d", n) // a link to the issue it duplicated is the point
	}
	fmt.Fprintf(&b, "ticketd found that this issue reports the same failure as %s (%s) and fixed them once.\n\n", name, Defuse(l.Reason))
	if pr != "" {
		fmt.Fprintf(&b, "**The fix:** %s (branch `%s`).\n\n", pr, Defuse(of.Branch))
	} else {
		fmt.Fprintf(&b, "**The fix:** branch `%s`.\n\n", Defuse(of.Branch))
	}
	b.WriteString("If this issue is a different problem, say so here: a maintainer can have it worked on its own.\n")
	b.WriteString(mark + "\n")
	return b.String()
}
