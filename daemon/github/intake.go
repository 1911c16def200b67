package github

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	gh "github.com/google/go-github/v89/github"

	"github.com/ticketd/ticketd/daemon/intake"
	"github.com/ticketd/ticketd/store"
)

// Repo is one GitHub repository ticketd takes issues from.
type Repo struct {
	Name  string // OWNER/NAME
	Local string // key under repos in the config: where fixes are made
	Label string // issues carrying it become tickets
}

// Intake turns labelled issues into tickets and cancels tickets whose issue went away.
type Intake struct {
	Client      *Client
	Store       *store.Store
	Repos       []Repo
	Allow       []string       // logins allowed without write access
	Priorities  map[string]int // label -> priority, as for the dir source
	MaxAttempts int
	Logger      *slog.Logger
	Now         func() time.Time

	once    sync.Once
	gate    *authorGate
	mu      sync.Mutex
	known   map[string]bool // external ids already enqueued by this process
	ignored map[string]bool // external ids already logged as ignored
}

// ScanReport is what one Scan did.
type ScanReport struct {
	Listed    int      // open labelled issues seen (pull requests excluded)
	Added     []int64  // tickets created
	Ignored   []string // external ids refused by the author gate
	Cancelled []int64  // tickets whose issue was closed or unlabelled
	Answered  []int64  // needs_info tickets queued again by an answer on their issue
	// Unchanged counts listing pages GitHub answered 304 (no rate limit spent).
	Unchanged int
}

func (in *Intake) init() {
	in.once.Do(func() {
		if in.Now == nil {
			in.Now = time.Now
		}
		if in.Logger == nil {
			in.Logger = slog.Default()
		}
		in.gate = newAuthorGate(in.Client, in.Allow, in.Now)
		in.known, in.ignored = map[string]bool{}, map[string]bool{}
	})
}

// Scan lists every repository's open issues with its label (all pages), enqueues the new
// ones whose author passes the gate, cancels this repository's open tickets (needs_info
// included) whose issue is no longer open with the label, and takes the answers to the
// questions of needs_info tickets (Answers). A repository whose listing fails is skipped whole: a
// partial listing must never cancel tickets. Errors of all repositories are joined.
func (in *Intake) Scan(ctx context.Context) (ScanReport, error) {
	in.init()
	var rep ScanReport
	var errs []error
	for _, r := range in.Repos {
		if err := in.scanRepo(ctx, r, &rep); err != nil {
			errs = append(errs, fmt.Errorf("github intake %s: %w", r.Name, err))
		}
	}
	answered, err := in.Answers(ctx)
	rep.Answered = answered
	if err != nil {
		errs = append(errs, err)
	}
	return rep, errors.Join(errs...)
}

func (in *Intake) scanRepo(ctx context.Context, r Repo, rep *ScanReport) error {
	ref, err := parseRepo(r.Name)
	if err != nil {
		return err
	}
	open, err := in.listOpen(ctx, r, ref, rep)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, is := range open {
		if is.IsPullRequest() {
			continue
		}
		rep.Listed++
		ext := ExternalID(r.Name, is.GetNumber())
		seen[ext] = true
		if err := in.admit(ctx, r, ref, is, ext, rep); err != nil {
			return err
		}
	}
	return in.checkUnlisted(ctx, r, seen, rep)
}

// listOpen lists the repository's open issues with the intake label, every page of them.
func (in *Intake) listOpen(ctx context.Context, r Repo, ref repoRef, rep *ScanReport) ([]*gh.Issue, error) {
	opts := &gh.IssueListByRepoOptions{State: "open", Labels: []string{r.Label}, ListOptions: gh.ListOptions{PerPage: 100}}
	var open []*gh.Issue
	for {
		if err := in.Client.ready(true); err != nil {
			return nil, err
		}
		page, resp, err := in.Client.api.Issues.ListByRepo(ctx, ref.owner, ref.name, opts)
		in.Client.observe(resp, err)
		if err != nil {
			return nil, fmt.Errorf("list issues labelled %q (page %d)%s: %w", r.Label, max(opts.ListOptions.Page, 1), accessHint(err), err)
		}
		if notModified(resp.Response) {
			rep.Unchanged++
		}
		open = append(open, page...)
		if resp.NextPage == 0 {
			return open, nil
		}
		opts.ListOptions.Page = resp.NextPage
	}
}

