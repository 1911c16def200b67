package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/pipeline/discover"
	"github.com/ticketd/ticketd/pipeline/envsetup"
	"github.com/ticketd/ticketd/pipeline/sandbox"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/worktree"
)

// EnvsDir is the folder under the workspace that holds the repositories' environments.
const EnvsDir = "envs"

// repoEnvs are the repositories' environments of a night: built (or found cached) once per
// repository, before its first ticket; a repository whose recipe fails is paused. Safe for
// concurrent use.
type repoEnvs struct {
	builder *envsetup.Builder
	st      *store.Store
	log     *slog.Logger
	// checks run the import probe; pauseRepo pauses a repository whose recipe failed.
	checks    pipeline.CheckRunner
	pauseRepo func(ctx context.Context, name, reason string)
	now       func() time.Time

	mu    sync.Mutex
	ready map[string]*envEntry
}

type envEntry struct {
	done chan struct{}
	env  envsetup.Env
	err  error
}

// newRepoEnvs builds environments in the checks' sandbox, under <workspace>/envs.
func newRepoEnvs(cfg config.Config, bwrap string, log *slog.Logger) *repoEnvs {
	user, _ := sandboxUser(cfg)
	var extra []string
	if root := sandbox.PyenvRoot(os.Environ()); root != "" && os.Getenv("PYENV_ROOT") == "" {
		extra = append(extra, "PYENV_ROOT="+root)
	}
	return &repoEnvs{log: log, now: time.Now, builder: &envsetup.Builder{
		Root: filepath.Join(cfg.Workspace, EnvsDir), Sandbox: cfg.Sandbox, Bwrap: bwrap, Hide: sandboxHide(cfg),
		ReadOnly: cfg.SandboxPaths, User: user, Deny: cfg.Credentials(), ExtraEnv: extra, Logger: log,
		Limits: checkLimits(cfg),
	}}
}

// repoEnv returns repo as tonight's checks run it: with its environment when it has a recipe
// (built from tree, which must still be untouched at the base commit, unless built already
// tonight). An error means the recipe failed, or the environment would make a check import
// the project from outside the worktree: the repository is then paused for the night, said
// where an operator looks, and no ticket is charged.
func (w *repoEnvs) repoEnv(ctx context.Context, name string, repo config.Repo, tree *worktree.Tree) (config.Repo, error) {
	if repo.Setup == nil || w == nil {
		return repo, nil
	}
	w.mu.Lock()
	if w.ready == nil {
		w.ready = map[string]*envEntry{}
	}
	e, ok := w.ready[name]
	if !ok {
		e = &envEntry{done: make(chan struct{})}
		w.ready[name] = e
	}
	w.mu.Unlock()
	if !ok {
		e.env, e.err = w.buildEnv(ctx, name, repo, tree)
		if e.err != nil && ctx.Err() != nil {
			w.mu.Lock()
			delete(w.ready, name) // cut short by a shutdown: nobody's fault
			w.mu.Unlock()
		}
		close(e.done)
	} else {
		select {
		case <-e.done:
		case <-ctx.Done():
			return repo, context.Cause(ctx)
		}
	}
	if e.err != nil {
		return repo, e.err
	}
	return withEnv(repo, e.env), nil
}

// withEnv runs repo's checks in env: its interpreter unless python: names one.
func withEnv(repo config.Repo, env envsetup.Env) config.Repo {
	checks := make([]validate.Check, len(repo.Checks))
	for i, c := range repo.Checks {
		c.EnvDir = env.Dir
		if c.Python == "" {
			c.Python = env.Python
		}
		checks[i] = c
	}
	repo.Checks = checks
	return repo
}

