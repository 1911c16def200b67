package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/daemon/github"
	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/worktree"
)

// A human can accept what the gate will not: a fix that changes behaviour a test pins, or one
// that needs a new fixture, ends escalated with its change kept on a branch (so does a
// complete change nothing showed to fix the bug: unverified). Accept publishes that kept
// change as the ticket's fix, as a done ticket's is published: the fix branch
// ticketd/<id>-<slug> (-r<n> in a requeued round), the patch, the report, the push to
// push_remote and, for a GitHub ticket, the draft pull request, recorded as accepted by the
// operator.
//
// It happens exactly once, also when the process dies half-way. The steps are ordered so that
// each is idempotent and the one decision, the store's escalated → done with its "accepted"
// event, comes after the branch and the result files are in place and before anything leaves
// the machine: the branch is a deterministic commit (worktree.Republish), the files are
// rewritten from the same inputs, the push is skipped once the ticket's history says it
// happened, and the pull request is looked up before it is opened. Run again after a crash,
// Accept finds the ticket done and accepted and finishes what is left.

// AcceptOptions are what Accept needs besides the store and the configuration.
type AcceptOptions struct {
	Who    string // the operator, as the ticket's history names them
	Logger *slog.Logger
	// PullRequest opens (or finds) a done GitHub ticket's draft pull request
	// (github.Publisher.PullRequest); nil leaves it to the daemon's next GitHub pass.
	PullRequest func(ctx context.Context, t store.Ticket) (string, error)
	Now         func() time.Time
}

// AcceptResult is what Accept did.
type AcceptResult struct {
	ID        int64  `json:"id"`
	Branch    string `json:"branch"`           // the fix branch
	From      string `json:"from,omitempty"`   // the kept branch it came from
	Commit    string `json:"commit,omitempty"` // the fix commit
	ResultDir string `json:"result_dir"`
	By        string `json:"accepted_by"`
	// Resumed says the ticket was already accepted (by By): this run finished what was left.
	Resumed     bool   `json:"resumed"`
	Pushed      string `json:"pushed,omitempty"` // the remote the branch is on, "" when none
	PullRequest string `json:"pull_request,omitempty"`
	// Pending says what is left for later (a push that failed, a pull request the daemon opens).
	Pending []string `json:"pending,omitempty"`
}

// ErrNothingToAccept means the ticket holds no kept change a human could accept.
var ErrNothingToAccept = fmt.Errorf("nothing to accept: %w", store.ErrInvalidTransition)

// Accept publishes escalated ticket id's kept change as its fix, or finishes an accept that
// was interrupted; see the comment above.
func Accept(ctx context.Context, st *store.Store, cfg config.Config, id int64, opts AcceptOptions) (AcceptResult, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	res := AcceptResult{ID: id}
	t, err := st.Get(ctx, id)
	if err != nil {
		return res, fmt.Errorf("accept ticket %d: %w", id, err)
	}
	repo, ok := cfg.Repos[t.Repo]
	if !ok {
		return res, fmt.Errorf("accept ticket %d: repository %q is not under repos in %s", id, t.Repo, cfg.File)
	}
	switch t.State {
	case store.StateEscalated:
		if err := publishKept(ctx, st, cfg, repo, t, opts.Who, now, &res); err != nil {
			return res, err
		}
		err := st.Accept(ctx, id, opts.Who, store.Accepted{Branch: res.Branch, ResultDir: res.ResultDir, From: res.From})
		if err != nil && !errors.Is(err, store.ErrInvalidTransition) {
			return res, err
		}
		if t, err = st.Get(ctx, id); err != nil {
			return res, fmt.Errorf("accept ticket %d: %w", id, err)
		}
		if t.State != store.StateDone {
			return res, fmt.Errorf("accept ticket %d: it became %s meanwhile; nothing was published", id, t.State)
		}
	case store.StateDone:
		res.Resumed = true
	default:
		return res, fmt.Errorf("%w: ticket %d is %s: only an escalated ticket's kept change can be accepted (ticketctl escalations lists them)", ErrNothingToAccept, id, t.State)
	}
	if res.By, err = st.AcceptedBy(ctx, id); err != nil {
		return res, err
	}
	if res.By == "" {
		return res, fmt.Errorf("%w: ticket %d is done by its own attempt, not by an accept", ErrNothingToAccept, id)
	}
	res.Branch, res.ResultDir = t.Branch, t.ResultDir
	log = log.With("ticket", id, "branch", t.Branch)
	finishPublish(ctx, st, repo, t, opts, log, &res)
	return res, nil
}

