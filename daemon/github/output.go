package github

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	gh "github.com/google/go-github/v89/github"

	"github.com/ticketd/ticketd/pipeline/secret"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/worktree"
)

// Target is where a GitHub repository's fixes are pushed from and to.
type Target struct {
	Name    string // OWNER/NAME
	Dir     string // the local clone the fix branches live in
	PushURL string
	Base    string // pull request base; "" = the repository's default branch
}

// Publisher turns finished GitHub tickets into GitHub writes: a done ticket's branch is
// pushed and a draft pull request "Fixes #N" opened with the report as its body; an
// escalated ticket gets one comment with the reason and its attempt branches; a needs_info
// ticket gets one comment with its maker's question. Each write
// is looked up on GitHub first (pull requests by head branch, comments by a hidden marker)
// and recorded in the store after, so neither a restart nor a crash between the two
// duplicates it.
type Publisher struct {
	Client  *Client
	Store   *store.Store
	Targets []Target
	Token   string // for git push; the API client holds its own copy
	// Push defaults to worktree.Push; tests may replace it.
	Push func(ctx context.Context, dir, remoteURL, branch, token string) error
	// Branches lists a ticket's attempt branches in dir (nil: only the ticket's own
	// branch); New uses worktree.Branches. They are pushed and named in the comment.
	Branches func(ctx context.Context, dir string, ticketID int64) ([]string, error)
	Logger   *slog.Logger
	// MaxRounds is review.max_rounds (default 3); Allow is github.allow_authors, whose
	// reviews ask rounds without write access.
	MaxRounds int
	Allow     []string
	// Blame re-runs a red check's failing tests at the base and at the fix (the daemon sets
	// it for the night); nil: red checks are recorded, not judged. CIStuckAfter is
	// github.ci.stuck_after (default 30m). Head reads a branch's commit in a clone (default
	// worktree.BranchHead).
	Blame        BlameFunc
	CIStuckAfter time.Duration
	CIWatch      bool
	Head         func(ctx context.Context, dir, branch string) (string, error)

	mu       sync.Mutex
	bases    map[string]string // repo -> default branch
	authors  *authorGate       // who may ask a round, made on first use
	refused  refusals          // writes GitHub refused, held back for a while
	prunedAt time.Time         // the last PruneReleased pass that ended well
}

// RetryRefused forgets the writes GitHub refused for a reason a human must remove: the
// next pass asks again at once rather than when their backoff ends. A night starts so.
func (p *Publisher) RetryRefused() { p.refused.reset() }

// held runs fn, the write of ticket id named what, unless GitHub refused it lately for a
// reason a human must remove (needsHuman): then it returns that refusal again until its
// backoff ends.
func (p *Publisher) held(what string, id int64, fn func() (string, error)) (string, error) {
	return p.refused.try(fmt.Sprintf("%s %d", what, id), p.Client.now, p.logger(), fn)
}

// PublishReport is what one Publish did.
type PublishReport struct {
	PullRequests []string // URLs opened or found
	Comments     []string
	Questions    []string // question comments posted or found
}

// publishBatch bounds the tickets one Publish handles, so a backlog cannot burn the API
// budget in one pass; the rest follow at the next poll.
const publishBatch = 20

// Publish handles every done or escalated GitHub ticket not yet published.
func (p *Publisher) Publish(ctx context.Context) (PublishReport, error) {
	var rep PublishReport
	var errs []error
	done, err := p.Store.Unpublished(ctx, Source, store.StateDone, store.OutputPullRequest, publishBatch)
	if err != nil {
		return rep, err
	}
	for _, t := range done {
		if l, dup, err := p.closedDuplicate(ctx, t); err != nil || dup {
			if err == nil {
				var url string
				if url, err = p.held("duplicate comment", t.ID, func() (string, error) { return p.duplicateComment(ctx, t, l) }); err == nil {
					rep.Comments = append(rep.Comments, url)
					continue
				}
			}
			errs = append(errs, fmt.Errorf("duplicate comment for ticket %d (%s): %w", t.ID, t.ExternalID, err))
			if errors.Is(err, ErrRateLimited) {
				return rep, errors.Join(errs...)
			}
			continue
		}
		url, err := p.held("pull request", t.ID, func() (string, error) { return p.pullRequest(ctx, t) })
		if err != nil {
			errs = append(errs, fmt.Errorf("pull request for ticket %d (%s): %w", t.ID, t.ExternalID, err))
			if errors.Is(err, ErrRateLimited) {
				return rep, errors.Join(errs...)
			}
			continue
		}
		rep.PullRequests = append(rep.PullRequests, url)
	}
	asked, err := p.questions(ctx)
	rep.Questions = asked
	if err != nil {
		errs = append(errs, err)
		if errors.Is(err, ErrRateLimited) {
			return rep, errors.Join(errs...)
		}
	}
	esc, err := p.Store.Unpublished(ctx, Source, store.StateEscalated, store.OutputComment, publishBatch)
	if err != nil {
		return rep, errors.Join(append(errs, err)...)
	}
	for _, t := range esc {
		url, err := p.held("escalation comment", t.ID, func() (string, error) { return p.comment(ctx, t) })
		if err != nil {
			errs = append(errs, fmt.Errorf("escalation comment for ticket %d (%s): %w", t.ID, t.ExternalID, err))
			if errors.Is(err, ErrRateLimited) {
				break
			}
			continue
		}
		rep.Comments = append(rep.Comments, url)
	}
	return rep, errors.Join(errs...)
}

