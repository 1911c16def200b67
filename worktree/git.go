package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ticketd/ticketd/pipeline/timing"
)

// Why the git CLI and not go-git:
//   - go-git v5 cannot create linked worktrees (`git worktree add`), its tree
//     walk reads every blob, and its local clone copies objects slowly;
//   - its status/add ignore .git/info/exclude, so a commit or diff made with it
//     would disagree with what the user's own `git status` shows;
//   - a go-git Repository is not safe for concurrent use, while three workers
//     share one repository.
//
// ticketd's own git is hardened, because the repository's git directory is
// writable from a worktree and so by the code under test: a test can append
// core.fsmonitor, a hook path or a filter driver to .git/config, or point a
// worktree's .git file at a fake repository. Every invocation therefore
//   - gets a minimal environment built from an allowlist (no API keys, no
//     tokens, no GIT_* variables of the parent), with system and global config
//     switched off (GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL=/dev/null) so the
//     result does not depend on the machine either;
//   - gets command-scope config (GIT_CONFIG_COUNT, which beats the repository
//     config) that switches off everything a repository config can make git
//     execute: see hardening;
//   - neutralises the repository's filter drivers, which cannot be switched off
//     by a wildcard: see filterOverrides;
//   - names its repository explicitly (GIT_DIR, GIT_COMMON_DIR, GIT_WORK_TREE)
//     once it is known, so no .git file or commondir file written by the code
//     under test is consulted;
//   - runs in its own process group, killed as a whole on cancellation, and is
//     waited for (exec.Cmd.Wait) so no child is left unreaped.
// Diff commands also pass --no-ext-diff and --no-textconv, which are per
// driver in config and so cannot be overridden there.

// envAllow are the only variables ticketd's git inherits from the daemon.
// HOME and XDG_CONFIG_HOME locate the default global ignore file
// (~/.config/git/ignore; the global config itself is off); TZ keeps commit
// dates in local time. Nothing else: the daemon's environment holds API keys.
var envAllow = []string{"PATH", "HOME", "XDG_CONFIG_HOME", "TMPDIR", "TZ", "SYSTEMROOT"}

// hardening is the command-scope config of every git invocation: each entry
// switches off a way for a repository config to make ticketd's git run a
// command, or fixes a setting whose repository value would change the
// output ticketd parses or hands on.
var hardening = [][2]string{
	{"core.fsmonitor", "false"},
	{"core.hooksPath", "/dev/null"}, // no hook runs: pre-commit, post-checkout, reference-transaction...
	{"core.sshCommand", "false"},
	{"core.askPass", ""},
	{"core.pager", "cat"},
	{"core.editor", ":"},
	{"sequence.editor", ":"},
	{"credential.helper", ""}, // an empty value resets the helper list
	{"commit.gpgSign", "false"},
	{"tag.gpgSign", "false"},
	{"gpg.program", "false"},
	{"gpg.openpgp.program", "false"},
	{"gpg.x509.program", "false"},
	{"gpg.ssh.program", "false"},
	{"gpg.ssh.defaultKeyCommand", "false"},
	{"log.showSignature", "false"},
	{"protocol.allow", "never"},
	{"protocol.ext.allow", "never"},
	{"protocol.file.allow", "never"},
	{"submodule.recurse", "false"},
	{"gc.auto", "0"},
	{"maintenance.auto", "false"},
	{"core.quotePath", "false"},
	// The patch ApplyBranch reads with git diff goes to git apply: no colour, and the a/ and
	// b/ prefixes apply strips.
	{"color.ui", "never"},
	{"color.diff", "never"},
	{"diff.noprefix", "false"},
	{"diff.mnemonicPrefix", "false"},
	{"diff.srcPrefix", "a/"},
	{"diff.dstPrefix", "b/"},
	{"diff.relative", "false"},
}

