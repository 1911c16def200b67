package envsetup

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ticketd/ticketd/pipeline/sandbox"
	"github.com/ticketd/ticketd/pipeline/secret"
)

// outputCap is how many bytes of a build's output are kept (the tail).
const outputCap = 32 << 10

// Builder builds and caches environments under Root; it runs recipes in the same sandbox
// as the checks, with the network only when a recipe asks for it. Safe for concurrent use:
// one build per repository at a time.
type Builder struct {
	// Root is the cache folder (the daemon's <workspace>/envs): one folder per repository,
	// one environment per key in it, outside every worktree.
	Root string
	// Sandbox, Bwrap, Hide, ReadOnly, User, ScratchRoot and Limits are the checks'
	// (validate.Runner).
	Sandbox     sandbox.Mode
	Bwrap       string
	Hide        []string
	ReadOnly    []string
	User        sandbox.Identity
	ScratchRoot string
	Limits      sandbox.Limits
	// BaseEnv is the daemon's environment (nil: os.Environ()); Deny the variables that never
	// enter, even when a recipe's pass_env names them (ticketd's credentials).
	BaseEnv []string
	Deny    []string
	// ExtraEnv is NAME=value pairs set for every command (PYENV_ROOT).
	ExtraEnv []string
	Now      func() time.Time
	Logger   *slog.Logger

	mu    sync.Mutex
	repos map[string]*sync.Mutex
}

// Request is one repository's environment to have ready.
type Request struct {
	Repo string
	// Source is a clean checkout of the base commit and Files its tracked files
	// (worktree.FilesAt): the inputs are read there, and a copy of it is what the recipe
	// runs in. Source itself is never written.
	Source string
	Files  []string
	Recipe Recipe
	// NeedPython requires the recipe to leave $ENV/bin/python (the checks' interpreter
	// when the repository names no python:).
	NeedPython bool
}

// Env is a ready environment.
type Env struct {
	Repo, Key string
	// Dir is $ENV; Python is Dir/bin/python ("" when the recipe made none).
	Dir, Python string
	// BuiltAt and Took are when the environment was built and how long that took.
	BuiltAt time.Time
	Took    time.Duration
	// Cached is set when tonight reused an environment built earlier.
	Cached bool
	// Why says why it was built now ("" when cached).
	Why string
	// Inputs are the files that keyed it; Interpreter the $PYTHON it was made with.
	Inputs      []string
	Interpreter string
	Output      string // the build's output, tail (empty when cached)
}

// BuildError is a recipe that failed: the repository's problem, never a ticket's.
type BuildError struct {
	Repo, Key string
	// Step is the 1-based index of the command that failed (0: before any ran); Command it.
	Step     int
	Command  string
	ExitCode int
	TimedOut bool
	Output   string // tail, credentials redacted
	// Hint says what to do about a cause recognised in the output (a distribution missing
	// from the wheelhouse, no C compiler, the network off), "" when none was.
	Hint string
	Took time.Duration
	Err  error
}

func (e *BuildError) Error() string {
	what := fmt.Sprintf("environment setup of %s failed", e.Repo)
	switch {
	case e.TimedOut:
		what += fmt.Sprintf(" at command %d (%s): timed out after %s", e.Step, e.Command, e.Took.Round(time.Second))
	case e.Step > 0 && e.Err == nil:
		what += fmt.Sprintf(" at command %d (%s): exit %d", e.Step, e.Command, e.ExitCode)
	case e.Err != nil:
		what += ": " + e.Err.Error()
	}
	if e.Hint != "" {
		what += "; " + e.Hint
	}
	// `ticketd check` builds no environment: the way to try a recipe now is by hand.
	return what + "; fix repos." + e.Repo + ".setup (try its commands by hand in a fresh checkout of the base commit, with $ENV and $PYTHON set); " +
		"the next night builds it again"
}

func (e *BuildError) Unwrap() error { return e.Err }

// marker is what a finished build leaves beside its environment; an environment without one
// is an unfinished build and is never used.
type marker struct {
	Key         string    `json:"key"`
	BuiltAt     time.Time `json:"built_at"`
	TookMS      int64     `json:"took_ms"`
	UsedAt      time.Time `json:"used_at"`
	Python      string    `json:"python"`
	Interpreter string    `json:"interpreter"`
	Inputs      []string  `json:"inputs"`
}