func (p *Publisher) logger() *slog.Logger {
	if p.Logger != nil {
		return p.Logger
	}
	return slog.Default()
}

func (p *Publisher) target(ext string) (Target, repoRef, int, error) {
	name, num, err := ParseExternalID(ext)
	if err != nil {
		return Target{}, repoRef{}, 0, err
	}
	for _, tg := range p.Targets {
		if strings.EqualFold(tg.Name, name) {
			ref, err := parseRepo(tg.Name)
			return tg, ref, num, err
		}
	}
	return Target{}, repoRef{}, 0, fmt.Errorf("repository %s is not under github.repos in the config", name)
}

// PullRequestTitle is the title of the draft pull request for issue number: "Fixes #N: "
// and the issue's title, defused.
func PullRequestTitle(number int, issueTitle string) string {
	title := fmt.Sprintf("Fixes #%d: %s", number, Defuse(strings.Join(strings.Fields(issueTitle), " ")))
	return truncateRunes(title, 200)
}

// marker is the hidden line that identifies ticketd's pull request body or comment.
func marker(kind string, ticketID int64) string {
	return fmt.Sprintf("<!-- ticketd:%s ticket=%d -->", kind, ticketID)
}

// PullRequest pushes done ticket t's branch and opens its draft pull request, or finds the one
// already open for that branch, and records it: what Publish does for each done ticket, for
// one ticket now (an accepted escalation).
func (p *Publisher) PullRequest(ctx context.Context, t store.Ticket) (string, error) {
	return p.pullRequest(ctx, t)
}

func (p *Publisher) pullRequest(ctx context.Context, t store.Ticket) (string, error) {
	tg, ref, num, err := p.target(t.ExternalID)
	if err != nil {
		return "", err
	}
	if t.Branch == "" {
		return "", errors.New("ticket is done but names no branch")
	}
	push := p.Push
	if push == nil {
		push = worktree.Push
	}
	if err := push(ctx, tg.Dir, tg.PushURL, t.Branch, p.Token); err != nil {
		return "", err
	}
	if err := p.Client.ready(false); err != nil {
		return "", err
	}
	head := ref.owner + ":" + t.Branch
	existing, resp, err := p.Client.api.PullRequests.List(ctx, ref.owner, ref.name,
		&gh.PullRequestListOptions{State: "all", Head: head, ListOptions: gh.ListOptions{PerPage: 10}})
	p.Client.observe(resp, err)
	if err != nil {
		return "", fmt.Errorf("look up pull requests from %s: %w", head, err)
	}
	if len(existing) > 0 {
		url := existing[0].GetHTMLURL()
		p.logger().Info("github pull request already open", "ticket", t.ID, "url", url)
		return url, p.Store.RecordOutput(ctx, t.ID, store.OutputPullRequest, url)
	}
	base, err := p.base(ctx, tg, ref)
	if err != nil {
		return "", err
	}
	body := fmt.Sprintf("Fixes #%d\n\n%s\n\n%s\n", num, clipReport(defuse(secret.Redact(readReport(t)))), marker("pr", t.ID))
	newPR := &gh.NewPullRequest{Title: gh.Ptr(PullRequestTitle(num, t.Title)), Head: gh.Ptr(t.Branch), Base: gh.Ptr(base),
		Body: gh.Ptr(body), Draft: gh.Ptr(true)}
	pr, resp, err := p.Client.api.PullRequests.Create(ctx, ref.owner, ref.name, newPR)
	p.Client.observe(resp, err)
	if unprocessable(err, "draft pull requests are not supported") {
		// Private repositories on GitHub Free and Pro have no drafts: a regular pull request,
		// saying so, rather than none at all.
		newPR.Draft = gh.Ptr(false)
		newPR.Body = gh.Ptr(noDraftNote + body)
		pr, resp, err = p.Client.api.PullRequests.Create(ctx, ref.owner, ref.name, newPR)
		p.Client.observe(resp, err)
	}
	if unprocessable(err, "a pull request already exists") {
		// Opened meanwhile (another node, or a listing that lagged the create): it is done.
		return p.recordExisting(ctx, t, ref, head, err)
	}
	if err != nil {
		return "", fmt.Errorf("open draft pull request %s -> %s%s: %w", t.Branch, base, pullHint(err, base), err)
	}
	url := pr.GetHTMLURL()
	p.logger().Info("github draft pull request opened", "ticket", t.ID, "url", url, "draft", newPR.GetDraft())
	return url, p.Store.RecordOutput(ctx, t.ID, store.OutputPullRequest, url)
}