// hardenedEnv is the environment of ticketd's git: the allowlisted variables
// of the daemon, the fixed settings, the command-scope config (hardening,
// then cfg), then extra (GIT_DIR, GIT_INDEX_FILE, identities...).
func hardenedEnv(cfg [][2]string, extra ...string) []string {
	env := make([]string, 0, len(envAllow)+16+2*(len(hardening)+len(cfg))+len(extra))
	for _, name := range envAllow {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	env = append(env,
		"LC_ALL=C", // lock-collision detection matches on git's English messages
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_ASKPASS=", // set and empty: no askpass program, whatever core.askPass says
		"GIT_PAGER=cat",
		"GIT_EDITOR=:",
		"GIT_ALLOW_PROTOCOL=", // set and empty: no transport at all (fetch, submodule, promisor)
		"GIT_OPTIONAL_LOCKS=0",
	)
	all := append(append([][2]string{}, hardening...), cfg...)
	env = append(env, "GIT_CONFIG_COUNT="+strconv.Itoa(len(all)))
	for i, kv := range all {
		n := strconv.Itoa(i)
		env = append(env, "GIT_CONFIG_KEY_"+n+"="+kv[0], "GIT_CONFIG_VALUE_"+n+"="+kv[1])
	}
	return append(env, extra...)
}

// gitError is a failed git invocation: the arguments, exit status and the
// trimmed stderr, which is what an operator needs to act on.
type gitError struct {
	Args   []string
	Err    error
	Stderr string
}

func (e *gitError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.Args, " "), msg)
}

func (e *gitError) Unwrap() error { return e.Err }

// lockCollision reports whether a git failure came from another git process
// holding a lock (index.lock, a ref lock, worktrees/ metadata) rather than
// from a real problem; such failures are retried.
func lockCollision(err error) bool {
	var ge *gitError
	if !errors.As(err, &ge) {
		return false
	}
	s := ge.Stderr
	return strings.Contains(s, ".lock': File exists") ||
		strings.Contains(s, "Unable to create") && strings.Contains(s, ".lock") ||
		strings.Contains(s, "cannot lock ref") ||
		strings.Contains(s, "could not lock config file")
}

// repoDirs names the repository a git command works on, so that git
// discovers nothing: GitDir is GIT_DIR (the common dir for repository-wide
// commands, <common>/worktrees/<name> for a linked worktree), CommonDir is
// GIT_COMMON_DIR, WorkTree is GIT_WORK_TREE and the command's directory.
type repoDirs struct {
	GitDir, CommonDir, WorkTree string
}

// git runs ticketd's hardened git on the repository with args and returns
// its stdout; extra is added to the environment.
func (d repoDirs) git(ctx context.Context, extra []string, args ...string) (string, error) {
	return d.gitWith(ctx, nil, extra, args...)
}

// gitWith is git with more command-scope config after the hardening (a push's
// transport and credentials).
func (d repoDirs) gitWith(ctx context.Context, more [][2]string, extra []string, args ...string) (string, error) {
	if err := d.checkCommonDirLink(); err != nil {
		return "", err
	}
	cfg, err := d.filterOverrides(ctx)
	if err != nil {
		return "", err
	}
	cfg = append(cfg, more...)
	env := append([]string{
		"GIT_DIR=" + d.GitDir,
		"GIT_COMMON_DIR=" + d.CommonDir,
		"GIT_WORK_TREE=" + d.WorkTree,
	}, extra...)
	return execGit(ctx, d.WorkTree, hardenedEnv(cfg, env...), nil, args...)
}

// gitInput is git with stdin: the blobs and index records ticketd writes itself.
func (d repoDirs) gitInput(ctx context.Context, extra []string, stdin []byte, args ...string) (string, error) {
	if err := d.checkCommonDirLink(); err != nil {
		return "", err
	}
	cfg, err := d.filterOverrides(ctx)
	if err != nil {
		return "", err
	}
	env := append([]string{
		"GIT_DIR=" + d.GitDir,
		"GIT_COMMON_DIR=" + d.CommonDir,
		"GIT_WORK_TREE=" + d.WorkTree,
	}, extra...)
	return execGit(ctx, d.WorkTree, hardenedEnv(cfg, env...), stdin, args...)
}

