package github

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/pipeline/tools"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/worktree"
)

// Syncer runs the GitHub side of a night: a scan every Poll (intake, cancellation of
// closed issues, then publishing), and a watch of running tickets every Watch.
type Syncer struct {
	Intake    *Intake
	Publisher *Publisher // nil when github.output.enabled is false
	Poll      time.Duration
	Watch     time.Duration
	Logger    *slog.Logger
	// Lock, when set, is held around each intake scan and each publishing pass, so that of
	// several nodes on one database one at a time lists issues and publishes (a pull
	// request or a comment is looked up before it is made: two nodes at once could both
	// make it).
	Lock func(ctx context.Context) (unlock func(), err error)
	// AfterIntake, when set, runs after a scan that added tickets, before publishing (the
	// daemon links duplicates there, so that an issue polled in the night is not worked
	// twice).
	AfterIntake func(ctx context.Context)

	health opHealth // each operation's last pass and failures, for /metrics
}

// LockName is the store lock the Syncer holds (store.Lock).
const LockName = "github"

// locked runs fn under Lock; an error taking it skips fn and is returned.
func (s *Syncer) locked(ctx context.Context, fn func()) error {
	if s.Lock == nil {
		fn()
		return nil
	}
	unlock, err := s.Lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	fn()
	return nil
}

// New builds the Syncer for cfg.GitHub; nil, nil when no GitHub repository is configured.
// getenv reads the token from the variable github.token_env names.
func New(cfg config.Config, getenv func(string) string, st *store.Store, log *slog.Logger, opts ClientOptions) (*Syncer, error) {
	g := cfg.GitHub
	if len(g.Repos) == 0 {
		return nil, nil
	}
	token := getenv(g.TokenEnv)
	if token == "" {
		return nil, fmt.Errorf("github: environment variable %s is empty; export a token with issues (and, for output, contents and pull requests) access, or set github.token_env", g.TokenEnv)
	}
	opts.BaseURL, opts.Token, opts.Reserve = g.APIURL, token, g.MinRateRemaining
	client, err := NewClient(opts)
	if err != nil {
		return nil, err
	}
	log = log.With("component", "github")
	s := &Syncer{Poll: g.Poll, Watch: g.Watch, Logger: log,
		Lock: func(ctx context.Context) (func(), error) { return st.Lock(ctx, LockName) },
		Intake: &Intake{Client: client, Store: st, Allow: g.AllowAuthors, Priorities: cfg.Priorities,
			MaxAttempts: cfg.Night.MaxAttempts, Logger: log}}
	var targets []Target
	for _, r := range g.Repos {
		s.Intake.Repos = append(s.Intake.Repos, Repo{Name: r.Name, Local: r.Repo, Label: r.Label})
		targets = append(targets, Target{Name: r.Name, Dir: cfg.Repos[r.Repo].Path, PushURL: r.PushURL, Base: r.Base})
	}
	if g.Output.Enabled {
		repos := map[string]config.Repo{}
		for _, r := range cfg.Repos {
			repos[r.Path] = r
		}
		s.Publisher = &Publisher{Client: client, Store: st, Targets: targets, Token: token, Logger: log,
			MaxRounds: cfg.Review.MaxRounds, Allow: g.AllowAuthors, CIWatch: g.CI.Watch, CIStuckAfter: g.CI.StuckAfter,
			Push: func(ctx context.Context, dir, remoteURL, branch, token string) error {
				if err := refuseProtected(ctx, repos[dir], dir, branch); err != nil {
					return err
				}
				return worktree.Push(ctx, dir, remoteURL, branch, token)
			},
			Branches: func(ctx context.Context, dir string, id int64) ([]string, error) {
				return worktree.Branches(ctx, dir, fmt.Sprintf("ticketd/%d-", id))
			}}
	}
	return s, nil
}

// Scan runs one intake scan, and publishing when enabled. Errors are logged, not returned:
// GitHub being down must not stop a night that has local work.
func (s *Syncer) Scan(ctx context.Context) ScanReport {
	var rep ScanReport
	var err error
	if lerr := s.locked(ctx, func() { rep, err = s.Intake.Scan(ctx) }); lerr != nil {
		err = lerr
	}
	s.logErr("scan", err)
	if len(rep.Added) > 0 && s.AfterIntake != nil {
		s.AfterIntake(ctx)
	}
	if len(rep.Added) > 0 || len(rep.Cancelled) > 0 || len(rep.Answered) > 0 {
		s.Logger.Info("github intake", "listed", rep.Listed, "added", len(rep.Added), "cancelled", len(rep.Cancelled),
			"answered", len(rep.Answered), "ignored", len(rep.Ignored), "unchanged_pages", rep.Unchanged)
	}
	s.Publish(ctx)
	return rep
}