// noDraftNote heads the body of a pull request opened where drafts are not available.
const noDraftNote = "_Opened as a regular pull request because this repository does not support drafts: review it as you would a draft._\n\n"

// recordExisting records the pull request GitHub says already exists for head, looked up
// again; cause is GitHub's refusal, returned when the lookup still finds none.
func (p *Publisher) recordExisting(ctx context.Context, t store.Ticket, ref repoRef, head string, cause error) (string, error) {
	existing, resp, err := p.Client.api.PullRequests.List(ctx, ref.owner, ref.name,
		&gh.PullRequestListOptions{State: "all", Head: head, ListOptions: gh.ListOptions{PerPage: 10}})
	p.Client.observe(resp, err)
	if err != nil {
		return "", fmt.Errorf("look up the pull request GitHub says exists from %s: %w", head, err)
	}
	if len(existing) == 0 {
		return "", fmt.Errorf("open draft pull request from %s: GitHub says one exists but lists none yet (looked up again at the next poll): %w", head, cause)
	}
	url := existing[0].GetHTMLURL()
	p.logger().Info("github pull request already open", "ticket", t.ID, "url", url)
	return url, p.Store.RecordOutput(ctx, t.ID, store.OutputPullRequest, url)
}

// unprocessable reports whether err is GitHub's 422 whose message, or one of whose errors'
// messages, contains text (lower case).
func unprocessable(err error, text string) bool {
	var er *gh.ErrorResponse
	if !errors.As(err, &er) || er.Response == nil || er.Response.StatusCode != http.StatusUnprocessableEntity {
		return false
	}
	if strings.Contains(strings.ToLower(er.Message), text) {
		return true
	}
	return slices.ContainsFunc(er.Errors, func(e gh.Error) bool { return strings.Contains(strings.ToLower(e.Message), text) })
}

// pullHint says what to fix when GitHub refuses to open the pull request, prefixed "; ".
func pullHint(err error, base string) string {
	if unprocessable(err, "no commits between") {
		return "; the branch has no commits beyond " + base + ": the fix may be on " + base + " already, or github.repos[].base names the wrong branch"
	}
	return writeHint(err, "open pull requests", "Pull requests read and write")
}

func (p *Publisher) base(ctx context.Context, tg Target, ref repoRef) (string, error) {
	if tg.Base != "" {
		return tg.Base, nil
	}
	p.mu.Lock()
	b := p.bases[tg.Name]
	p.mu.Unlock()
	if b != "" {
		return b, nil
	}
	r, resp, err := p.Client.api.Repositories.Get(ctx, ref.owner, ref.name)
	p.Client.observe(resp, err)
	if err != nil {
		return "", fmt.Errorf("read default branch of %s (or set github.repos[].base): %w", ref, err)
	}
	b = r.GetDefaultBranch()
	if b == "" {
		return "", fmt.Errorf("%s reports no default branch; set github.repos[].base", ref)
	}
	p.mu.Lock()
	if p.bases == nil {
		p.bases = map[string]string{}
	}
	p.bases[tg.Name] = b
	p.mu.Unlock()
	return b, nil
}

