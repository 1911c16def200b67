package caseset

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// baseDate pins the author and committer date of the "base" commit, so a
// case materializes to the same commit id on every run and machine.
const baseDate = "2000-01-01T00:00:00+0000"

// Materialize makes dst a git repository at the bug: a copy of repo/ with one
// commit "base" on branch main. dst must not exist or be an empty folder.
// Git runs without the user's global or system config, so hooks, signing or
// templates on the host cannot change the result.
func (c Case) Materialize(ctx context.Context, dst string) error {
	if entries, err := os.ReadDir(dst); err == nil && len(entries) > 0 {
		return fmt.Errorf("materialize case %q: %s is not empty; pass a fresh folder", c.Name, dst)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("materialize case %q: %w", c.Name, err)
	}
	src := filepath.Join(c.Dir, "repo")
	files, err := listFiles(src)
	if err != nil {
		return fmt.Errorf("materialize case %q: list repo/: %w", c.Name, err)
	}
	for _, f := range files {
		if err := copyFile(filepath.Join(src, filepath.FromSlash(f)), filepath.Join(dst, filepath.FromSlash(f))); err != nil {
			return fmt.Errorf("materialize case %q: %w", c.Name, err)
		}
	}
	steps := [][]string{
		{"init", "-q", "-b", "main"},
		// -f: repo/ is upstream's files, some of which upstream tracks although its own
		// .gitignore matches them (test data under a lib/ folder); without it they would
		// be missing from the base commit, and so from every worktree.
		{"add", "-A", "-f"},
		{"-c", "user.name=ticketd bench", "-c", "user.email=bench@ticketd.invalid", "-c", "commit.gpgsign=false",
			"commit", "-q", "--no-verify", "-m", "base"},
	}
	for _, args := range steps {
		if out, err := runGit(ctx, dst, args...); err != nil {
			return fmt.Errorf("materialize case %q: git %s: %w\n%s", c.Name, args[0], err, out)
		}
	}
	return nil
}

// runGit runs git in dir, isolated from the host's global and system config and
// with the base commit's fixed dates, and returns its combined output. The
// bench and the verify test use it to apply golden patches the same way.
func runGit(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_DATE="+baseDate,
		"GIT_COMMITTER_DATE="+baseDate,
		"GIT_TERMINAL_PROMPT=0",
	)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Judge sets the files test.patch touches back to their versions at the bug, copies the