// buildEnv builds (or finds) the environment, proves that a check imports the project from
// the worktree, and records the outcome; a failure pauses the repository.
func (w *repoEnvs) buildEnv(ctx context.Context, name string, repo config.Repo, tree *worktree.Tree) (envsetup.Env, error) {
	files, err := worktree.FilesAt(tree.RepoPath, tree.BaseCommit)
	if err != nil {
		return envsetup.Env{}, fmt.Errorf("environment of %s: list the base commit's files: %w", name, err)
	}
	needPython := false
	for _, c := range repo.Checks {
		needPython = needPython || c.Python == ""
	}
	start := time.Now()
	env, err := w.builder.Ensure(ctx, envsetup.Request{Repo: name, Source: tree.Dir, Files: files, Recipe: *repo.Setup, NeedPython: needPython})
	if err == nil {
		err = w.probeEnv(ctx, repo, env, tree)
	}
	if err != nil {
		if ctx.Err() != nil {
			return env, context.Cause(ctx)
		}
		w.envFailed(ctx, name, env, err)
		return env, err
	}
	w.log.Info("environment ready", "repo", name, "key", env.Key, "cached", env.Cached, "why", env.Why,
		"built_at", env.BuiltAt.UTC().Format(time.RFC3339), "setup_s", seconds(env.Took), "start_s", seconds(time.Since(start)),
		"inputs", strings.Join(env.Inputs, " "))
	if err := w.st.RecordEnvironment(context.WithoutCancel(ctx), store.Environment{Repo: name, Key: env.Key, OK: true,
		Cached: env.Cached, BuiltAt: env.BuiltAt, Took: env.Took}); err != nil {
		w.log.Warn("record environment", "repo", name, "err", err)
	}
	return env, nil
}

// errOutsideWorktree is an environment whose path hooks win over the worktree.
var errOutsideWorktree = errors.New("a check would import the project from outside the worktree")

// probeEnv runs the import probe (envsetup.ProbeCheck) in tree the way the checks run: the
// code a check imports must be the worktree's, never the checkout the environment was built
// from.
func (w *repoEnvs) probeEnv(ctx context.Context, repo config.Repo, env envsetup.Env, tree *worktree.Tree) error {
	pkgs := envsetup.Packages(tree.Dir)
	if len(pkgs) == 0 || len(repo.Checks) == 0 {
		return nil
	}
	probe := envsetup.ProbeCheck(withEnv(repo, env).Checks[0], pkgs)
	res := w.checks.Run(ctx, tree.Dir, []validate.Check{probe})
	if len(res) == 1 && res[0].Passed {
		return nil
	}
	out := ""
	if len(res) == 1 {
		out = strings.TrimSpace(res[0].Summary + "\n" + res[0].Output)
	}
	return &envsetup.BuildError{Repo: env.Repo, Key: env.Key, Output: out,
		Err: fmt.Errorf("%w (environment %s, packages %s): an editable install's path hook wins over the worktree, or the package is not importable; see the probe's output", errOutsideWorktree, env.Key, strings.Join(pkgs, ", "))}
}

// envFailed records a failed environment and pauses the repository for the night.
func (w *repoEnvs) envFailed(ctx context.Context, name string, env envsetup.Env, err error) {
	bg := context.WithoutCancel(ctx)
	var be *envsetup.BuildError
	output, took, key := "", time.Duration(0), env.Key
	if errors.As(err, &be) {
		output, took, key = be.Output, be.Took, be.Key
	}
	if rerr := w.st.RecordEnvironment(bg, store.Environment{Repo: name, Key: key, OK: false, Took: took,
		Error: err.Error(), Output: output}); rerr != nil {
		w.log.Warn("record environment", "repo", name, "err", rerr)
	}
	w.log.Error("environment setup failed: the repository is paused for the night, no ticket charged", "repo", name, "err", err,
		"last_lines", lastLines(output, 15))
	w.pauseRepo(bg, name, fmt.Sprintf("%v\n%s", err, indent(lastLines(output, 15))))
}

// envNote is the baseline note's line about the repository's environment, "" without one.
func (w *repoEnvs) envNote(name string) string {
	if w == nil {
		return ""
	}
	w.mu.Lock()
	e, ok := w.ready[name]
	w.mu.Unlock()
	if !ok {
		return ""
	}
	select {
	case <-e.done:
	default:
		return ""
	}
	if e.err != nil {
		return ""
	}
	env := e.env
	if env.Cached {
		return fmt.Sprintf("environment %s (repos.%s.setup): cached, built %s ago in %s; a cold rebuild comes after verify_every",
			env.Key, name, w.now().Sub(env.BuiltAt).Round(time.Minute), env.Took.Round(time.Second))
	}
	return fmt.Sprintf("environment %s (repos.%s.setup): built tonight in %s (%s)", env.Key, name, env.Took.Round(time.Second), env.Why)
}