// Ensure returns the repository's environment for req, building it when none is cached under
// its key, or when the cached one is older than the recipe's verify_every.
func (b *Builder) Ensure(ctx context.Context, req Request) (Env, error) {
	unlock := b.lock(req.Repo)
	defer unlock()
	r := req.Recipe
	interp, version, err := Interpreter(ctx, r.python())
	if err != nil {
		return Env{}, &BuildError{Repo: req.Repo, Err: err}
	}
	key, inputs, err := Key(r, req.Source, req.Files, interp+" "+version)
	if err != nil {
		return Env{}, &BuildError{Repo: req.Repo, Err: err}
	}
	repoDir := filepath.Join(b.Root, RepoDir(req.Repo))
	dir := filepath.Join(repoDir, key)
	now := b.now()
	env := Env{Repo: req.Repo, Key: key, Dir: dir, Inputs: inputs, Interpreter: interp}
	m, ok := readMarker(dir)
	switch {
	case ok && now.Sub(m.BuiltAt) < r.verifyEvery():
		m.UsedAt = now
		if err := writeMarker(dir, m); err != nil {
			b.logger().Warn("mark environment used", "repo", req.Repo, "key", key, "err", err)
		}
		env.BuiltAt, env.Took, env.Cached = m.BuiltAt, time.Duration(m.TookMS)*time.Millisecond, true
		env.Python = m.Python
		return env, nil
	case ok:
		env.Why = fmt.Sprintf("built %s ago, more than verify_every (%s): a cold rebuild, so a cache cannot hide a broken recipe",
			now.Sub(m.BuiltAt).Round(time.Minute), r.verifyEvery())
	case hasEnvs(repoDir):
		env.Why = "the recipe, its inputs or the interpreter changed (a new key)"
	default:
		env.Why = "first build"
	}
	return b.build(ctx, req, env)
}

// build makes env.Dir from scratch.
func (b *Builder) build(ctx context.Context, req Request, env Env) (Env, error) {
	r := req.Recipe
	fail := func(be *BuildError) (Env, error) {
		be.Repo, be.Key = req.Repo, env.Key
		be.Output = secret.Redact(be.Output)
		if be.Hint == "" && !be.TimedOut {
			be.Hint = diagnose(be.Output, r.Network)
		}
		// An unfinished environment is never used; leave no half of one behind.
		_ = removeEnv(env.Dir)
		return Env{}, be
	}
	if err := removeEnv(env.Dir); err != nil {
		return fail(&BuildError{Err: fmt.Errorf("remove the earlier build: %w", err)})
	}
	src := env.Dir + ".src"
	if err := os.MkdirAll(filepath.Dir(env.Dir), 0o755); err != nil {
		return fail(&BuildError{Err: fmt.Errorf("create %s: %w", filepath.Dir(env.Dir), err)})
	}
	defer os.RemoveAll(src)
	if err := copyFiles(req.Source, src, req.Files); err != nil {
		return fail(&BuildError{Err: fmt.Errorf("copy the base commit for setup: %w", err)})
	}
	if err := os.Mkdir(env.Dir, 0o755); err != nil {
		return fail(&BuildError{Err: fmt.Errorf("create %s: %w", env.Dir, err)})
	}
	root := os.Geteuid() == 0 && b.Sandbox != sandbox.ModeNone
	if root {
		// The recipe runs as the checks' user: it may write the environment, nothing else.
		if err := chownTree(env.Dir, b.User.OrDefault().UID, b.User.OrDefault().GID); err != nil {
			return fail(&BuildError{Err: err})
		}
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout())
	defer cancel()
	start := time.Now()
	var out bytes.Buffer
	for i, c := range r.Commands {
		fmt.Fprintf(&out, "$ %s\n", c)
		code, err := b.run(ctx, src, env, r, c, &out)
		if err != nil || code != 0 {
			return fail(&BuildError{Step: i + 1, Command: c, ExitCode: code, Took: time.Since(start), Output: tail(out.Bytes()),
				TimedOut: errors.Is(ctx.Err(), context.DeadlineExceeded), Err: err})
		}
	}
	env.Took = time.Since(start)
	if root {
		// Back to the daemon's user: no check, nor a later build's user, may change it.
		if err := chownTree(env.Dir, os.Geteuid(), os.Getegid()); err != nil {
			return fail(&BuildError{Err: err})
		}
	}
	if err := lockDown(env.Dir); err != nil {
		return fail(&BuildError{Err: err})
	}
	py := filepath.Join(env.Dir, "bin", "python")
	if fi, err := os.Stat(py); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
		env.Python = py
	} else if req.NeedPython {
		return fail(&BuildError{Step: len(r.Commands), Command: r.Commands[len(r.Commands)-1], Took: env.Took, Output: tail(out.Bytes()),
			Err: fmt.Errorf("the recipe left no $ENV/bin/python (%s) for the checks: make a virtualenv there (\"$PYTHON\" -m venv \"$ENV\"), or name an interpreter in the repository's python key", py)})
	}
	env.BuiltAt = b.now()
	env.Output = secret.Redact(tail(out.Bytes()))
	m := marker{Key: env.Key, BuiltAt: env.BuiltAt, TookMS: env.Took.Milliseconds(), UsedAt: env.BuiltAt, Python: env.Python,
		Interpreter: env.Interpreter, Inputs: env.Inputs}
	if err := writeMarker(env.Dir, m); err != nil {
		return fail(&BuildError{Err: fmt.Errorf("record the finished build: %w", err)})
	}
	return env, nil
}

