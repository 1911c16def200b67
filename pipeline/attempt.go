// Package pipeline runs one attempt at one ticket inside a prepared worktree: triage (once per
// ticket), the maker loop with its tools, the validator gate, the checker and the judge. It
// returns an Outcome; what happens to the ticket and the branch is the caller's business.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"github.com/ticketd/ticketd/pipeline/discover"
	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/pipeline/tools"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/store"
)

// Chatter is the model access the pipeline needs; *model.Client implements it.
type Chatter interface {
	Chat(ctx context.Context, req model.Request) (model.Response, error)
}

// CheckRunner runs the configured validators in a directory; *validate.Runner implements it.
type CheckRunner interface {
	Run(ctx context.Context, dir string, checks []validate.Check) []validate.Result
}

// Recorder keeps the attempt's tool calls and notes; *store.Store implements it.
type Recorder interface {
	RecordToolCall(ctx context.Context, c store.ToolCall) (int64, error)
	RecordReview(ctx context.Context, r store.Review) error
}

var (
	_ Chatter     = (*model.Client)(nil)
	_ CheckRunner = (*validate.Runner)(nil)
	_ Recorder    = (*store.Store)(nil)
)

// Ticket is what the pipeline knows of the ticket it works on.
type Ticket struct {
	ID      int64
	Attempt int
	Title   string
	Body    string
	Labels  []string
	Repo    string
	// Triage is the triage JSON cached on the ticket by an earlier attempt ("" if none).
	Triage string
	// Questions are the questions earlier attempts asked a human (ask_human), in order,
	// with their answers; every role sees them with the ticket.
	Questions []QA
	// QuestionsLeft is how many more questions the maker may ask on this ticket
	// (budget.max_questions less those asked); 0 refuses ask_human.
	QuestionsLeft int
	// Notes are what operators said when they requeued the ticket, oldest first; every
	// role sees them with the ticket.
	Notes []string
	// Unverified is the previous attempt, when it ended unverified: this one is told what
	// was missing and must add a test first; nil otherwise.
	Unverified *PriorUnverified
	// Round is the round this attempt works, when the ticket's fix was revised (a review,
	// a note, a red check): the work starts from the fix; nil otherwise.
	Round *Round
}

// PriorUnverified is an earlier attempt whose change passed the checks without anything
// showing it fixes the bug.
type PriorUnverified struct {
	Attempt int
	Reason  string
	Patch   string // its change, as the attempt left it
}

// QA is one question the maker asked a human, and the answer it got ("" while unanswered).
type QA struct {
	Question string
	Answer   string
	By       string // who answered, e.g. "ticketctl:alice" or "github:octocat"
}

// Budget bounds one attempt. Hitting a bound stops the attempt cleanly; zero means no bound.
type Budget struct {
	MaxSteps   int           // maker model calls
	MaxTokens  int64         // prompt + completion tokens over all roles
	WallClock  time.Duration // whole attempt, checks included
	MaxDollars float64       // model spend over all roles; calls of unknown cost count 0
}

// Job is one attempt's input.
type Job struct {
	Ticket  Ticket
	Dir     string // the worktree
	RepoMap string // file map of the repository, shared by its tickets
	// Instructions is the repository's instructions block (Instructions.Block, read at the
	// base commit), shared by its tickets; "" when it has none.
	Instructions string
	Checks       []validate.Check  // the gate
	Baseline     []validate.Result // the same checks at the base commit
	Diff         func(context.Context) (string, error)
	// Workspace is the maker's view of Dir, made by the caller so that it can build the fix
	// from the files the tools wrote (Workspace.Written) and Diff from the same; nil means
	// the attempt makes its own.
	Workspace *tools.Workspace
	// Changed lists the paths that differ from the base commit (worktree.Tree.Changed); nil
	// means they are read from the diff's headers. The first tier of the checks uses them.
	Changed func(context.Context) ([]string, error)
	Budget  Budget
	// SaveTriage stores a fresh triage on the ticket at once, so a later attempt reuses it.
	SaveTriage func(ctx context.Context, triageJSON string) error
	// DiskFault, when set, is told of a tool call that failed for the machine's storage (a
	// disk full, read-only, I/O errors: diskfault.Is) before the model would read it as a
	// mistake of its own: the caller ends the attempt as the machine's fault.
	DiskFault func(err error)
	// Tests is where the repository keeps its tests (discover.Read at the base commit, with
	// the checks as the baseline ran them); nil means it is read from Dir.
	Tests *discover.Tests
	// Imports is the base commit's import graph, shared by the tickets of one repository
	// and base (validate.ScanBase); nil: each submit scans the whole worktree.
	Imports *validate.BaseImports
	// BaseFile reads a path as it is at the base commit (worktree.Tree.FileAtBase); found is
	// false when the path does not exist there. The evidence step uses it to run the new
	// tests against the code as it was before the change; nil means no test can be
	// reproduced at the base, so only verifications and base failures can show a fix works.
	BaseFile func(ctx context.Context, path string) (data []byte, found bool, err error)
	// AllowPaths are the protected paths the repository allows a fix to hold
	// (repos.<name>.allow_paths; see tools.ProtectedPath).
	AllowPaths []string
}