// hidden files into repoDir (a checkout of the produced
// branch; existing files at those paths are overwritten) and runs the pytest
// command on exactly the hidden test files, from repoDir. passed is pytest's
// exit status 0. err is set only when the judging itself could not be done:
// a copy failed, the command would not start, ctx ended, or pytest reported a
// usage error or collected no tests (a broken case, not a failed fix).
// When case.yaml sets hidden_test_command, that command replaces pytest.
func (c Case) Judge(ctx context.Context, repoDir string, pytest []string) (passed bool, output string, err error) {
	// The files test.patch touches are the branch's business only as far as the gate goes:
	// the judge sets them back to the bug's versions, so a changed test module cannot
	// change what the hidden tests find.
	for _, f := range c.TestPatchFiles() {
		if err := c.resetFile(repoDir, f); err != nil {
			return false, "", fmt.Errorf("judge case %q: reset test file: %w", c.Name, err)
		}
	}
	for _, f := range c.HiddenFiles {
		if err := copyFile(filepath.Join(c.Dir, "hidden", filepath.FromSlash(f)), filepath.Join(repoDir, filepath.FromSlash(f))); err != nil {
			return false, "", fmt.Errorf("judge case %q: copy hidden file: %w", c.Name, err)
		}
	}
	if len(c.FailToPass)+len(c.PassToPass) > 0 {
		if ok, out, err := c.runNamedTests(ctx, repoDir, pytest); !ok || err != nil {
			return false, out, err
		}
	}
	var argv []string
	usePytest := len(c.HiddenTestCommand) == 0
	if usePytest {
		if len(pytest) == 0 {
			return false, "", fmt.Errorf("judge case %q: empty pytest command (see PytestCommand)", c.Name)
		}
		argv = append(append(append([]string{}, pytest...), "-q", "-p", "no:cacheprovider"), c.hiddenTests()...)
	} else {
		argv = c.HiddenTestCommand
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = repoDir
	cmd.Env = append(append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1"), c.TestEnv...)
	cmd.WaitDelay = 5 * time.Second
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	runErr := cmd.Run()
	output = buf.String()
	if ctx.Err() != nil {
		return false, output, fmt.Errorf("judge case %q: %w", c.Name, context.Cause(ctx))
	}
	if runErr == nil {
		return true, output, nil
	}
	return false, output, c.judgeError(argv, usePytest, runErr)
}

// runNamedTests runs the case's fail-to-pass and pass-to-pass tests first: a fix that
// breaks a pass-to-pass test fails whatever the hidden files say. ok is false when they
// fail; err is set only when they could not be judged.
func (c Case) runNamedTests(ctx context.Context, repoDir string, pytest []string) (ok bool, output string, err error) {
	if len(pytest) == 0 {
		return false, "", fmt.Errorf("judge case %q: empty pytest command (see PytestCommand)", c.Name)
	}
	args := append(append(append([]string{}, pytest[1:]...), "-q", "-p", "no:cacheprovider"), c.FailToPass...)
	cmd := exec.CommandContext(ctx, pytest[0], append(args, c.PassToPass...)...)
	cmd.Dir = repoDir
	cmd.Env = append(append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1"), c.TestEnv...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return false, string(out), fmt.Errorf("judge case %q: %w", c.Name, context.Cause(ctx))
	}
	return err == nil, string(out), nil
}

// judgeError is the error of a hidden-test run that failed, nil when the tests simply
// failed: a command that did not start, or a pytest that reported an internal or usage
// error or collected nothing, is a broken case, not a failed fix.
func (c Case) judgeError(argv []string, usePytest bool, runErr error) error {
	var exit *exec.ExitError
	if !errors.As(runErr, &exit) {
		return fmt.Errorf("judge case %q: run %s: %w", c.Name, strings.Join(argv, " "), runErr)
	}
	if !usePytest {
		return nil
	}
	switch exit.ExitCode() {
	case 3, 4: // internal error, usage error
		return fmt.Errorf("judge case %q: %s exited %d (pytest internal or usage error)", c.Name, strings.Join(argv, " "), exit.ExitCode())
	case 5:
		return fmt.Errorf("judge case %q: pytest collected no tests from %s", c.Name, strings.Join(c.hiddenTests(), " "))
	}
	return nil
}

// PytestCommand finds a pytest that runs here: `pytest`, then `pytest-3`,
// then Debian's `/usr/bin/python3 -m pytest` (the python3 first on PATH may
// be one without pytest). The error says how to install it.
func PytestCommand(ctx context.Context) ([]string, error) {
	candidates := [][]string{{"pytest"}, {"pytest-3"}, {"/usr/bin/python3", "-m", "pytest"}}
	for _, cand := range candidates {
		if _, err := exec.LookPath(cand[0]); err != nil {
			continue
		}
		args := append(append([]string{}, cand[1:]...), "--version")
		if err := exec.CommandContext(ctx, cand[0], args...).Run(); err == nil {
			return cand, nil
		}
	}
	return nil, errors.New("find pytest: none of pytest, pytest-3, /usr/bin/python3 -m pytest runs; install it with `sudo apt-get install -y python3-pytest`")
}

func copyFile(src, dst string) error {
	if fi, err := os.Lstat(src); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		target, err := os.Readlink(src)
		if err != nil {
			return fmt.Errorf("copy %s: %w", src, err)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("copy %s: %w", src, err)
		}
		if err := os.Symlink(target, dst); err != nil {
			return fmt.Errorf("copy symlink %s: %w", src, err)
		}
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fi.Mode().Perm()|0o200)
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	return nil
}

// resetFile puts rel back as repo/ has it, or removes it when repo/ has none.
func (c Case) resetFile(repoDir, rel string) error {
	if strings.HasPrefix(rel, "/") || strings.Contains("/"+rel+"/", "/../") {
		return fmt.Errorf("%s: not a path inside the repository", rel)
	}
	src := filepath.Join(c.Dir, "repo", filepath.FromSlash(rel))
	dst := filepath.Join(repoDir, filepath.FromSlash(rel))
	if _, err := os.Lstat(src); errors.Is(err, os.ErrNotExist) {
		if err := os.Remove(dst); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	return copyFile(src, dst)
}