func (p *Publisher) comment(ctx context.Context, t store.Ticket) (string, error) {
	tg, ref, num, err := p.target(t.ExternalID)
	if err != nil {
		return "", err
	}
	mark := marker("escalation", t.ID)
	if err := p.Client.ready(false); err != nil {
		return "", err
	}
	url, err := p.postedComment(ctx, t, ref, num, mark)
	if err != nil {
		return "", err
	}
	if url != "" {
		return url, p.Store.RecordOutput(ctx, t.ID, store.OutputComment, url)
	}
	branches, err := p.pushAttempts(ctx, tg, t)
	if err != nil {
		return "", err
	}
	c, resp, err := p.Client.api.Issues.CreateComment(ctx, ref.owner, ref.name, num,
		&gh.IssueComment{Body: gh.Ptr(EscalationComment(t, branches, mark))})
	p.Client.observe(resp, err)
	if err != nil {
		return "", fmt.Errorf("comment on %s%s: %w", t.ExternalID, writeHint(err, "comment on issues", "Issues read and write"), err)
	}
	p.logger().Info("github escalation comment posted", "ticket", t.ID, "url", c.GetHTMLURL())
	return c.GetHTMLURL(), p.Store.RecordOutput(ctx, t.ID, store.OutputComment, c.GetHTMLURL())
}

// postedComment is the URL of the escalation comment ticketd already posted on the issue
// (found by its marker, in ticketd's own comments only), "" when there is none: a restart
// between posting and recording must not post it twice.
func (p *Publisher) postedComment(ctx context.Context, t store.Ticket, ref repoRef, num int, mark string) (string, error) {
	opts := &gh.IssueListCommentsOptions{ListOptions: gh.ListOptions{PerPage: 100}}
	for {
		cs, resp, err := p.Client.api.Issues.ListComments(ctx, ref.owner, ref.name, num, opts)
		p.Client.observe(resp, err)
		if err != nil {
			return "", fmt.Errorf("look up comments on %s: %w", t.ExternalID, err)
		}
		for _, c := range cs {
			if !strings.Contains(c.GetBody(), mark) {
				continue
			}
			if own, err := p.Client.ownComment(ctx, c); err != nil {
				return "", err
			} else if own {
				return c.GetHTMLURL(), nil
			}
		}
		if resp.NextPage == 0 {
			return "", nil
		}
		opts.ListOptions.Page = resp.NextPage
	}
}

// pushAttempts pushes the ticket's attempt branches, so that the comment can name them
// for a human to pick up, and returns them.
func (p *Publisher) pushAttempts(ctx context.Context, tg Target, t store.Ticket) ([]string, error) {
	var branches []string
	if p.Branches != nil {
		var err error
		if branches, err = p.Branches(ctx, tg.Dir, t.ID); err != nil {
			return nil, err
		}
	}
	if t.Branch != "" && !contains(branches, t.Branch) {
		branches = append(branches, t.Branch)
	}
	push := p.Push
	if push == nil {
		push = worktree.Push
	}
	for _, b := range branches {
		if err := push(ctx, tg.Dir, tg.PushURL, b, p.Token); err != nil {
			return nil, err
		}
	}
	return branches, nil
}

// EscalationComment is the comment posted on an escalated ticket's issue: the short why,
// the attempt branches, and the hidden marker that makes it findable after a restart.
func EscalationComment(t store.Ticket, branches []string, mark string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ticketd could not fix this issue on its own after %d attempt(s) and hands it to a human.\n\n", t.Attempts)
	why := truncateRunes(strings.Join(strings.Fields(t.Reason), " "), 500)
	if why == "" {
		why = "no reason recorded"
	}
	fmt.Fprintf(&b, "**Why it stopped:** %s\n\n", defuse(secret.Redact(why)))
	if len(branches) > 0 {
		b.WriteString("**Attempt branches:**")
		for _, br := range branches {
			fmt.Fprintf(&b, " `%s`", br)
		}
		b.WriteString("\n\n")
	}
	fmt.Fprintf(&b, "ticketd ticket %d; the full report is in its results folder on the ticketd host.\n\n%s\n", t.ID, mark)
	return b.String()
}

// maxReport keeps the body under GitHub's 65,536-character limit with room for the rest.
const maxReport = 60000

func readReport(t store.Ticket) string {
	if t.ResultDir == "" {
		return "(no report was written)"
	}
	data, err := os.ReadFile(filepath.Join(t.ResultDir, "report.md"))
	if err != nil {
		return fmt.Sprintf("(report unreadable: %v)", err)
	}
	s := strings.ToValidUTF8(string(data), "\uFFFD")
	if utf8.RuneCountInString(s) > maxReport {
		s = truncateRunes(s, maxReport) + "\n\n(report truncated)"
	}
	return s
}