// Runner runs attempts. It is safe for concurrent use by several workers.
type Runner struct {
	Models   Chatter
	Checks   CheckRunner
	Recorder Recorder
	Logger   *slog.Logger
	Now      func() time.Time
	// Roles that are configured; triage, checker and judge are skipped when absent.
	Roles map[model.Role]bool
	// Layout is where the dynamic values go; the zero value is the cache-friendly layout.
	Layout Layout
	// ContextWindows is each role's context window in tokens; a missing role is assumed
	// to have DefaultContextWindow.
	ContextWindows map[model.Role]int
	// CompactAt is the share of the window at which the maker's conversation is
	// compacted; 0 means DefaultCompactAt.
	CompactAt float64
	// FlakeReruns is how often a newly failing test is re-run alone before it counts
	// against a fix; 0 means DefaultFlakeReruns, negative disables re-runs.
	FlakeReruns int
	// JudgeAdvisory makes the judge annotate the report without blocking (config judge:
	// advisory); the default gates.
	JudgeAdvisory bool
	// Reviewers are the checker's angles (config review.reviewers); nil means
	// correctness alone.
	Reviewers []Reviewer
	// NoQuestions says the maker may ask no human (budget.max_questions 0): ask_human is
	// neither offered nor described to it. The default offers it.
	NoQuestions bool
}

func (r *Runner) flakeReruns() int {
	switch {
	case r.FlakeReruns < 0:
		return 0
	case r.FlakeReruns == 0:
		return DefaultFlakeReruns
	}
	return r.FlakeReruns
}

// Layout says where a request's dynamic values (work directory, date) are placed.
type Layout int

const (
	// LayoutCacheFriendly: tool definitions and role instructions first (byte-identical
	// across tickets, workers and days), then the repository part, then the ticket with
	// its work directory and date. The default.
	LayoutCacheFriendly Layout = iota
	// LayoutDynamicFirst puts the work directory and date at the top of the system prompt,
	// as many agents do. It is kept to measure what the default saves: every worktree has
	// its own directory, so no two tickets share a cached prefix past the tool block.
	LayoutDynamicFirst
)

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Runner) logger() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.Default()
}

// errBudget marks a stop by a budget bound; the message says which. errDollars marks one
// by the attempt's dollars (spent, or projected to be by the next maker call): more money
// would let it go on (Outcome.NeedsBudget).
var (
	errBudget  = errors.New("budget exhausted")
	errDollars = errors.New("dollar limit")
)

// Run performs one attempt. It never panics on model nonsense and always returns an Outcome.
func (r *Runner) Run(ctx context.Context, job Job) Outcome {
	start := r.now()
	if job.Budget.WallClock > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, job.Budget.WallClock,
			fmt.Errorf("%w: wall clock of %s", errBudget, job.Budget.WallClock))
		defer cancel()
	}
	// A check configured without a time-out gets one from its run at the base commit.
	job.Checks = validate.BaselineTimeouts(job.Checks, job.Baseline)
	a := newAttempt(r, job, start)
	out := a.runSafely(ctx)
	out.Duration = r.now().Sub(start)
	out.Steps, out.Calls, out.Tokens, out.Dollars = a.spend.totals()
	out.Submits, out.Compactions = a.submits, a.compactions
	out.History, out.Flaky = a.jr.lines, a.jr.flaky
	out.ReviewRounds, out.DroppedFindings = a.board.rounds, a.board.dropped
	out.Arbitrations = a.board.arbitrations
	out.JudgeAdvisory = r.JudgeAdvisory
	out.FirstTierCaught, out.FirstTierTime = a.firstTierCaught, a.firstTierTime
	return out
}

// attempt is one Run: the maker's loop and what it has learnt so far. The stages a submit
// goes through (submit.go) are handed the change and the parts they need: the spend, the
// models (asker), the worktree's tests (testTree), the reviews (reviewBoard), the journal.
type attempt struct {
	r     *Runner
	job   Job
	log   *slog.Logger
	spend *spend // model calls against the budget
	ask   *asker
	jr    *journal // what was tried, for the report
	tree  *testTree
	board *reviewBoard

	submits     int
	compactions int
	tri         *Triage
	named       []string // tests the maker named on submit: they must pass
	issueTests  []string // tests the issue names that exist in the repository: they must pass
	// evidenceRefusals counts submits refused because nothing showed the fix works;
	// lastRefusal is the last refused submit, to stop an attempt that repeats itself.
	evidenceRefusals int
	lastRefusal      *refusal
	// findingRefusals counts submits refused for suppressions, test configuration or
	// protected paths (see findings.go).
	findingRefusals int
	// largeRefusals counts submits refused for a diff longer than the reviewers read.
	largeRefusals int
	// doctestRefusals counts submits refused because they edit doctests in the code the
	// base passed (see doctests.go).
	doctestRefusals int
	// verified caches the verification commands' runs on one diff (see evidence.go).
	verified *verificationRuns
	// firstTierCaught and firstTierTime feed Outcome's fields of the same names.
	firstTierCaught int
	firstTierTime   time.Duration
	// lastGate is the gate of the last submit, which an attempt stopped later reports.
	lastGate *Gate
	// refusedChecks is the change the checks last refused, while no other was checked since.
	refusedChecks *checkedChange
	// makerAnswers counts the maker's answers so far: an overflow before the first is the
	// endpoint's (its context cannot hold the opening prompt), not the conversation's.
	makerAnswers int
}