// recipeHints points the hint of each problem that is a module missing from the checks'
// interpreter at the repository's recipe when that interpreter is its environment's: with
// a recipe, neither python: nor a .venv in the clone is where the checks' Python comes
// from, so "install it there" is the only advice that works. Other problems pass as they are.
func recipeHints(name string, repo config.Repo, problems []validate.Problem) []validate.Problem {
	if repo.Setup == nil || repo.Python != "" {
		return problems
	}
	out := slices.Clone(problems)
	for i, p := range out {
		if p.Missing == "" || strings.Contains(p.Missing, ".") {
			// A missing submodule (pkg._speed) is most often the project's own compiled
			// extension, which the worktree shadows: no install fixes that.
			continue
		}
		if !inRecipeEnv(repo, p.Check) {
			continue // the check names its own interpreter
		}
		pkg := strings.ReplaceAll(p.Missing, "_", "-")
		out[i].Hint = fmt.Sprintf("the checks run in the environment of repos.%s.setup, which lacks the module %s: install the package that provides it there, with a command like "+
			"`\"$ENV/bin/pip\" install %s` (add --no-index --find-links WHEELHOUSE when installing offline), the project's test extra "+
			"(`-e '.[test]'`) or the requirements file that names it; the changed recipe is a new key, so the next night rebuilds the environment "+
			"(if %s is the project's own package in a folder that nothing puts on the path, set env: {PYTHONPATH: <that folder>} on the check instead)",
			name, p.Missing, pkg, p.Missing)
	}
	return out
}

// inRecipeEnv reports whether check runs with the interpreter of repo's recipe: the
// repository has one, and neither it nor the check names another python.
func inRecipeEnv(repo config.Repo, check string) bool {
	if repo.Setup == nil || repo.Python != "" {
		return false
	}
	j := slices.IndexFunc(repo.Checks, func(c validate.Check) bool { return c.Name == check })
	return j < 0 || repo.Checks[j].Python == ""
}

// dependencyHints tells, in the hint of each problem that is a module missing from the
// checks' interpreter, where the project lists the distribution that provides it (deps, read
// at the base) and the pip command that installs what lists it. The generic advice, `pip
// install -e '.[test]'`, installs nothing more when the project keeps its test dependencies
// in a dependency group or a requirements file (invoke: pytest-relaxed in [dependency-groups]
// dev), and the operator would install, rerun and still find the repository paused.
// Problems whose module no list names pass as they are.
func dependencyHints(name string, repo config.Repo, deps discover.Dependencies, problems []validate.Problem) []validate.Problem {
	var out []validate.Problem
	for i, p := range problems {
		found := deps.For(p.Missing)
		if len(found) == 0 {
			continue
		}
		if out == nil {
			out = slices.Clone(problems)
		}
		d := found[0]
		listed := fmt.Sprintf("the project lists it as %q in %s", d.Requirement, d.Where())
		if len(found) > 1 {
			var also []string
			for _, o := range found[1:] {
				also = append(also, o.Where())
			}
			listed += " (also in " + strings.Join(also, ", ") + ")"
		}
		groupNote := ""
		if d.Kind == "group" {
			groupNote = " (pip 25.1 or later reads --group)"
		}
		switch {
		case inRecipeEnv(repo, p.Check):
			out[i].Hint = fmt.Sprintf("the checks run in the environment of repos.%s.setup, which lacks the module %s; %s: add `\"$ENV/bin/pip\" %s`%s to the recipe (with --no-index --find-links WHEELHOUSE when installing offline); the changed recipe is a new key, so the next night rebuilds the environment",
				name, p.Missing, listed, d.Install(), groupNote)
		default:
			python := cmp.Or(checkPython(repo, p.Check), repo.Python)
			where := fmt.Sprintf("into a virtualenv in the repository (python3 -m venv .venv && .venv/bin/pip %s%s; ticketd then runs the checks with .venv/bin/python)", d.Install(), groupNote)
			if python != "" {
				where = fmt.Sprintf("into the checks' interpreter, from the repository's root (%s -m pip %s%s)", python, d.Install(), groupNote)
			}
			out[i].Hint = fmt.Sprintf("the tests cannot import %s; %s: install that %s", p.Missing, listed, where)
		}
	}
	if out == nil {
		return problems
	}
	return out
}

// checkPython is the python the repository's check names, "" when it names none.
func checkPython(repo config.Repo, check string) string {
	if j := slices.IndexFunc(repo.Checks, func(c validate.Check) bool { return c.Name == check }); j >= 0 {
		return repo.Checks[j].Python
	}
	return ""
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

var _ pipeline.CheckRunner = (*validate.Runner)(nil)
