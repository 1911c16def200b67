package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	gh "github.com/google/go-github/v89/github"

	"github.com/ticketd/ticketd/store"
)

// An attempt stopped from outside (the window, a shutdown, the night's dollars) keeps its
// partial change on ticketd/<id>-attempt-<n>-released, pushed to the push remote; the
// ticket runs that attempt again later. Once the ticket is done its fix is on its own
// branch and the released one is of no more use, yet it stayed on GitHub for good, one
// more for every ticket a night stopped. PruneReleased deletes those, and only those
// ticketd still owns: the branch must point where this clone's copy of it points (so no
// one pushed to it, and it is not another ticketd's ticket of the same number), and no
// open pull request may have it as head or base. An escalated ticket's are kept: its
// comment hands them to a human.

// releasedRef matches a released attempt's branch on GitHub.
var releasedRef = regexp.MustCompile(`^refs/heads/(ticketd/([0-9]+)-attempt-[0-9]+-released)$`)

const (
	// pruneEvery spaces the passes that look for released branches to delete: their tickets
	// end at most a few times a night, and each pass lists the repository's branches.
	pruneEvery = time.Hour
	// pruneBatch bounds the branches one pass deletes (three requests each).
	pruneBatch = 20
)

// PruneReleased deletes from each GitHub repository the released-attempt branches of done
// tickets (see above), at most once every pruneEvery; it returns the branches deleted,
// "OWNER/NAME:branch".
func (p *Publisher) PruneReleased(ctx context.Context) ([]string, error) {
	now := p.Client.now()
	p.mu.Lock()
	due := p.prunedAt.IsZero() || !now.Before(p.prunedAt.Add(pruneEvery))
	p.mu.Unlock()
	if !due {
		return nil, nil
	}
	var deleted []string
	var errs []error
	for _, tg := range p.Targets {
		ref, err := parseRepo(tg.Name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		d, err := p.pruneRepo(ctx, tg, ref, pruneBatch-len(deleted))
		deleted = append(deleted, d...)
		if err != nil {
			errs = append(errs, fmt.Errorf("released branches of %s: %w", ref, err))
			if rateLimited(err) {
				break
			}
		}
	}
	if len(errs) == 0 {
		p.mu.Lock()
		p.prunedAt = now
		p.mu.Unlock()
	}
	return deleted, errors.Join(errs...)
}

// pruneRepo deletes up to limit released branches of done tickets from ref.
func (p *Publisher) pruneRepo(ctx context.Context, tg Target, ref repoRef, limit int) ([]string, error) {
	if err := p.Client.ready(false); err != nil {
		return nil, err
	}
	refs, resp, err := p.Client.api.Git.ListMatchingRefs(ctx, ref.owner, ref.name, "heads/ticketd/")
	p.Client.observe(resp, err)
	if err != nil {
		return nil, fmt.Errorf("list branches ticketd/*%s: %w", writeHint(err, "read branches", "Contents read"), err)
	}
	var deleted []string
	for _, r := range refs {
		if len(deleted) >= limit {
			break
		}
		m := releasedRef.FindStringSubmatch(r.GetRef())
		if m == nil {
			continue
		}
		branch := m[1]
		id, err := strconv.ParseInt(m[2], 10, 64)
		if err != nil {
			continue
		}
		ok, why, err := p.releasedUseless(ctx, tg, ref, id, branch, r.GetObject().GetSHA())
		if err != nil {
			return deleted, err
		}
		if !ok {
			p.logger().Debug("github released branch kept", "repo", ref.String(), "branch", branch, "why", why)
			continue
		}
		resp, err := p.Client.api.Git.DeleteRef(ctx, ref.owner, ref.name, "heads/"+branch)
		p.Client.observe(resp, err)
		if err != nil && !unprocessable(err, "reference does not exist") && statusOf(err) != http.StatusNotFound {
			return deleted, fmt.Errorf("delete branch %s%s: %w", branch, writeHint(err, "delete branches", "Contents read and write"), err)
		}
		p.logger().Info("github released branch deleted: its ticket is done", "repo", ref.String(), "branch", branch, "ticket", id)
		deleted = append(deleted, ref.String()+":"+branch)
	}
	return deleted, nil
}

// releasedUseless says whether released branch of ticket id, at sha on GitHub, may go, and
// if not why.
func (p *Publisher) releasedUseless(ctx context.Context, tg Target, ref repoRef, id int64, branch, sha string) (bool, string, error) {
	t, err := p.Store.Get(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return false, "no ticket of that id in this database", nil
	case err != nil:
		return false, "", err
	case t.State != store.StateDone:
		return false, "its ticket is " + string(t.State), nil
	}
	local, err := p.head(ctx, tg.Dir, branch)
	switch {
	case err != nil:
		return false, "this clone has no such branch (another ticketd's, or collected)", nil
	case sha == "" || !strings.EqualFold(local, sha):
		return false, "it points elsewhere than this clone's (someone pushed to it)", nil
	}
	for _, opts := range []*gh.PullRequestListOptions{{State: "open", Head: ref.owner + ":" + branch}, {State: "open", Base: branch}} {
		opts.ListOptions = gh.ListOptions{PerPage: 1}
		if err := p.Client.ready(false); err != nil {
			return false, "", err
		}
		prs, resp, err := p.Client.api.PullRequests.List(ctx, ref.owner, ref.name, opts)
		p.Client.observe(resp, err)
		if err != nil {
			return false, "", fmt.Errorf("look up pull requests on branch %s: %w", branch, err)
		}
		if len(prs) > 0 {
			return false, "open pull request " + prs[0].GetHTMLURL() + " uses it", nil
		}
	}
	return true, "", nil
}