// publishKept puts the kept change of escalated ticket t on its fix branch and writes its
// patch and report: everything before the store's decision.
func publishKept(ctx context.Context, st *store.Store, cfg config.Config, repo config.Repo, t store.Ticket, who string, now func() time.Time, res *AcceptResult) error {
	res.From, res.Branch = t.Branch, workBranch(t) // a later round's fix never rewrites an earlier round's
	if res.From == "" || res.From == res.Branch {
		return fmt.Errorf("%w: ticket %d kept no change on a branch (its report says why); requeue it instead: ticketctl requeue %d", ErrNothingToAccept, t.ID, t.ID)
	}
	if err := refuseProtected(ctx, repo, res.From); err != nil {
		return fmt.Errorf("accept ticket %d: %s is not published: %w", t.ID, res.From, err)
	}
	var err error
	res.Commit, err = worktree.Republish(ctx, repo.Path, res.From, res.Branch, acceptMessage(t))
	if err != nil {
		return fmt.Errorf("accept ticket %d: %w", t.ID, err)
	}
	patch, err := worktree.CommitPatch(ctx, repo.Path, res.Commit)
	if err != nil {
		return fmt.Errorf("accept ticket %d: %w", t.ID, err)
	}
	res.ResultDir = filepath.Join(cfg.Output, strconv.FormatInt(t.ID, 10))
	if err := os.MkdirAll(res.ResultDir, 0o755); err != nil {
		return fmt.Errorf("accept ticket %d: create result folder: %w", t.ID, err)
	}
	escalation, err := escalationReport(ctx, st, t.ID, res.ResultDir)
	if err != nil {
		return fmt.Errorf("accept ticket %d: %w", t.ID, err)
	}
	report := acceptedReport(t, res, who, now(), patch, escalation)
	for _, f := range []struct {
		name string
		data []byte
	}{{"patch", []byte(capText(patch, MaxPatchBytes, "the whole change is on the ticket's branch"))}, {"report.md", []byte(capText(report, MaxReportBytes, "see patch beside it"))}} {
		if err := os.WriteFile(filepath.Join(res.ResultDir, f.name), f.data, 0o644); err != nil {
			return fmt.Errorf("accept ticket %d: write %s: %w", t.ID, f.name, err)
		}
		if err := st.SaveArtifact(ctx, t.ID, f.name, f.data); err != nil {
			return fmt.Errorf("accept ticket %d: keep %s: %w", t.ID, f.name, err)
		}
	}
	return nil
}

// escalationReport is the report of the escalation being accepted, kept once as
// escalation-report.md (so a second run builds the same accepted report from it).
func escalationReport(ctx context.Context, st *store.Store, id int64, dir string) (string, error) {
	const name = "escalation-report.md"
	if data, err := st.Artifact(ctx, id, name); err == nil {
		return string(data), nil
	}
	data, err := st.Artifact(ctx, id, "report.md")
	if err != nil {
		data, err = os.ReadFile(filepath.Join(dir, "report.md"))
	}
	if err != nil {
		data = []byte("(the escalation's report was not found)\n")
	}
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
		return "", fmt.Errorf("write %s: %w", name, err)
	}
	if err := st.SaveArtifact(ctx, id, name, data); err != nil {
		return "", fmt.Errorf("keep %s: %w", name, err)
	}
	return string(data), nil
}

// acceptMessage is the fix commit's message for an accepted change, as a done ticket's but
// saying a human accepted it. It depends on the ticket alone, so a second run makes the same
// commit.
func acceptMessage(t store.Ticket) string {
	title := github.Defuse(strings.Join(strings.Fields(t.Title), " "))
	if _, n, err := github.ParseExternalID(t.ExternalID); t.Source == github.Source && err == nil {
		title = fmt.Sprintf("Fixes #%d: %s", n, title)
	}
	body := github.Defuse("ticketd did not ship this change by itself; an operator accepted it (ticketctl accept). Why it was not shipped: " + oneLine(t.Reason))
	trailer := github.Defuse(fmt.Sprintf("ticketd ticket %d (%s %s).", t.ID, t.Source, t.ExternalID))
	return fmt.Sprintf("%s\n\n%s\n\n%s", title, body, trailer)
}

// acceptedReport is report.md of an accepted ticket: what was accepted, by whom, and why
// the gate had refused it, then the escalation's report.
func acceptedReport(t store.Ticket, res *AcceptResult, who string, at time.Time, patch, escalation string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Ticket %d: %s\n\n**Fixed: accepted by %s** (%s); ticketd had not shipped it by itself.\n\n", t.ID, t.Title, who, at.UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "Why ticketd did not ship it: %s\n\n", oneLine(t.Reason))
	fmt.Fprintf(&b, "Branch `%s`, published from the kept `%s`. Review it with:\n\n    git log -p %s^..%s\n\n", res.Branch, res.From, res.Branch, res.Branch)
	fmt.Fprintf(&b, "The change, %s:\n\n%s\n\n", diffStat(patch), pipeline.Fence("diff", clipLines(patch, 300)))
	b.WriteString("---\n\nThe escalation's report:\n\n")
	b.WriteString(escalation)
	return b.String()
}

// finishPublish pushes done, accepted ticket t's branch to the repository's push_remote and
// opens its draft pull request, each unless its history or GitHub says it happened.
func finishPublish(ctx context.Context, st *store.Store, repo config.Repo, t store.Ticket, opts AcceptOptions, log *slog.Logger, res *AcceptResult) {
	if repo.PushRemote != "" {
		evs, err := st.Events(ctx, t.ID)
		pushed := err == nil && slices.ContainsFunc(evs, func(e store.Event) bool {
			return e.Kind == store.EventNote && strings.HasPrefix(e.Reason, pushedNote+t.Branch+" ")
		})
		if !pushed {
			d := &Daemon{Store: st, Logger: log}
			pushed = d.pushFix(ctx, log, repo, t.ID, t.Branch)
		}
		if pushed {
			res.Pushed = repo.PushRemote
		} else {
			res.Pending = append(res.Pending, fmt.Sprintf("push %s to %s (see the ticket's notes; the daemon's next night retries it)", t.Branch, repo.PushRemote))
		}
	}
	if t.Source != github.Source {
		return
	}
	if opts.PullRequest == nil {
		res.Pending = append(res.Pending, "the draft pull request: the daemon opens it at its next GitHub pass (github.output)")
		return
	}
	url, err := opts.PullRequest(ctx, t)
	if err != nil {
		log.Warn("draft pull request of an accepted ticket", "err", err)
		res.Pending = append(res.Pending, fmt.Sprintf("the draft pull request (%v): the daemon retries at its next GitHub pass", err))
		return
	}
	res.PullRequest = url
}