// Publish runs one publishing pass when output is enabled.
func (s *Syncer) Publish(ctx context.Context) {
	if s.Publisher == nil {
		return
	}
	var err, rerr, cerr error
	if lerr := s.locked(ctx, func() {
		_, err = s.Publisher.Publish(ctx)
		_, rerr = s.Publisher.ReviewRounds(ctx)
		if s.Publisher.CIWatch {
			cerr = s.Publisher.WatchCI(ctx)
		}
		// Housekeeping: a failure is logged, and the night's outcome does not turn on it.
		if _, perr := s.Publisher.PruneReleased(ctx); perr != nil && !errors.Is(perr, context.Canceled) {
			s.Logger.Warn("github prune released branches", "err", perr)
		}
	}); lerr != nil {
		err = lerr
	}
	s.logErr("publish", err)
	s.logErr("review rounds", rerr)
	if s.Publisher.CIWatch {
		s.logErr("pull request checks", cerr)
	}
}

// RetryRefused makes the next publishing pass ask GitHub again at once for every write it
// refused for a reason a human must remove (held back until then, see Publisher.held):
// the daemon calls it when a night starts.
func (s *Syncer) RetryRefused() {
	if s.Publisher != nil {
		s.Publisher.RetryRefused()
	}
}

// Failing lists the GitHub operations (scan, publish, review rounds, pull request checks,
// watch) whose last pass failed for a reason other than a rate-limit pause, with its error:
// "publish: open draft pull request …". The night's outcome says them, for an operator
// who reads ticketctl, the status page or the exit code rather than /metrics.
func (s *Syncer) Failing() []string { return s.health.failingNow() }

// logErr logs how a pass of op ended and notes it for /metrics.
func (s *Syncer) logErr(op string, err error) {
	switch {
	case errors.Is(err, context.Canceled):
	case err == nil:
		s.health.note(op, nil)
	case rateLimited(err):
		s.Logger.Warn("github "+op+" paused", "err", err)
	default:
		s.health.note(op, err)
		// A refusal held back (see refusals) was logged when it started; while it goes on,
		// each pass re-reports it at debug level rather than an error at every poll.
		fresh, held := splitHeld(err)
		if len(fresh) > 0 {
			s.Logger.Error("github "+op, "err", errors.Join(fresh...))
		}
		if len(held) > 0 {
			s.Logger.Debug("github "+op+" still refused", "err", errors.Join(held...))
		}
	}
}

// Run scans every Poll and watches running tickets every Watch until ctx ends.
func (s *Syncer) Run(ctx context.Context) {
	poll := time.NewTicker(s.Poll)
	defer poll.Stop()
	watch := time.NewTicker(s.Watch)
	defer watch.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-poll.C:
			s.Scan(ctx)
		case <-watch.C:
			_, err := s.Intake.Watch(ctx)
			s.logErr("watch", err)
		}
	}
}

// refuseProtected refuses to publish a branch that changes a path that runs elsewhere (see
// tools.ProtectedPath) which repo does not allow, read from git's objects since its base_ref.
func refuseProtected(ctx context.Context, repo config.Repo, dir, branch string) error {
	base := repo.BaseRef
	if base == "" {
		base = "HEAD"
	}
	paths, err := worktree.BranchChanges(ctx, dir, base, branch)
	if err != nil {
		return fmt.Errorf("branch %s not pushed: its changes could not be checked for protected paths: %w", branch, err)
	}
	files, err := worktree.FilesAt(dir, base)
	if err != nil {
		return fmt.Errorf("branch %s not pushed: its changes could not be checked for protected paths (the files at %s for its own tool packages): %w", branch, base, err)
	}
	if bad := tools.ProtectedIn(paths, tools.AllowAtBase(repo.AllowPaths, files)); len(bad) > 0 {
		return fmt.Errorf("branch %s not pushed: it changes files that run elsewhere (%s); allow them with repos.<name>.allow_paths if they belong in the fix", branch, strings.Join(bad, "; "))
	}
	return nil
}
