package github

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	gh "github.com/google/go-github/v89/github"
)

// authorGate decides who may start a paid run: an allowlisted login, or an author with
// write access to the repository. Anyone can open an issue on a public repository; without
// the gate, spam with the right label would drain the night's budget.
//
// GitHub's author_association answers most cases without a request: an author who is not
// an owner, member or collaborator has no write access. The rest are asked once per hour
// per repository and login.
type authorGate struct {
	client *Client
	allow  map[string]bool
	now    func() time.Time

	mu    sync.Mutex
	cache map[string]gateEntry // "owner/name\x00login" -> verdict
}

type gateEntry struct {
	ok     bool
	reason string
	at     time.Time
}

const gateTTL = time.Hour

func newAuthorGate(c *Client, allow []string, now func() time.Time) *authorGate {
	g := &authorGate{client: c, allow: map[string]bool{}, now: now, cache: map[string]gateEntry{}}
	for _, a := range allow {
		g.allow[strings.ToLower(a)] = true
	}
	return g
}

// allowed reports whether is's author may open a ticket in repo, with the reason when not.
func (g *authorGate) allowed(ctx context.Context, repo repoRef, is *gh.Issue) (bool, string, error) {
	return g.allowedLogin(ctx, repo, is.GetUser().GetLogin(), is.GetAuthorAssociation())
}

// allowedLogin is allowed for an author known by login and author_association (an issue's,
// a comment's or a review's).
func (g *authorGate) allowedLogin(ctx context.Context, repo repoRef, login, assoc string) (bool, string, error) {
	if login == "" {
		return false, "issue has no author", nil
	}
	if g.allow[strings.ToLower(login)] {
		return true, "", nil
	}
	switch assoc {
	case "OWNER":
		return true, "", nil
	case "MEMBER", "COLLABORATOR", "":
		// Members and collaborators may have read or triage access only: ask.
	default:
		return false, fmt.Sprintf("author %s has no write access (association %s) and is not in github.allow_authors", login, assoc), nil
	}
	key := repo.String() + "\x00" + strings.ToLower(login)
	g.mu.Lock()
	e, ok := g.cache[key]
	g.mu.Unlock()
	if ok && g.now().Sub(e.at) < gateTTL {
		return e.ok, e.reason, nil
	}
	if err := g.client.ready(true); err != nil {
		return false, "", err
	}
	lvl, resp, err := g.client.api.Repositories.GetPermissionLevel(ctx, repo.owner, repo.name, login)
	g.client.observe(resp, err)
	switch {
	case statusOf(err) == 404:
		e = gateEntry{ok: false, reason: fmt.Sprintf("author %s is not a collaborator of %s", login, repo)}
	case err != nil:
		return false, "", fmt.Errorf("permission of %s on %s: %w", login, repo, err)
	default:
		p := lvl.GetPermission()
		e = gateEntry{ok: p == "admin" || p == "maintain" || p == "write"}
		if !e.ok {
			e.reason = fmt.Sprintf("author %s has %q access to %s, not write, and is not in github.allow_authors", login, p, repo)
		}
	}
	e.at = g.now()
	g.mu.Lock()
	g.cache[key] = e
	g.mu.Unlock()
	return e.ok, e.reason, nil
}
