// Package envsetup builds a repository's environment from its recipe (repos.<name>.setup):
// a list of shell commands run once, in the sandbox, from a clean copy of the base commit,
// with the environment's folder in $ENV (`"$PYTHON" -m venv "$ENV"`, `"$ENV/bin/pip" install
// -e '.[test]'`). The result is cached outside every worktree under a key that hashes what
// it depends on — the recipe, the files it names as inputs at the base commit and the
// interpreter's version — so a night pays for a build only when one of them changed, or when
// the cache is older than the recipe's verify_every (a cache must not hide a broken recipe).
// Checks then run with $ENV/bin/python, the environment bound read-only, the worktree first
// on the path (validate.Check.EnvDir).
package envsetup

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"time"
)

// Defaults of a recipe's options.
const (
	// DefaultVerifyEvery forces a cold rebuild of an environment built longer ago than this.
	DefaultVerifyEvery = 7 * 24 * time.Hour
	// DefaultTimeout bounds a whole build (every command together).
	DefaultTimeout = 20 * time.Minute
	// DefaultPython is the interpreter a recipe makes its environment with ($PYTHON).
	DefaultPython = "python3"
)

// DefaultInputs are the files whose content keys an environment when the recipe names none:
// what pip, setuptools and the usual lock tools read. Patterns are path.Match patterns on
// the repository-relative path.
var DefaultInputs = []string{"pyproject.toml", "setup.cfg", "setup.py", "requirements*.txt", "requirements/*.txt",
	"*.lock", "tox.ini", "noxfile.py"}

// Recipe is how a repository's environment is made.
type Recipe struct {
	// Commands run one after another with /bin/sh -c, in a clean copy of the base commit;
	// $ENV is the environment's folder and $PYTHON the interpreter. The first that fails
	// fails the build.
	Commands []string `yaml:"commands"`
	// Inputs are the files (path.Match patterns) whose content keys the environment;
	// empty means DefaultInputs.
	Inputs []string `yaml:"inputs"`
	// Network lets the commands reach the network (a package index); checks never do.
	Network bool `yaml:"network"`
	// PassEnv names variables of the daemon's environment the commands see (an index's
	// token); never a check.
	PassEnv []string `yaml:"pass_env"`
	// Python is the interpreter exported as $PYTHON; its version is part of the key.
	// Empty means DefaultPython.
	Python string `yaml:"python"`
	// VerifyEvery forces a cold rebuild of an older environment; 0 means DefaultVerifyEvery.
	VerifyEvery time.Duration `yaml:"verify_every"`
	// Timeout bounds the whole build; 0 means DefaultTimeout.
	Timeout time.Duration `yaml:"timeout"`
}

// keyFormat versions what a key means: bump it when the layout of an environment changes.
const keyFormat = 1

// maxInputBytes bounds how much of one input file is hashed.
const maxInputBytes = 16 << 20

// Key names the environment recipe makes in a checkout whose tracked files are files, read
// from dir: a hash of the recipe, of every tracked file an input pattern matches (name and
// content; a symlink by its target), of every tracked requirements file those or the
// commands include (-r, -c: withIncludes) and of the interpreter's version. Only regular files
// and symlinks are read, a symlink never followed (a folder on the way either: openTracked):
// a repository, or what a check left in the worktree, cannot make the key read a
// FIFO or /dev/zero.
func Key(r Recipe, dir string, files []string, pythonVersion string) (string, []string, error) {
	h := sha256.New()
	head, err := json.Marshal(struct {
		Format   int
		Commands []string
		Inputs   []string
		Network  bool
		PassEnv  []string
		Python   string
		Version  string
	}{keyFormat, r.Commands, r.inputs(), r.Network, r.PassEnv, r.python(), pythonVersion})
	if err != nil {
		return "", nil, fmt.Errorf("environment key: %w", err)
	}
	h.Write(head)
	inputs := withIncludes(dir, files, Inputs(r, files), r.Commands)
	for _, rel := range inputs {
		e, err := openTracked(dir, rel)
		if errors.Is(err, errNotInTree) {
			// Not the checkout's file (a check left a symlinked folder): keyed as such, never
			// read through the link.
			fmt.Fprintf(h, "\x00%s\x00not in the tree", rel)
			continue
		}
		if err != nil {
			return "", nil, fmt.Errorf("environment key: input %s: %w", rel, err)
		}
		fmt.Fprintf(h, "\x00%s\x00", rel)
		switch {
		case e.mode == fs.ModeSymlink:
			fmt.Fprintf(h, "symlink\x00%s", e.target)
		case e.file != nil:
			_, err = io.Copy(h, io.LimitReader(e.file, maxInputBytes))
			e.file.Close()
			if err != nil {
				return "", nil, fmt.Errorf("environment key: input %s: %w", rel, err)
			}
		default:
			fmt.Fprintf(h, "other\x00%s", e.mode.Type())
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16], inputs, nil
}

// Inputs returns the tracked files among files that the recipe's input patterns match,
// sorted.
func Inputs(r Recipe, files []string) []string {
	var out []string
	for _, f := range files {
		for _, pat := range r.inputs() {
			if ok, _ := path.Match(pat, f); ok {
				out = append(out, f)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

func (r Recipe) inputs() []string {
	if len(r.Inputs) == 0 {
		return DefaultInputs
	}
	return r.Inputs
}

func (r Recipe) python() string {
	if r.Python == "" {
		return DefaultPython
	}
	return r.Python
}

func (r Recipe) verifyEvery() time.Duration {
	if r.VerifyEvery <= 0 {
		return DefaultVerifyEvery
	}
	return r.VerifyEvery
}

func (r Recipe) timeout() time.Duration {
	if r.Timeout <= 0 {
		return DefaultTimeout
	}
	return r.Timeout
}

// Validate reports what in r cannot run, naming the field.
func (r Recipe) Validate() error {
	if len(r.Commands) == 0 {
		return fmt.Errorf("commands: at least one is required, e.g. [\"\\\"$PYTHON\\\" -m venv \\\"$ENV\\\"\", \"\\\"$ENV/bin/pip\\\" install -e '.[test]'\"]")
	}
	for i, c := range r.Commands {
		if c == "" {
			return fmt.Errorf("commands[%d]: empty", i)
		}
	}
	for i, p := range r.Inputs {
		if _, err := path.Match(p, ""); err != nil || p == "" || path.IsAbs(p) {
			return fmt.Errorf("inputs[%d]: %q is not a relative file pattern like requirements*.txt", i, p)
		}
	}
	if r.VerifyEvery < 0 {
		return fmt.Errorf("verify_every: must be >= 0 (0 means %s), got %s", DefaultVerifyEvery, r.VerifyEvery)
	}
	if r.Timeout < 0 {
		return fmt.Errorf("timeout: must be >= 0 (0 means %s), got %s", DefaultTimeout, r.Timeout)
	}
	return nil
}