// gitRetry is git that retries lock collisions with a short, growing pause:
// another process (a user's IDE, a concurrent worker outside this Manager)
// may hold index.lock for a moment.
func (d repoDirs) gitRetry(ctx context.Context, extra []string, args ...string) (string, error) {
	return retryLocked(ctx, func() (string, error) { return d.git(ctx, extra, args...) })
}

// checkCommonDirLink verifies, for a linked worktree's git dir, that its
// commondir file still leads to CommonDir. GIT_COMMON_DIR decides where git
// reads config and objects, but git's ref store follows the file, so a file
// rewritten by the code under test would send ticketd's commits and branch
// reads to another repository.
func (d repoDirs) checkCommonDirLink() error {
	if d.GitDir == d.CommonDir {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(d.GitDir, "commondir"))
	if err != nil {
		return fmt.Errorf("check worktree git dir %s: %w", d.GitDir, err)
	}
	target := strings.TrimSpace(string(data))
	if !filepath.IsAbs(target) {
		target = filepath.Join(d.GitDir, target)
	}
	if !sameFile(target, d.CommonDir) {
		return fmt.Errorf("worktree git dir %s: its commondir file now leads to %s, not to the repository %s: something in the worktree rewrote it; ticketd will not run git there (remove the worktree)", d.GitDir, target, d.CommonDir)
	}
	return nil
}

// filterOverrides returns command-scope config that disables every filter
// driver the repository configures (filter.<name>.clean, smudge and process
// set empty, which git reads as "no filter", and required off, so the file
// is taken as it is). A driver runs for the paths the attributes name it
// on, and attributes come from files in the worktree itself, so the drivers
// must be switched off by name: they are listed with a hardened
// `git config --get-regexp`. Listing costs a process, so it is skipped when
// neither config file git reads for the repository mentions "filter" or
// "include" (section names are plain words in the file; an include could
// bring drivers from elsewhere). A driver added between the listing and
// the command is not covered: keeping the git directory out of the reach of
// the code under test is the sandbox's part.
func (d repoDirs) filterOverrides(ctx context.Context) ([][2]string, error) {
	if !d.configMayHaveFilters() {
		return nil, nil
	}
	env := hardenedEnv(nil, "GIT_DIR="+d.GitDir, "GIT_COMMON_DIR="+d.CommonDir, "GIT_WORK_TREE="+d.WorkTree)
	out, err := execGit(ctx, d.WorkTree, env, nil, "config", "-z", "--get-regexp", `^filter\.`)
	if err != nil && exitCode(err) != 1 { // 1: no such key
		return nil, fmt.Errorf("list the filter drivers of %s to switch them off: %w", d.CommonDir, err)
	}
	return filterConfig(out), nil
}

// filterConfig turns `git config -z --get-regexp` output (key, newline,
// value, NUL) into overrides for each named filter driver. Driver names may
// hold dots, so the variable is what follows the last one.
func filterConfig(out string) [][2]string {
	var cfg [][2]string
	seen := map[string]bool{}
	for _, entry := range strings.Split(out, "\x00") {
		key, _, _ := strings.Cut(entry, "\n")
		rest, ok := strings.CutPrefix(key, "filter.")
		i := strings.LastIndexByte(rest, '.')
		if !ok || i <= 0 {
			continue
		}
		name := rest[:i]
		if seen[name] {
			continue
		}
		seen[name] = true
		for _, v := range [][2]string{{"clean", ""}, {"smudge", ""}, {"process", ""}, {"required", "false"}} {
			cfg = append(cfg, [2]string{"filter." + name + "." + v[0], v[1]})
		}
	}
	return cfg
}

// configMayHaveFilters reports whether the repository's config files
// (<common>/config, and <gitdir>/config.worktree read under
// extensions.worktreeConfig) could configure a filter driver. Unreadable
// files count as "could".
func (d repoDirs) configMayHaveFilters() bool {
	for _, p := range []string{filepath.Join(d.CommonDir, "config"), filepath.Join(d.GitDir, "config.worktree")} {
		data, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return true
		}
		lower := bytes.ToLower(data)
		if bytes.Contains(lower, []byte("filter")) || bytes.Contains(lower, []byte("include")) {
			return true
		}
	}
	return false
}