// run runs one command of the recipe in the sandbox, writing its output to out.
func (b *Builder) run(ctx context.Context, dir string, env Env, r Recipe, command string, out *bytes.Buffer) (int, error) {
	scratch, err := sandbox.NewScratch(b.ScratchRoot)
	if err != nil {
		return -1, err
	}
	defer scratch.Remove()
	spec := sandbox.Spec{
		Mode: b.Sandbox, Bwrap: b.Bwrap, Dir: dir, Reports: scratch.Dir, Hide: b.Hide,
		ReadOnly: b.ReadOnly, Writable: []string{env.Dir}, Env: b.environ(env, r), User: b.User, Network: r.Network,
		Limits: b.Limits,
	}
	cmd, err := spec.Command(ctx, []string{"/bin/sh", "-c", command})
	if err != nil {
		return -1, err
	}
	w := &capped{buf: out}
	cmd.Stdout, cmd.Stderr = w, w
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // stragglers; ESRCH when none
	if why := sandbox.Stopped(cmd); why != "" {
		fmt.Fprintf(w, "ticketd: %s\n", why)
	}
	if errors.Is(err, exec.ErrWaitDelay) && ctx.Err() == nil {
		// Only without the sandbox: under bwrap the command's end ends its PID namespace.
		return -1, fmt.Errorf("command %q ended, but a process it started in the background still held its output open %s later "+
			"(a server or daemon): stop it before the command ends, or send its output elsewhere (> /dev/null 2>&1 &): %w", command, cmd.WaitDelay, err)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ctx.Err() == nil {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return -1, err
	}
	return 0, nil
}

// environ is a recipe command's environment: the checks' allowlist, the recipe's pass_env
// (its values as they are: an index token is what it is for, but never ticketd's own
// credentials), $ENV, $PYTHON, and bytecode written (the environment is read-only later).
func (b *Builder) environ(env Env, r Recipe) []string {
	base := b.BaseEnv
	if base == nil {
		base = os.Environ()
	}
	out, _ := sandbox.Env(sandbox.EnvRequest{Base: base, Deny: b.Deny, Set: b.ExtraEnv})
	for _, name := range r.PassEnv {
		if slices.Contains(b.Deny, name) {
			continue
		}
		for _, kv := range base {
			if v, ok := strings.CutPrefix(kv, name+"="); ok {
				out = append(out, name+"="+v)
			}
		}
	}
	out = append(out, "ENV="+env.Dir, "PYTHON="+env.Interpreter, "VIRTUAL_ENV=", "PYTHONDONTWRITEBYTECODE=",
		"PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_NO_INPUT=1")
	if !r.Network {
		// Nothing but loopback exists: an index a requirements file names (--index-url)
		// fails at once, and pip's five retries with back-off would only cost seconds per
		// package before it goes on with --find-links.
		out = append(out, "PIP_RETRIES=0")
	}
	return out
}

// Interpreter resolves name (python3, /usr/bin/python3.12) to the real interpreter and its
// version, on the host: both are part of the key.
func Interpreter(ctx context.Context, name string) (path, version string, err error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, "-c", "import sys; print(sys.executable); print(sys.version.replace('\\n', ' '))")
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", "", fmt.Errorf("setup.python %q does not run (%v: %s); install it or name an interpreter that exists", name, err, strings.TrimSpace(stderr.String()))
	}
	lines := strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)
	if len(lines) != 2 || !filepath.IsAbs(lines[0]) {
		return "", "", fmt.Errorf("setup.python %q: unexpected answer %q to sys.executable and sys.version", name, out)
	}
	return lines[0], strings.TrimSpace(lines[1]), nil
}

func (b *Builder) lock(repo string) func() {
	b.mu.Lock()
	if b.repos == nil {
		b.repos = map[string]*sync.Mutex{}
	}
	m := b.repos[repo]
	if m == nil {
		m = &sync.Mutex{}
		b.repos[repo] = m
	}
	b.mu.Unlock()
	m.Lock()
	return m.Unlock
}

func (b *Builder) now() time.Time {
	if b.Now == nil {
		return time.Now()
	}
	return b.Now()
}

func (b *Builder) logger() *slog.Logger {
	return cmp.Or(b.Logger, slog.New(slog.DiscardHandler))
}

var plainName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// RepoDir is the folder name of a repository's environments under the root: its name when
// that is a plain file name, else a hash of it.
func RepoDir(repo string) string {
	if plainName.MatchString(repo) {
		return repo
	}
	return fmt.Sprintf("repo-%x", hashString(repo))
}

// capped keeps the last outputCap bytes written to buf.
type capped struct{ buf *bytes.Buffer }

func (c *capped) Write(p []byte) (int, error) {
	c.buf.Write(p)
	if c.buf.Len() > 2*outputCap {
		keep := slices.Clone(c.buf.Bytes()[c.buf.Len()-outputCap:])
		c.buf.Reset()
		c.buf.Write(keep)
	}
	return len(p), nil
}

func tail(b []byte) string {
	if len(b) > outputCap {
		b = b[len(b)-outputCap:]
	}
	return string(bytes.ToValidUTF8(b, []byte("?")))
}

var _ io.Writer = (*capped)(nil)
