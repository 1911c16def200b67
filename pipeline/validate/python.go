package validate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/ticketd/ticketd/pipeline/discover"
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

// pythonCache remembers, per module, the system python3 that imports it, and what its
// import probe printed (pytest's version).
type pythonCache struct {
	mu      sync.Mutex
	found   map[string]string
	printed map[string]string // by module
}

func (r *Runner) systemPython(ctx context.Context, module string) (string, error) {
	r.pythons.mu.Lock()
	defer r.pythons.mu.Unlock()
	if py, ok := r.pythons.found[module]; ok {
		return py, nil
	}
	py, out, err := findPythonPrinted(ctx, module)
	if err != nil {
		return "", err
	}
	if r.pythons.found == nil {
		r.pythons.found, r.pythons.printed = map[string]string{}, map[string]string{}
	}
	r.pythons.found[module], r.pythons.printed[module] = py, out
	return py, nil
}

// probedHere is what the runner's own search (systemPython) found when it chose py for
// module: the same probe, in the same environment, as Probed.ask's, so the start-up need not
// start that Python again to ask it the same question.
func (r *Runner) probedHere(py, module string) (printed string, ok bool) {
	r.pythons.mu.Lock()
	defer r.pythons.mu.Unlock()
	if found, ok := r.pythons.found[module]; !ok || found != py {
		return "", false
	}
	return r.pythons.printed[module], true
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
	py, _, err := findPythonPrinted(ctx, module)
	return py, err
}

// findPythonPrinted is findPython with what the chosen candidate's probe printed
// (importScript: pytest's version).
func findPythonPrinted(ctx context.Context, module string) (string, string, error) {
	var tried []string
	for _, py := range pythonCandidates() {
		out, err := probeOutput(ctx, py, "-c", importScript(module))
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s -c 'import %s' (%v)", py, module, err))
			continue
		}
		return py, out, nil
	}
	return "", "", fmt.Errorf("%w: no python3 can import %s: tried %s; %s, or set python: in the repository's config (e.g. .venv/bin/python)",
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

// pytestConfigFiles are the files pytest reads its configuration from.
var pytestConfigFiles = []string{"pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg"}

// hasPytestConfig reports whether pytest of the given version finds its configuration
// at the root of dir: a file holding its section (pytest.ini even without). A repository
// without one gets --rootdir pinned to the worktree, so that a stray pytest.ini in a
// folder above the workspace never takes over, and so that node ids stay relative to
// the root where the paths pytest is given lead it to a configuration in a folder
// (tests/pytest.ini beside a setup.cfg without [tool:pytest] made it tests/, and the
// gate's ids, check_calc.py::test_low, matched none of the repository's).
func hasPytestConfig(dir, pytestVersion string) bool {
	return discover.RootConfig(discover.DirReader(dir), pytestVersion) != ""
}

// Probed remembers the import probes of one round of preflights (a night's start-up over
// every repository): each interpreter is asked once per module instead of once per
// repository, where each ask starts Python and imports the tool (0.2 s for pytest; 40
// repositories spent 9 s of a night's start on it). The probe of pytest also reads its
// version, in the same Python start, for discovery (pytest < 9 reads other configuration
// than pytest 9: see PytestVersion). A round is short; a new round asks again, so a tool
// removed or upgraded between nights is found. The zero value is ready; nil remembers
// nothing.
type Probed struct {
	mu   sync.Mutex
	done map[string]probeAnswer
}

// probeAnswer is what one import probe found: whether the module imports, and for pytest
// its version.
type probeAnswer struct {
	err     error
	version string
}

// importScript is the Python that probes module: its import, and for pytest the version
// it prints (pytest.__version__, set by the import itself: nothing more is loaded).
func importScript(module string) string {
	if module == "pytest" {
		return "import pytest, sys; sys.stdout.write(pytest.__version__)"
	}
	return "import " + module
}

// importable reports whether py imports module, asking py once per round.
func (p *Probed) importable(ctx context.Context, py, module string) error {
	_, err := p.ask(ctx, py, module)
	return err
}

// seed records that py imports module and printed out, as ask would have found, unless the
// round has an answer already.
func (p *Probed) seed(py, module, out string) {
	if p == nil {
		return
	}
	key := py + "\x00" + module
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.done[key]; ok {
		return
	}
	if p.done == nil {
		p.done = map[string]probeAnswer{}
	}
	p.done[key] = probeAnswer{version: out}
}

// askSeeded is seen.ask(py, module), answered by the runner's own probe of py when it chose
// py for module this night.
func (r *Runner) askSeeded(ctx context.Context, seen *Probed, py, module string) (string, error) {
	if out, ok := r.probedHere(py, module); ok {
		if seen == nil {
			return out, nil
		}
		seen.seed(py, module, out)
	}
	return seen.ask(ctx, py, module)
}

// ask probes py's import of module once per round: the version it printed (pytest's), and
// why it did not import.
func (p *Probed) ask(ctx context.Context, py, module string) (string, error) {
	if p == nil {
		return probeOutput(ctx, py, "-c", importScript(module))
	}
	key := py + "\x00" + module
	p.mu.Lock()
	defer p.mu.Unlock()
	if a, ok := p.done[key]; ok {
		return a.version, a.err
	}
	out, err := probeOutput(ctx, py, "-c", importScript(module))
	if ctx.Err() != nil {
		return out, err // cut short: says nothing of the tool
	}
	if p.done == nil {
		p.done = map[string]probeAnswer{}
	}
	p.done[key] = probeAnswer{err: err, version: out}
	return out, err
}

// PytestVersion is the version of the pytest that check c runs in dir ("7.2.1"), asked of
// its interpreter in the start-up's import probe (once per round with seen): discovery
// reads the configuration that pytest reads. It is "" when c is no pytest check, when its
// command wraps pytest in something else (tox, make) or the probe failed: discovery then
// follows the newest pytest. A check in a repository's environment (EnvDir) runs nothing
// here: the version is read from the environment's files.
func (r *Runner) PytestVersion(ctx context.Context, dir string, c Check, seen *Probed) string {
	if c.Kind != KindPytest {
		return ""
	}
	if c.EnvDir != "" {
		// The environment was built from the repository's recipe: nothing of it may run
		// outside the sandbox, so its pytest's version is read from what pip installed.
		return envPytestVersion(c.EnvDir)
	}
	argv, err := r.baseArgv(ctx, dir, c)
	if err != nil {
		return ""
	}
	py := pytestInterpreter(argv)
	if py == "" {
		return ""
	}
	v, err := r.askSeeded(ctx, seen, py, "pytest")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(v)
}

// envPytestVersion is the version of the pytest installed in the environment env, read
// from its dist-info folder's name (pytest-7.2.1.dist-info); "" when it has none.
func envPytestVersion(env string) string {
	infos, _ := filepath.Glob(filepath.Join(env, "lib", "python*", "site-packages", "pytest-*.dist-info"))
	for _, info := range infos {
		v := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(info), "pytest-"), ".dist-info")
		if v != "" && v[0] >= '0' && v[0] <= '9' {
			return v
		}
	}
	return ""
}