// runGit runs hardened git in dir, letting git discover the repository from
// there. It is only for commands that read no file contents (rev-parse,
// check-ref-format): they are what finds the repository in the first place.
func runGit(ctx context.Context, dir string, args ...string) (string, error) {
	return execGit(ctx, dir, hardenedEnv(nil), nil, args...)
}

// execGit runs git with the given complete environment (and stdin, when not nil) and
// returns stdout.
func execGit(ctx context.Context, dir string, env []string, stdin []byte, args ...string) (string, error) {
	defer timing.Since(ctx, timing.Git, time.Now())
	cmd := exec.CommandContext(ctx, "git", append([]string{"--no-pager"}, args...)...)
	cmd.Dir = dir
	cmd.Env = env
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	waited := ownProcessGroup(cmd, talksToRemote(args))
	// If a child of git outlives a kill while holding stdout, Wait still
	// returns after this long; the child is reaped by whoever reaps orphans.
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	err := cmd.Run()
	waited()
	if err != nil {
		if ctx.Err() != nil {
			return stdout.String(), fmt.Errorf("git %s: %w", strings.Join(args, " "), context.Cause(ctx))
		}
		return stdout.String(), &gitError{Args: args, Err: err, Stderr: stderr.String()}
	}
	return stdout.String(), nil
}

// ErrLocked is a git lock file that stayed in a repository while git was retried for
// seconds: a git process that held it died (a crash, a kill, a full disk), or one still
// runs. git will not remove it, and neither does ticketd: only an operator can tell whether
// a git process still runs there.
var ErrLocked = errors.New("a git lock file stays in the repository")

// lockFileRe finds the lock file git names when it cannot create it.
var lockFileRe = regexp.MustCompile(`Unable to create '([^']+\.lock)': File exists`)

// lockedError is a lock collision that outlasted the retries: ErrLocked, naming the lock
// file and what to do, with git's error behind it (git's long advice is not repeated).
type lockedError struct {
	path   string
	waited time.Duration
	git    *gitError
}

func (e *lockedError) Error() string {
	return fmt.Sprintf("%v: %s is still there after %s of retries (a git process that held it died, or one still runs): if no git process runs in that repository, remove the file (git %s)",
		ErrLocked, e.path, e.waited.Round(100*time.Millisecond), strings.Join(e.git.Args, " "))
}

func (e *lockedError) Unwrap() []error { return []error{ErrLocked, e.git} }

// asLocked returns err as a lockedError when git named a lock file it could not create.
func asLocked(err error, waited time.Duration) error {
	var ge *gitError
	if !errors.As(err, &ge) {
		return err
	}
	m := lockFileRe.FindStringSubmatch(ge.Stderr)
	if m == nil {
		return err
	}
	return &lockedError{path: m[1], waited: waited, git: ge}
}

// retryLocked runs run again while it fails with a lock collision, at most
// eight times, pausing 25 ms and doubling; a lock file still there after that is
// ErrLocked.
func retryLocked(ctx context.Context, run func() (string, error)) (string, error) {
	const attempts = 8
	delay := 25 * time.Millisecond
	var waited time.Duration
	for i := 0; ; i++ {
		out, err := run()
		if err != nil && i == attempts-1 && lockCollision(err) {
			return out, asLocked(err, waited)
		}
		if err == nil || i == attempts-1 || !lockCollision(err) {
			return out, err
		}
		select {
		case <-ctx.Done():
			return out, err
		case <-time.After(delay):
		}
		waited += delay
		delay *= 2
	}
}

// remoteCommands are the git commands that reach a remote: only they die with ticketd (see
// ownProcessGroup).
var remoteCommands = map[string]bool{"push": true, "fetch": true, "pull": true, "ls-remote": true, "clone": true}

// talksToRemote says whether the git command args (its subcommand first, as execGit is
// given it) may reach a remote.
func talksToRemote(args []string) bool {
	return len(args) > 0 && remoteCommands[args[0]]
}

// exitCode returns the exit status carried by a git error, or -1.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}
