package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Why the git CLI and not go-git for everything here:
//   - go-git v5 cannot create linked worktrees (`git worktree add`), and its
//     local clone copies objects slowly;
//   - its status/add ignore .git/info/exclude and core.excludesFile, and
//     CommitOptions.All does not add new files, so a commit or diff made with it
//     would disagree with what the user's own `git status` shows;
//   - a go-git Repository is not safe for concurrent use, while three workers
//     share one repository.
//
// The CLI is already required (worktree add), honours every ignore rule and
// filter the user configured, and its locks are the ones other git processes
// respect. Every invocation is hermetic: identity is passed with -c so nothing
// depends on a global ~/.gitconfig, hooks are disabled so an unattended night
// never runs (or hangs on) a repository hook, and GIT_DIR-style variables
// inherited from a parent git process are dropped.

// gitEnv is the environment for every git command: the process environment
// without variables that would redirect git to another repository or index,
// plus settings that keep git non-interactive and its messages in English
// (lock-collision detection matches on them).
func gitEnv(extra ...string) []string {
	drop := map[string]bool{
		"GIT_DIR": true, "GIT_WORK_TREE": true, "GIT_INDEX_FILE": true,
		"GIT_COMMON_DIR": true, "GIT_OBJECT_DIRECTORY": true, "GIT_PREFIX": true,
		"GIT_ALTERNATE_OBJECT_DIRECTORIES": true, "GIT_CEILING_DIRECTORIES": true,
		"LC_ALL": true, "LANGUAGE": true,
	}
	env := make([]string, 0, len(os.Environ())+len(extra)+4)
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if drop[name] {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0")
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

// runGit runs git with args in dir and returns its stdout. Identity and hooks
// are fixed by -c options so the product never depends on global config.
func runGit(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	full := append([]string{
		"-c", "core.hooksPath=/dev/null",
		"-c", "commit.gpgSign=false",
		"-c", "core.quotePath=false",
	}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Dir = dir
	cmd.Env = gitEnv(env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return stdout.String(), fmt.Errorf("git %s: %w", strings.Join(args, " "), context.Cause(ctx))
		}
		return stdout.String(), &gitError{Args: args, Err: err, Stderr: stderr.String()}
	}
	return stdout.String(), nil
}

// runGitRetry is runGit that retries lock collisions with a short, growing
// pause: another process (a user's IDE, a concurrent worker outside this
// Manager) may hold index.lock for a moment.
func runGitRetry(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	const attempts = 8
	delay := 25 * time.Millisecond
	for i := 0; ; i++ {
		out, err := runGit(ctx, dir, env, args...)
		if err == nil || i == attempts-1 || !lockCollision(err) {
			return out, err
		}
		select {
		case <-ctx.Done():
			return out, err
		case <-time.After(delay):
		}
		delay *= 2
	}
}

// exitCode returns the exit status carried by a git error, or -1.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}