// checkUnlisted reads the issue of each ticket of this repository still active but absent
// from the open listing (seen), to tell closed or unlabelled (cancel) from a listing that
// raced an edit (keep).
func (in *Intake) checkUnlisted(ctx context.Context, r Repo, seen map[string]bool, rep *ScanReport) error {
	active, err := in.Store.List(ctx, store.Filter{States: []store.State{store.StateQueued, store.StateRunning, store.StateNeedsInfo}, Repo: r.Local})
	if err != nil {
		return err
	}
	for _, t := range active {
		if t.Source != Source || seen[t.ExternalID] || !strings.HasPrefix(t.ExternalID, r.Name+"#") {
			continue
		}
		if err := in.check(ctx, r, t.Ticket, rep); err != nil {
			return err
		}
	}
	return nil
}

// admit enqueues one open labelled issue unless it is known or its author is refused.
func (in *Intake) admit(ctx context.Context, r Repo, ref repoRef, is *gh.Issue, ext string, rep *ScanReport) error {
	in.mu.Lock()
	known, ignored := in.known[ext], in.ignored[ext]
	in.mu.Unlock()
	if known {
		return nil
	}
	ok, why, err := in.gate.allowed(ctx, ref, is)
	if err != nil {
		return err
	}
	if !ok {
		rep.Ignored = append(rep.Ignored, ext)
		if !ignored {
			in.Logger.Warn("github issue ignored", "issue", ext, "why", why)
			in.mu.Lock()
			in.ignored[ext] = true
			in.mu.Unlock()
		}
		return nil
	}
	labels := make([]string, 0, len(is.Labels))
	for _, l := range is.Labels {
		labels = append(labels, l.GetName())
	}
	prio := intake.Priority(labels, in.Priorities) // as the folder intake reads them: without case
	id, created, err := in.Store.Enqueue(ctx, store.NewTicket{
		Source: Source, ExternalID: ext, Repo: r.Local, Title: is.GetTitle(), Body: is.GetBody(),
		Labels: labels, Priority: prio, MaxAttempts: in.MaxAttempts,
	})
	if err != nil {
		return err
	}
	in.mu.Lock()
	in.known[ext] = true
	in.mu.Unlock()
	if created {
		rep.Added = append(rep.Added, id)
		in.Logger.Info("github issue enqueued", "issue", ext, "ticket", id)
	}
	return nil
}

// Watch re-reads the issue of every running GitHub ticket and cancels those closed or
// unlabelled, so the worker stops spending at its next heartbeat. The reads are
// conditional: an unchanged issue is a free 304. It does not hold back the reserve: stopping
// paid work matters more than intake.
func (in *Intake) Watch(ctx context.Context) (ScanReport, error) {
	in.init()
	var rep ScanReport
	running, err := in.Store.List(ctx, store.Filter{States: []store.State{store.StateRunning}})
	if err != nil {
		return rep, err
	}
	var errs []error
	for _, t := range running {
		if t.Source != Source || t.CancelRequested {
			continue
		}
		name, _, err := ParseExternalID(t.ExternalID)
		if err != nil {
			continue
		}
		i := slices.IndexFunc(in.Repos, func(r Repo) bool { return strings.EqualFold(r.Name, name) })
		if i < 0 {
			continue
		}
		if err := in.check(ctx, in.Repos[i], t.Ticket, &rep); err != nil {
			errs = append(errs, fmt.Errorf("github watch %s: %w", t.ExternalID, err))
		}
	}
	return rep, errors.Join(errs...)
}