// clipReport bounds a report again after defusing and redaction, which lengthen it (a
// zero-width joiner for each mention or reference): GitHub refuses the whole body past its
// limit.
func clipReport(s string) string {
	const note = "\n\n(report truncated)"
	if utf8.RuneCountInString(s) <= maxReport+utf8.RuneCountInString(note) {
		return s
	}
	return truncateRunes(s, maxReport) + note
}

var (
	// plainMentionRe is a mention in text outside code spans (defuseMentions). A login is
	// letters, digits and single hyphens inside, never a trailing one: in "@a-@b" the
	// mention is "@a", and the hyphen after it leads "@b", a mention of its own.
	plainMentionRe = regexp.MustCompile(`(^|[^\w])@([A-Za-z0-9](?:-?[A-Za-z0-9])*)`)
	// closeRe is a closing keyword before a reference in any form GitHub reads: #N,
	// OWNER/NAME#N, GH-N, or an issue or pull request URL.
	closeRe = regexp.MustCompile(`(?i)\b(close[sd]?|fix(?:e[sd])?|resolve[sd]?)(\s*:?\s+)((?:[\w.-]+/[\w.-]+)?#\d|gh-\d|https?://|www\.)`)
	// refRe is an issue reference, #N or OWNER/NAME#N (not an HTML entity such as &#39;).
	refRe = regexp.MustCompile(`(^|[^&])#(\d)`)
	ghRe  = regexp.MustCompile(`(?i)\b(gh-)(\d)`)
	// issueURLRe is a link to an issue, pull request or discussion, which GitHub turns into a
	// cross-reference (and, after a closing keyword, a close) like #N.
	issueURLRe = regexp.MustCompile(`(?i)\b(https?|www)(://[^\s/]+|\.[^\s/]+)(/[^\s/]+/[^\s/]+/(?:issues|pulls?|discussions)/\d)`)
)

// Defuse keeps text ticketd did not write (issue text, model output, a report quoting both)
// from acting on GitHub: an @mention would notify whoever it names, a reference (#12,
// acme/app#12, GH-12, an issue URL) would put this pull request on that issue's timeline, and
// "fixes #12" in any of those forms would close it when merged. A zero-width joiner breaks
// each without changing what a reader sees. ticketd's own "Fixes #N" is added after.
func Defuse(s string) string {
	s = closeRe.ReplaceAllString(s, "$1\u200d$2$3")
	s = issueURLRe.ReplaceAllString(s, "$1\u200d$2$3")
	s = ghRe.ReplaceAllString(s, "$1\u200d$2")
	s = defuseRefs(s)
	return defuseMentions(s)
}

// defuseMentions breaks every @mention outside a code span. A mention inside a closed span
// (`@name`) notifies no one and is kept as written; after an unclosed backtick it is plain
// text to GitHub, and notifies, so it is broken like any other.
func defuseMentions(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		start, end := nextCodeSpan(s)
		b.WriteString(plainMentionRe.ReplaceAllString(s[:start], "$1@\u200d$2"))
		b.WriteString(s[start:end])
		s = s[end:]
	}
	return b.String()
}

// nextCodeSpan finds the first closed code span in s, CommonMark's way: a run of n backticks
// closed by the next run of exactly n. It returns where it starts and ends; with none, len(s)
// twice.
func nextCodeSpan(s string) (start, end int) {
	for i := 0; i < len(s); {
		if s[i] != '`' {
			i++
			continue
		}
		n := runOf(s, i)
		for j := i + n; j < len(s); {
			if s[j] != '`' {
				j++
				continue
			}
			m := runOf(s, j)
			if m == n {
				return i, j + m
			}
			j += m
		}
		i += n // unclosed: its backticks are literal text
	}
	return len(s), len(s)
}

// runOf is the length of the run of backticks at s[i].
func runOf(s string, i int) int {
	n := 0
	for i+n < len(s) && s[i+n] == '`' {
		n++
	}
	return n
}

// defuseRefs puts a zero-width joiner after every '#' before a digit, except in an HTML
// entity (&#39;); refRe cannot do it, as its matches would overlap in "#1#2".
func defuseRefs(s string) string {
	if !refRe.MatchString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteByte(s[i])
		if s[i] == '#' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9' && (i == 0 || s[i-1] != '&') {
			b.WriteString("\u200d")
		}
	}
	return b.String()
}

func defuse(s string) string { return Defuse(s) }

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n])
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
