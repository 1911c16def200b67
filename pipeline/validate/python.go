package validate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/ticketd/ticketd/pipeline/sandbox"
)

// ErrToolMissing is returned when a check's tool (pytest, mypy, ruff) cannot
// be found or does not start: an environment problem for a human, never a
// failure of the fix under test.
var ErrToolMissing = errors.New("check tool missing")

// debianPython is where Debian's python3-pytest and python3-mypy install.
const debianPython = "/usr/bin/python3"

// Interpreter picks the Python a check runs with, the way the project itself
// would: the check's Python (the repository's `python:` in the config, which
// defaults to the repository checkout's own .venv/bin/python), else the first
// python3 on PATH that can import module, else /usr/bin/python3 if it can. A
// pyenv shim on PATH whose python lacks the module is skipped, not chosen.
//
// The interpreter never comes from the worktree (dir): a .venv/bin/python there
// would be a file the code under test or the model could have written, and
// one that prints a passing report would pass any fix.
func (r *Runner) Interpreter(ctx context.Context, dir string, c Check, module string) (string, error) {
	if c.Python != "" {
		if !filepath.IsAbs(c.Python) && strings.ContainsRune(c.Python, '/') {
			return "", fmt.Errorf("%w: check %q: python %q is relative; give an absolute path (the config resolves it against the repository)", ErrInvalidCheck, c.Name, c.Python)
		}
		return c.Python, nil
	}
	return r.systemPython(ctx, module)
}

// pythonCache remembers, per module, the system python3 that imports it.
type pythonCache struct {
	mu    sync.Mutex
	found map[string]string
}

func (r *Runner) systemPython(ctx context.Context, module string) (string, error) {
	r.pythons.mu.Lock()
	defer r.pythons.mu.Unlock()
	if py, ok := r.pythons.found[module]; ok {
		return py, nil
	}
	py, err := findPython(ctx, module)
	if err != nil {
		return "", err
	}
	if r.pythons.found == nil {
		r.pythons.found = map[string]string{}
	}
	r.pythons.found[module] = py
	return py, nil
}

// pythonCandidates lists every python3 on PATH, in PATH order, then Debian's.
func pythonCandidates() []string {
	var out []string
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if d == "" {
			continue
		}
		p := filepath.Join(d, "python3")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if !slices.Contains(out, debianPython) {
		out = append(out, debianPython)
	}
	return out
}

// findPython returns the first candidate python3 that can import module.
func findPython(ctx context.Context, module string) (string, error) {
	var tried []string
	for _, py := range pythonCandidates() {
		if err := probe(ctx, py, "-c", "import "+module); err != nil {
			tried = append(tried, fmt.Sprintf("%s -c 'import %s' (%v)", py, module, err))
			continue
		}
		return py, nil
	}
	return "", fmt.Errorf("%w: no python3 can import %s: tried %s; %s, or set python: in the repository's config (e.g. .venv/bin/python)",
		ErrToolMissing, module, strings.Join(tried, "; "), installHint(module))
}

// installHint says how to install a check's tool on the machines ticketd targets.
func installHint(tool string) string {
	switch tool {
	case "pytest":
		return "install it with `apt-get install -y python3-pytest` (or `pip install pytest` in the project's .venv)"
	case "mypy":
		return "install it with `apt-get install -y python3-mypy` (or `pip install mypy` in the project's .venv)"
	case "ruff":
		return "install ruff (`pip install ruff`), or put ticketd's scripts/ruff-wasm on PATH after `npm ci --prefix scripts/ruff-wasm` in ticketd's folder"
	}
	return "install " + tool
}

// toolModules maps a check command that names a Python tool to its module, for
// tools whose Debian package installs no command (python3-mypy has no `mypy`).
var toolModules = map[string]string{"mypy": "mypy", "pytest": "pytest"}