// check reads t's issue and requests cancellation when it is closed, gone or unlabelled.
func (in *Intake) check(ctx context.Context, r Repo, t store.Ticket, rep *ScanReport) error {
	_, num, err := ParseExternalID(t.ExternalID)
	if err != nil {
		return err
	}
	ref, err := parseRepo(r.Name)
	if err != nil {
		return err
	}
	if err := in.Client.ready(false); err != nil {
		return err
	}
	is, resp, err := in.Client.api.Issues.Get(ctx, ref.owner, ref.name, num)
	in.Client.observe(resp, err)
	var why string
	switch st := statusOf(err); {
	case st == 404:
		// GitHub answers 404 for an issue deleted or transferred out of the token's sight,
		// and as well for every issue of a repository the token can no longer see: only
		// the first is a reason to stop the work.
		if err := in.repoVisible(ctx, ref); err != nil {
			return fmt.Errorf("read issue %s: %w", t.ExternalID, err)
		}
		why = fmt.Sprintf("issue %s is gone from GitHub (HTTP %d)", t.ExternalID, st)
	case st == 410:
		why = fmt.Sprintf("issue %s is gone from GitHub (HTTP %d)", t.ExternalID, st)
	case err != nil:
		return fmt.Errorf("read issue %s: %w", t.ExternalID, err)
	case is.GetNumber() != 0 && is.GetNumber() != num:
		// GitHub redirects (301) a transferred issue to its new repository, where it has a
		// new number; the redirect is followed, so the answer is that issue.
		why = fmt.Sprintf("issue %s was transferred to %s on GitHub", t.ExternalID, issueName(is))
	case is.GetState() == "closed":
		why = fmt.Sprintf("issue %s was closed on GitHub", t.ExternalID)
	case is.Labels != nil && !slices.ContainsFunc(is.Labels, func(l *gh.Label) bool { return strings.EqualFold(l.GetName(), r.Label) }):
		// GitHub's label names are unique without case: "Ticketd" is the same label. An
		// answer without labels (left out, or null) says nothing of them: no cancel.
		why = fmt.Sprintf("label %q was removed from issue %s", r.Label, t.ExternalID)
	default:
		return nil
	}
	state, err := in.Store.RequestCancel(ctx, t.ID, Source, why)
	if errors.Is(err, store.ErrInvalidTransition) {
		return nil // finished meanwhile
	}
	if err != nil {
		return err
	}
	rep.Cancelled = append(rep.Cancelled, t.ID)
	in.Logger.Info("github ticket cancelled", "ticket", t.ID, "issue", t.ExternalID, "why", why, "state", state)
	return nil
}

// repoVisible reads the repository, to tell an issue gone (the repository answers) from a
// token that lost access to the whole repository (it does not).
func (in *Intake) repoVisible(ctx context.Context, ref repoRef) error {
	if err := in.Client.ready(false); err != nil {
		return err
	}
	_, resp, err := in.Client.api.Repositories.Get(ctx, ref.owner, ref.name)
	in.Client.observe(resp, err)
	if st := statusOf(err); st == 404 || st == 403 || st == 401 {
		return fmt.Errorf("repository %s answers HTTP %d too: the token cannot see it; give the token access to it "+
			"(fine-grained token: this repository with Issues read; classic token: the repo scope) or remove it from github.repos: %w", ref, st, err)
	}
	if err != nil {
		return fmt.Errorf("read repository %s: %w", ref, err)
	}
	return nil
}

// issueName is "OWNER/NAME#N" of an issue as GitHub answered it (from its repository_url,
// else its html_url).
func issueName(is *gh.Issue) string {
	if _, repo, ok := strings.Cut(is.GetRepositoryURL(), "/repos/"); ok && repo != "" {
		return ExternalID(repo, is.GetNumber())
	}
	if u := is.GetHTMLURL(); u != "" {
		return u
	}
	return fmt.Sprintf("issue #%d of another repository", is.GetNumber())
}