// pytestInterpreter is the Python that argv runs pytest with: the interpreter of `python
// -m pytest`, or the one a pytest script's #! line names (directly, or through
// /usr/bin/env); "" when argv runs pytest some other way.
func pytestInterpreter(argv []string) string {
	if len(argv) == 0 {
		return ""
	}
	if isModuleRun(argv, "pytest") {
		return argv[0]
	}
	if b := filepath.Base(argv[0]); b != "pytest" && b != "py.test" && b != "pytest-3" {
		return ""
	}
	script, err := exec.LookPath(argv[0])
	if err != nil {
		return ""
	}
	f, err := os.Open(script)
	if err != nil {
		return ""
	}
	defer f.Close()
	head := make([]byte, 256)
	n, _ := io.ReadFull(f, head)
	line, _, _ := strings.Cut(string(head[:n]), "\n")
	shebang, ok := strings.CutPrefix(line, "#!")
	if !ok {
		return ""
	}
	words := strings.Fields(shebang)
	if len(words) == 0 {
		return ""
	}
	if filepath.Base(words[0]) != "env" {
		return words[0]
	}
	for _, w := range words[1:] {
		if strings.HasPrefix(w, "-") || strings.Contains(w, "=") {
			continue // env's own options and assignments
		}
		if p, err := exec.LookPath(w); err == nil {
			return p
		}
		return ""
	}
	return ""
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
		if _, err := r.askSeeded(ctx, seen, argv[0], argv[2]); err != nil {
			return fmt.Errorf("%w: check %q: %s cannot import %s (%v); %s", ErrToolMissing, c.Name, argv[0], argv[2], err, installHint(argv[2]))
		}
	}
	return nil
}