// newAttempt starts an attempt at job at start.
func newAttempt(r *Runner, job Job, start time.Time) *attempt {
	log := r.logger().With("ticket", job.Ticket.ID, "attempt", job.Ticket.Attempt)
	sp := newSpend(job.Budget, start, r.now)
	ask := &asker{models: r.Models, spend: sp, roles: r.Roles, layout: r.Layout, now: r.now, job: job, asking: !r.NoQuestions, checking: len(job.Checks) > 0}
	jr := &journal{}
	return &attempt{r: r, job: job, log: log, spend: sp, ask: ask, jr: jr, tree: newTestTree(job),
		board: &reviewBoard{ask: ask, jr: jr, log: log, rec: r.Recorder, reviewers: r.Reviewers,
			advisory: r.JudgeAdvisory, dir: job.Dir}}
}

// runSafely is a.run with a panic turned into the attempt's failure. A panic is a ticketd
// bug that this ticket's input (its issue, the model's answers, the repository) set off;
// uncaught, it ends the process and every attempt in flight with it, and the next night
// meets it again. Caught, the night goes on: the stack goes to the log and the reason asks
// for a report. Only the attempt's own goroutine is covered; the few it starts (parallel
// read-only tools) are its parsers' callers too, and stay as they are.
func (a *attempt) runSafely(ctx context.Context) (out Outcome) {
	defer func() {
		if p := recover(); p != nil {
			a.log.Error("ticketd bug: the attempt panicked; please report it with this stack", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			out = Outcome{Conclusion: Conclusion{Status: StatusFailed, Reason: fmt.Sprintf("ticketd bug: the attempt panicked (%v); the stack is in the daemon's log: please report it", p)}}
		}
	}()
	return a.run(ctx)
}

// stop turns an error that ended the attempt into an Outcome.
func (a *attempt) stop(ctx context.Context, out Outcome, err error) Outcome {
	out.Status, out.Reason, out.NeedsBudget, out.RetryAt = stopCause(ctx, err)
	if last := a.lastGate; last != nil && (out.Gate == nil || !last.Passed) {
		// The report says what the last submit's checks did, not an earlier review's.
		out.Gate, out.Checks = last, last.Results
		if !last.Passed {
			out.Evidence, out.Findings, out.Verdict = nil, nil, nil
		}
	}
	if f := (*model.Fault)(nil); (out.Status == StatusFailed || out.Status == StatusBudget) && errors.As(err, &f) && endpointSide(f, a.makerAnswers) {
		out.EndpointFault = f
	}
	a.jr.note("stopped: %s", out.Reason)
	return out
}

// stopCause classifies the error that ended an attempt: its status and reason, whether more
// dollars would let it go on, and when a rate limit lifts.
func stopCause(ctx context.Context, err error) (status Status, reason string, needsBudget bool, retryAt time.Time) {
	cause := context.Cause(ctx)
	switch {
	case errors.Is(err, errBudget):
		return StatusBudget, err.Error(), errors.Is(err, errDollars), time.Time{}
	case cause != nil && errors.Is(cause, errBudget):
		return StatusBudget, cause.Error(), false, time.Time{}
	case errors.Is(err, errContextFull):
		return StatusBudget, err.Error(), false, time.Time{}
	case ctx.Err() != nil:
		return StatusStopped, fmt.Sprintf("stopped: %v", cause), false, time.Time{}
	case errors.Is(err, model.ErrTransport):
		if f := (*model.Fault)(nil); errors.As(err, &f) {
			retryAt = f.ResetAt
		}
		return StatusTransport, err.Error(), false, retryAt
	}
	return StatusFailed, err.Error(), false, time.Time{}
}

// endpointSide says whether a failed request's fault would fail any ticket's request, given
// how many answers the maker had given.
func endpointSide(f *model.Fault, makerAnswers int) bool {
	switch f.Class {
	case model.ErrorClassRejected, model.ErrorClassBadResponse:
		return true
	case model.ErrorClassContextOverflow:
		return f.Role == model.RoleTriage || f.Role == model.RoleMaker && makerAnswers == 0
	}
	return false
}

func (a *attempt) run(ctx context.Context) Outcome {
	var out Outcome
	triage, err := triage(ctx, a.ask, a.jr)
	if err != nil {
		return a.stop(ctx, out, fmt.Errorf("triage: %w", err))
	}
	out.Triage, a.tri, a.board.tri = triage, triage, triage
	a.issueTests = IssueTests(a.job.Dir, a.job.Ticket.Title+"\n"+a.job.Ticket.Body, a.tree.tests())
	if len(a.issueTests) > 0 {
		a.jr.note("the issue names tests, which the fix must make pass: %s", strings.Join(a.issueTests, ", "))
	}
	return a.makerLoop(ctx, out)
}
