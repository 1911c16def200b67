package github

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	gh "github.com/google/go-github/v89/github"

	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/worktree"
)

// Blame is what re-running a red check's failing tests told, test by test.
type Blame struct {
	AtBase []string // fail at the base commit too: the base's break, not the fix's
	Flaky  []string // failed on the pull request, passed when re-run with the fix
	Caused []string // pass at the base, fail with the fix
	// Evidence is the re-runs' summary, for the comment or the round's note.
	Evidence string
}

// BlameFunc re-runs tests of ticket t at the base commit and at the fix (the commit head of
// its branch) in the daemon's sandbox.
type BlameFunc func(ctx context.Context, t store.Ticket, head string, tests []string) (Blame, error)

// Bounds on the logs read for one red head.
const (
	maxLogRuns  = 3
	maxLogBytes = 2 << 20
)

// ciMarker identifies ticketd's comment on a red check of commit head.
func ciMarker(ticketID int64, head string) string {
	return fmt.Sprintf("<!-- ticketd:ci ticket=%d head=%s -->", ticketID, head)
}

// WatchCI reads the checks of every done ticket's pull request head and records their state
// (store.SetPullCI) for the morning. A head's red checks are judged once: their failing
// tests re-run at the base (Blame) either ask a round (the fix caused them) or get one
// comment saying they are not the fix's (failing at the base too, or flaky).
func (p *Publisher) WatchCI(ctx context.Context) error {
	tickets, err := p.doneTickets(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, t := range tickets {
		if err := p.watchCI(ctx, t); err != nil {
			errs = append(errs, fmt.Errorf("checks of ticket %d (%s): %w", t.ID, t.ExternalID, err))
			if errors.Is(err, ErrRateLimited) {
				break
			}
		}
	}
	return errors.Join(errs...)
}

func (p *Publisher) watchCI(ctx context.Context, t store.Ticket) error {
	num, err := p.pullOf(ctx, t.ID)
	if err != nil || num == 0 {
		return err
	}
	tg, ref, _, err := p.target(t.ExternalID)
	if err != nil {
		return err
	}
	head, err := p.head(ctx, tg.Dir, t.Branch)
	if err != nil {
		return err
	}
	w, err := p.Store.PullWatchOf(ctx, t.ID)
	if err != nil {
		return err
	}
	if w.CIHead == head && (w.CIState == store.CIGreen || w.CIState == store.CIRed) {
		return nil // settled for this head; a new push moves the head
	}
	runs, combined, err := readChecks(ctx, p.Client, ref, head)
	if err != nil {
		return err
	}
	v := classifyChecks(runs, combined, p.now().Sub(t.FinishedAt), p.stuckAfter())
	if v.State == store.CIRed {
		v.Detail = p.judgeRed(ctx, t, ref, num, head, v)
	}
	if w.CIHead == head && w.CIState == v.State && w.CIDetail == v.Detail {
		return nil
	}
	p.logger().Info("github pull request checks", "ticket", t.ID, "pull", num, "head", head, "state", v.State, "detail", v.Detail)
	return p.Store.SetPullCI(ctx, t.ID, head, v.State, v.Detail)
}

// judgeRed maps the red runs' logs to tests, re-runs them at the base, and acts: a round for
// a break the fix caused, one comment otherwise. It returns the detail to record.
func (p *Publisher) judgeRed(ctx context.Context, t store.Ticket, ref repoRef, num int, head string, v ciVerdict) string {
	var tests []string
	for i, r := range v.Failed {
		if i == maxLogRuns {
			break
		}
		log, err := p.jobLog(ctx, ref, r.GetID())
		if err != nil {
			p.logger().Warn("github job log", "ticket", t.ID, "run", r.GetID(), "err", err)
			continue
		}
		for _, id := range failedTests(log) {
			if !strings.Contains(strings.Join(tests, "\n"), id) {
				tests = append(tests, id)
			}
		}
	}
	if len(tests) == 0 {
		return v.Detail + "; no failing test could be read from the logs: look at the check's page"
	}
	if p.Blame == nil {
		return v.Detail + "; failing tests " + strings.Join(tests, ", ") + " not re-run (no sandbox here)"
	}
	b, err := p.Blame(ctx, t, head, tests)
	if err != nil {
		p.logger().Warn("github red check: re-run at the base", "ticket", t.ID, "err", err)
		return v.Detail + "; re-running " + strings.Join(tests, ", ") + " at the base failed: " + err.Error()
	}
	if len(b.Caused) > 0 {
		note := fmt.Sprintf("The pull request's checks failed (%s). These tests pass at the base commit and fail with the fix: %s.\n%s",
			strings.TrimPrefix(v.Detail, "failed: "), strings.Join(b.Caused, ", "), b.Evidence)
		_, err := p.Store.Revise(ctx, t.ID, "github:checks", store.RoundAsk{Source: store.RoundCI, Note: note, MaxRounds: p.maxRounds()})
		switch {
		case errors.Is(err, store.ErrRoundsSpent):
			return v.Detail + "; caused by the fix, rounds spent: escalated"
		case err != nil:
			return v.Detail + "; caused by the fix, but no round could be asked: " + err.Error()
		}
		return v.Detail + "; caused by the fix (" + strings.Join(b.Caused, ", ") + "): a fix round is queued"
	}
	if err := p.ciComment(ctx, t, ref, num, head, v, b); err != nil {
		return v.Detail + "; not caused by the fix, but the comment failed: " + err.Error()
	}
	return v.Detail + "; not caused by the fix (fails at the base or is flaky): commented on the pull request"
}

// ciComment says once per head, with the evidence, that a red check is not the fix's.
func (p *Publisher) ciComment(ctx context.Context, t store.Ticket, ref repoRef, num int, head string, v ciVerdict, b Blame) error {
	mark := ciMarker(t.ID, head)
	if _, found, err := findComment(ctx, p.Client, ref, num, mark); err != nil || found {
		return err
	}
	var s strings.Builder
	fmt.Fprintf(&s, "The red check on %s is unrelated to this change (%s).\n\n", shortSHA(head), defuse(strings.TrimPrefix(v.Detail, "failed: ")))
	if len(b.AtBase) > 0 {
		fmt.Fprintf(&s, "- fail at the base commit too: %s\n", defuse(strings.Join(b.AtBase, ", ")))
	}
	if len(b.Flaky) > 0 {
		fmt.Fprintf(&s, "- passed when re-run with the fix (flaky): %s\n", defuse(strings.Join(b.Flaky, ", ")))
	}
	if ev := strings.TrimSpace(b.Evidence); ev != "" {
		fmt.Fprintf(&s, "\nEvidence (re-run by ticketd in its sandbox):\n\n```\n%s\n```\n", strings.ReplaceAll(truncateRunes(ev, 3000), "```", "'''"))
	}
	s.WriteString("\nNo fix round was started for it.\n\n" + mark + "\n")
	c, resp, err := p.Client.api.Issues.CreateComment(ctx, ref.owner, ref.name, num, &gh.IssueComment{Body: gh.Ptr(s.String())})
	p.Client.observe(resp, err)
	if err != nil {
		return fmt.Errorf("comment on pull request %d: %w", num, err)
	}
	p.logger().Info("github red check is not the fix's: commented", "ticket", t.ID, "url", c.GetHTMLURL())
	return nil
}

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

func (p *Publisher) stuckAfter() time.Duration {
	if p.CIStuckAfter > 0 {
		return p.CIStuckAfter
	}
	return 30 * time.Minute
}

func (p *Publisher) now() time.Time {
	if p.Client != nil && p.Client.now != nil {
		return p.Client.now()
	}
	return time.Now()
}

// head is the commit of branch in the clone at dir: what was pushed.
func (p *Publisher) head(ctx context.Context, dir, branch string) (string, error) {
	if p.Head != nil {
		return p.Head(ctx, dir, branch)
	}
	return worktree.BranchHead(ctx, dir, branch)
}

// maxCheckPages bounds the pages of check runs (and of statuses) read for one commit: 1000
// of each is more than any matrix ticketd's fixes meet.
const maxCheckPages = 10

// readChecks reads every check run and commit status of commit head, a page of 100 at a
// time (conditional GETs: free when nothing changed). A red check may be on any page; past
// maxCheckPages the unread rest counts as still running, so the verdict is never green on
// checks not read.
func readChecks(ctx context.Context, c *Client, ref repoRef, head string) ([]*gh.CheckRun, *gh.CombinedStatus, error) {
	var runs []*gh.CheckRun
	ropts := &gh.ListCheckRunsOptions{ListOptions: gh.ListOptions{PerPage: 100}}
	for page := 1; ; page++ {
		if err := c.ready(false); err != nil {
			return nil, nil, err
		}
		res, resp, err := c.api.Checks.ListCheckRunsForRef(ctx, ref.owner, ref.name, head, ropts)
		c.observe(resp, err)
		if err != nil {
			return nil, nil, fmt.Errorf("check runs of %s@%s (page %d): %w", ref, shortSHA(head), page, err)
		}
		if res != nil { // a body of null, or none, lists no run
			runs = append(runs, res.CheckRuns...)
		}
		if resp.NextPage == 0 {
			break
		}
		if page == maxCheckPages {
			runs = append(runs, unread(fmt.Sprintf("%d check runs past the first %d (not read)", res.GetTotal()-len(runs), len(runs))))
			break
		}
		ropts.ListOptions.Page = resp.NextPage
	}
	var combined *gh.CombinedStatus
	sopts := &gh.ListOptions{PerPage: 100}
	for page := 1; ; page++ {
		if err := c.ready(false); err != nil {
			return nil, nil, err
		}
		st, resp, err := c.api.Repositories.GetCombinedStatus(ctx, ref.owner, ref.name, head, sopts)
		c.observe(resp, err)
		if err != nil {
			return nil, nil, fmt.Errorf("statuses of %s@%s (page %d): %w", ref, shortSHA(head), page, err)
		}
		switch {
		case st == nil: // a body of null, or none, lists no status
		case combined == nil:
			combined = st
		default:
			combined.Statuses = append(combined.Statuses, st.Statuses...)
		}
		if resp.NextPage == 0 {
			break
		}
		if page == maxCheckPages {
			runs = append(runs, unread(fmt.Sprintf("statuses past the first %d (not read)", len(combined.GetStatuses()))))
			break
		}
		sopts.Page = resp.NextPage
	}
	return runs, combined, nil
}

// unread stands for checks not read: still running to classifyChecks.
func unread(name string) *gh.CheckRun {
	return &gh.CheckRun{Name: gh.Ptr(name), Status: gh.Ptr("in_progress")}
}

// jobLog reads the plain-text log of an Actions job (a check run's id is its job's), its
// last maxLogBytes: GitHub answers with a redirect to a short-lived URL that wants no token.
func (p *Publisher) jobLog(ctx context.Context, ref repoRef, id int64) (string, error) {
	if err := p.Client.ready(false); err != nil {
		return "", err
	}
	u, resp, err := p.Client.api.Actions.GetWorkflowJobLogs(ctx, ref.owner, ref.name, id, 1)
	p.Client.observe(resp, err)
	if err != nil {
		return "", fmt.Errorf("log of job %d: %w", id, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", err
	}
	lr, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		return "", fmt.Errorf("log of job %d: %w", id, err)
	}
	defer lr.Body.Close()
	if lr.StatusCode != http.StatusOK {
		return "", fmt.Errorf("log of job %d: %s", id, lr.Status)
	}
	data, err := tail(lr.Body, maxLogBytes) // pytest's summary is at the end
	if err != nil {
		return "", fmt.Errorf("log of job %d: %w", id, err)
	}
	return string(data), nil
}

// tail reads r to its end and returns its last n bytes, holding at most about 2n at once:
// a job log may run to hundreds of megabytes.
func tail(r io.Reader, n int) ([]byte, error) {
	buf := make([]byte, 0, 2*n+64<<10)
	chunk := make([]byte, 64<<10)
	for {
		k, err := r.Read(chunk)
		buf = append(buf, chunk[:k]...)
		if len(buf) > 2*n {
			buf = append(buf[:0], buf[len(buf)-n:]...)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if len(buf) > n {
		buf = buf[len(buf)-n:]
	}
	return buf, nil
}