// lookTool resolves argv[0] when it is a bare tool name: on PATH it is used as
// is; a Python tool that is not on PATH runs as `<python> -m <module>`.
func (r *Runner) lookTool(ctx context.Context, dir string, c Check, argv []string) ([]string, error) {
	if len(argv) == 0 || strings.ContainsRune(argv[0], '/') {
		return argv, nil
	}
	module, ok := toolModules[argv[0]]
	if c.EnvDir != "" {
		// In the repository's environment its own tool comes first; a Python tool it lacks
		// runs with its interpreter, which sees its packages (a system pytest would not).
		p := filepath.Join(c.EnvDir, "bin", argv[0])
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return append([]string{p}, argv[1:]...), nil
		}
		if ok && c.Python != "" {
			return append([]string{c.Python, "-m", module}, argv[1:]...), nil
		}
	}
	if _, err := exec.LookPath(argv[0]); err == nil {
		return argv, nil
	}
	if !ok {
		return nil, fmt.Errorf("%w: check %q: %q is not on PATH; %s", ErrToolMissing, c.Name, argv[0], installHint(argv[0]))
	}
	py, err := r.Interpreter(ctx, dir, c, module)
	if err != nil {
		return nil, fmt.Errorf("check %q: %w", c.Name, err)
	}
	return append([]string{py, "-m", module}, argv[1:]...), nil
}

// pytestConfigFiles are the files pytest reads its configuration from; a
// repository with none at its root gets --rootdir pinned to the worktree, so
// a stray pytest.ini in a folder above the workspace never takes over.
var pytestConfigFiles = []string{"pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg"}

func hasPytestConfig(dir string) bool {
	for _, f := range pytestConfigFiles {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return false
}

// Probed remembers the import probes of one round of preflights (a night's start-up over
// every repository): each interpreter is asked once per module instead of once per
// repository, where each ask starts Python and imports the tool (0.2 s for pytest; 40
// repositories spent 9 s of a night's start on it). A round is short; a new round asks
// again, so a tool removed between nights is found. The zero value is ready; nil
// remembers nothing.
type Probed struct {
	mu   sync.Mutex
	done map[string]error
}

// importable reports whether py imports module, asking py once per round.
func (p *Probed) importable(ctx context.Context, py, module string) error {
	if p == nil {
		return probe(ctx, py, "-c", "import "+module)
	}
	key := py + "\x00" + module
	p.mu.Lock()
	defer p.mu.Unlock()
	if err, ok := p.done[key]; ok {
		return err
	}
	err := probe(ctx, py, "-c", "import "+module)
	if ctx.Err() != nil {
		return err // cut short: says nothing of the tool
	}
	if p.done == nil {
		p.done = map[string]error{}
	}
	p.done[key] = err
	return err
}

// Preflight resolves a check's command in dir (a checkout of the repository)
// and makes sure its tool starts, so that a configured but missing tool is an
// error at start-up, naming the check and how to install it, rather than a
// check that "fails at the base too" and silently gates nothing. seen shares
// the import probes of one round of preflights; nil probes every time.
func (r *Runner) Preflight(ctx context.Context, dir string, c Check, seen *Probed) error {
	if err := c.Validate(); err != nil {
		return err
	}
	scratch, err := sandbox.NewScratch(r.ScratchRoot)
	if err != nil {
		return fmt.Errorf("check %q: %w", c.Name, err)
	}
	defer scratch.Remove()
	spec, _ := r.spec(ctx, dir, scratch, c)
	argv, _, err := r.command(ctx, dir, c, spec, scratch)
	if err != nil {
		return err
	}
	tool := c.Kind
	if c.Kind == KindCommand || c.Kind == KindUnittest {
		tool = filepath.Base(argv[0])
	}
	if _, err := exec.LookPath(argv[0]); err != nil {
		return fmt.Errorf("%w: check %q: %q cannot run (%v); %s", ErrToolMissing, c.Name, argv[0], err, installHint(tool))
	}
	if len(argv) >= 3 && argv[1] == "-m" {
		if err := seen.importable(ctx, argv[0], argv[2]); err != nil {
			return fmt.Errorf("%w: check %q: %s cannot import %s (%v); %s", ErrToolMissing, c.Name, argv[0], argv[2], err, installHint(argv[2]))
		}
	}
	return nil
}
