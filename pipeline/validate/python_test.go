package validate

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/pipeline/discover"
	"github.com/ticketd/ticketd/pipeline/sandbox"
)

// writeFiles writes name → content under a fresh directory and returns it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(content, "#!") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A package at the repository root, not installed, tests in test/ without
// __init__.py and no conftest.py: the pytest script fails collection with
// ModuleNotFoundError; `python -m pytest` (what the Runner runs) does not.
func TestPytestRootPackageNotInstalled(t *testing.T) {
	requirePytest(t)
	dir := writeFiles(t, map[string]string{
		"shop/__init__.py":   "",
		"shop/cart.py":       "def total(xs):\n    return sum(xs)\n",
		"test/test_cart.py":  "from shop.cart import total\n\n\ndef test_total():\n    assert total([1, 2]) == 3\n",
		"pyproject.toml":     "[project]\nname = \"shop\"\nversion = \"0\"\n",
		"README.md":          "not installed\n",
		"test/data/keep.txt": "x\n",
	})
	r := Runner{Sandbox: testSandbox(t)}
	res := r.Run(context.Background(), dir, []Check{{Name: "tests", Kind: KindPytest}})[0]
	if !res.Passed || res.Summary != "1 passed" || res.Tests != 1 {
		t.Fatalf("got passed=%v summary=%q tests=%d command=%q\nwant 1 passed\noutput:\n%s", res.Passed, res.Summary, res.Tests, res.Command, res.Output)
	}
	if len(res.Command) < 3 || res.Command[1] != "-m" || res.Command[2] != "pytest" {
		t.Errorf("command %q: want <python> -m pytest", res.Command)
	}
}

func TestInterpreter(t *testing.T) {
	ctx := context.Background()
	venv := writeFiles(t, map[string]string{".venv/bin/python": "#!/bin/sh\nexec /usr/bin/python3 \"$@\"\n"})
	plain := t.TempDir()
	// A pyenv-like shim that exists on PATH but cannot import anything useful.
	shimDir := writeFiles(t, map[string]string{"python3": "#!/bin/sh\necho 'pyenv: python3: command not found' >&2\nexit 127\n"})
	t.Setenv("PATH", shimDir+string(os.PathListSeparator)+os.Getenv("PATH"))

	tests := []struct {
		name   string
		dir    string
		check  Check
		module string
		want   string
	}{
		{"configured absolute", plain, Check{Python: "/opt/py/bin/python"}, "pytest", "/opt/py/bin/python"},
		// A .venv in the worktree is a file the code under test could have written: never used
		// (the repository checkout's own .venv comes in through the config's python).
		{"worktree venv ignored", venv, Check{}, "json", ""},
		{"shim skipped", plain, Check{}, "json", ""}, // first working python3 after the shim
	}
	for _, tc := range tests {
		r := Runner{Sandbox: testSandbox(t)}
		got, err := r.Interpreter(ctx, tc.dir, tc.check, tc.module)
		if err != nil {
			t.Errorf("%s: Interpreter(%q, %+v, %s): %v", tc.name, tc.dir, tc.check, tc.module, err)
			continue
		}
		if tc.want == "" {
			if got == filepath.Join(shimDir, "python3") || strings.HasPrefix(got, tc.dir) {
				t.Errorf("%s: got %q (the broken shim, or a file in the worktree)", tc.name, got)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("%s: Interpreter(%q, %+v, %s) = %q, want %q", tc.name, tc.dir, tc.check, tc.module, got, tc.want)
		}
	}

	r := Runner{Sandbox: testSandbox(t)}
	if _, err := r.Interpreter(ctx, plain, Check{Python: ".venv/bin/python"}, "pytest"); !errors.Is(err, ErrInvalidCheck) {
		t.Errorf("relative python: got %v, want ErrInvalidCheck (the config makes it absolute)", err)
	}
	_, err := r.Interpreter(ctx, plain, Check{}, "no_such_module_ticketd")
	if !errors.Is(err, ErrToolMissing) || !strings.Contains(err.Error(), "no_such_module_ticketd") {
		t.Errorf("missing module: got %v, want ErrToolMissing naming the module", err)
	}
}

// A configured tool that cannot start is reported as NotStarted, with the
// command, so the baseline can call the repository unhealthy instead of
// treating the failure as "failing at the base too".
func TestToolNotStarted(t *testing.T) {
	dir := t.TempDir()
	r := Runner{Sandbox: testSandbox(t)}
	tests := []struct {
		check Check
		want  string
	}{
		{Check{Name: "lint", Kind: KindRuff, Command: []string{"ruff-not-installed-here", "check", "."}}, "not on PATH"},
		{Check{Name: "types", Kind: KindMypy, Command: []string{"/usr/bin/python3", "-m", "no_such_mypy_module"}}, "did not start"},
		{Check{Name: "x", Kind: KindCommand, Command: []string{"/no/such/binary"}}, "could not start"},
	}
	for _, tc := range tests {
		res := r.Run(context.Background(), dir, []Check{tc.check})[0]
		if !res.NotStarted || res.Passed || !strings.Contains(res.Summary, tc.want) || len(res.Command) == 0 {
			t.Errorf("%+v: got not_started=%v passed=%v summary=%q command=%q, want not started with %q", tc.check, res.NotStarted, res.Passed, res.Summary, res.Command, tc.want)
		}
	}
	// A run that fails for real is not "not started".
	res := r.Run(context.Background(), dir, []Check{{Name: "f", Kind: KindCommand, Command: []string{"false"}}})[0]
	if res.NotStarted {
		t.Errorf("false: NotStarted set for a tool that ran and failed")
	}
}

// A round of preflights over several repositories asks an interpreter once whether it
// imports a tool; without a round (nil) each preflight asks; a failed import is said for
// every repository all the same.
func TestPreflightProbesOncePerRound(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "asked")
	py := filepath.Join(dir, "python3")
	// A stand-in interpreter: records each start, and imports nothing but pytest.
	script := "#!/bin/sh\necho \"$*\" >> " + log + "\ncase \"$*\" in *'import pytest'*) exit 0;; esac\necho \"ModuleNotFoundError: no module\" >&2\nexit 1\n"
	if err := os.WriteFile(py, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	repos := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	for _, tt := range []struct {
		name    string
		seen    *Probed
		kind    string
		asked   int
		failing bool
	}{
		{name: "one round", seen: &Probed{}, kind: KindPytest, asked: 1},
		{name: "no round", seen: nil, kind: KindPytest, asked: 3},
		{name: "one round, tool missing", seen: &Probed{}, kind: KindMypy, asked: 1, failing: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			os.Remove(log)
			r := &Runner{Sandbox: sandbox.ModeNone, ScratchRoot: t.TempDir()}
			c := Check{Name: "c", Kind: tt.kind, Python: py}
			for _, repo := range repos {
				err := r.Preflight(context.Background(), repo, c, tt.seen)
				if (err != nil) != tt.failing {
					t.Fatalf("preflight of %s: %v; want failing %v", repo, err, tt.failing)
				}
			}
			data, _ := os.ReadFile(log)
			if n := strings.Count(string(data), "import "); n != tt.asked {
				t.Errorf("the interpreter was asked %d times:\n%s\nwant %d", n, data, tt.asked)
			}
		})
	}
}

// The start-up's import probe of pytest reads its version in the same Python start, and
// PytestVersion answers from it: however a check names pytest (its interpreter's -m, the
// pytest script whose #! line names the interpreter, directly or through env), the
// interpreter is asked once a round. A command that wraps pytest says no version.
func TestPytestVersionFromStartupProbe(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "asked")
	py := filepath.Join(dir, "python3")
	script := "#!/bin/sh\necho \"$*\" >> " + log + "\ncase \"$*\" in *'import pytest'*) printf 7.2.1; exit 0;; esac\nexit 1\n"
	if err := os.WriteFile(py, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	direct := filepath.Join(dir, "direct", "pytest")
	viaEnv := filepath.Join(dir, "env", "pytest")
	for p, shebang := range map[string]string{direct: "#!" + py + "\n", viaEnv: "#!/usr/bin/env -S python3\n"} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(shebang+"import sys\nfrom pytest import console_main\nsys.exit(console_main())\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	env, bare := filepath.Join(dir, "env"), filepath.Join(dir, "bare")
	for _, p := range []string{env, bare} {
		if err := os.MkdirAll(filepath.Join(p, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		// The environment's interpreter is the recording stand-in: a run would show in the log.
		if err := os.Symlink(py, filepath.Join(p, "bin", "python3")); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "bin", "pytest"), []byte("#!"+py+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, info := range []string{"pytest_cov-5.0.0.dist-info", "pytest-8.3.4.dist-info"} {
		if err := os.MkdirAll(filepath.Join(env, "lib", "python3.11", "site-packages", info), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name      string
		check     Check
		preflight bool // the start-up asked first
		want      string
		asked     int
	}{
		{"the start-up's probe answers", Check{Name: "tests", Kind: KindPytest, Python: py}, true, "7.2.1", 1},
		{"asked when the start-up did not", Check{Name: "tests", Kind: KindPytest, Python: py}, false, "7.2.1", 1},
		{"a pytest script's interpreter", Check{Name: "tests", Kind: KindPytest, Command: []string{direct, "tests"}}, false, "7.2.1", 1},
		{"a pytest script run through env", Check{Name: "tests", Kind: KindPytest, Command: []string{viaEnv}}, false, "7.2.1", 1},
		{"a command wrapping pytest", Check{Name: "tests", Kind: KindPytest, Command: []string{"/bin/sh", "-c", "pytest"}}, false, "", 0},
		{"not a pytest check", Check{Name: "types", Kind: KindMypy, Python: py}, false, "", 0},
		// The environment is built from the repository's recipe: its interpreter, and the
		// #! line of its bin/pytest, never run outside the sandbox; pip's record tells.
		{"a repository's environment", Check{Name: "tests", Kind: KindPytest, Python: filepath.Join(env, "bin", "python3"), EnvDir: env}, false, "8.3.4", 0},
		{"an environment without pytest", Check{Name: "tests", Kind: KindPytest, Python: filepath.Join(bare, "bin", "python3"), EnvDir: bare}, false, "", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			os.Remove(log)
			r := &Runner{Sandbox: sandbox.ModeNone, ScratchRoot: t.TempDir()}
			seen := &Probed{}
			ctx := context.Background()
			if tt.preflight {
				if err := r.Preflight(ctx, dir, tt.check, seen); err != nil {
					t.Fatal(err)
				}
			}
			for range 2 {
				if got := r.PytestVersion(ctx, dir, tt.check, seen); got != tt.want {
					t.Errorf("PytestVersion(%q) = %q, want %q", tt.check.Command, got, tt.want)
				}
			}
			data, _ := os.ReadFile(log)
			if n := strings.Count(string(data), "import "); n != tt.asked {
				t.Errorf("the interpreter was asked %d times:\n%s\nwant %d", n, data, tt.asked)
			}
		})
	}
}

// With the version the probe reads from the real pytest, discovery reads the configuration
// that pytest reads: a pyproject.toml's [tool.pytest] table restricts collection to
// testpaths on pytest 9 only, and pytest < 9 collects bench/ too (attrs on pytest 7.2.1).
func TestPytestVersionDecidesDiscovery(t *testing.T) {
	requirePytest(t)
	ctx := context.Background()
	dir := writeFiles(t, map[string]string{
		"pyproject.toml":        "[project]\nname = \"attrs\"\n\n[tool.pytest]\ntestpaths = [\"tests\"]\naddopts = [\"-ra\"]\n",
		"tests/test_a.py":       "def test_a():\n    pass\n",
		"bench/test_b.py":       "def test_b():\n    pass\n",
		"src/attrs/__init__.py": "",
	})
	r := &Runner{Sandbox: sandbox.ModeNone, ScratchRoot: t.TempDir()}
	check := Check{Name: "tests", Kind: KindPytest, Python: debianPython}
	check.PytestVersion = r.PytestVersion(ctx, dir, check, &Probed{})
	if check.PytestVersion == "" {
		t.Fatalf("PytestVersion of %s: none read", debianPython)
	}
	cmd := exec.Command(debianPython, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("pytest --collect-only: %v\n%s", err, out)
	}
	collectsBench := strings.Contains(string(out), "bench/test_b.py::test_b")
	d := discover.FromDir(dir, DiscoverOptions([]Check{check}))
	restricted := slices.Equal(d.Paths, []string{"tests"})
	if collectsBench == restricted {
		t.Errorf("pytest %s collects bench/: %v, but discovery reads testpaths %q (config %q)\n%s",
			check.PytestVersion, collectsBench, d.Paths, d.Config, out)
	}
}

// TestStartupAsksSystemPythonOnce: a check without python: is given the first python3 that
// imports its tool, found by asking each; the start-up's own questions to that python3 (does
// it import the tool, which pytest is it) are what that search asked, so it starts once, not
// once for the search and again for the start-up, and the answers are the same.
func TestStartupAsksSystemPythonOnce(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "asked")
	py := filepath.Join(dir, "python3")
	script := "#!/bin/sh\necho \"$*\" >> " + log + "\ncase \"$*\" in *'import pytest'*) printf 7.2.1; exit 0;; esac\necho \"ModuleNotFoundError: no module\" >&2\nexit 1\n"
	if err := os.WriteFile(py, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, tt := range []struct {
		name        string
		seen        *Probed
		check       Check
		wantVersion string
		asked       int
	}{
		{"a round", &Probed{}, Check{Name: "tests", Kind: KindPytest}, "7.2.1", 1},
		{"no round", nil, Check{Name: "tests", Kind: KindPytest}, "7.2.1", 1},
		// mypy: the stand-in imports none and is asked once; the search goes on to the next
		// python3 (or finds none), which is none of this test's business.
		{"another tool", &Probed{}, Check{Name: "types", Kind: KindMypy}, "", 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			os.Remove(log)
			r := &Runner{Sandbox: sandbox.ModeNone, ScratchRoot: t.TempDir()}
			ctx := context.Background()
			if err := r.Preflight(ctx, t.TempDir(), tt.check, tt.seen); err != nil && tt.check.Kind == KindPytest {
				t.Fatal(err)
			}
			if got := r.PytestVersion(ctx, t.TempDir(), tt.check, tt.seen); got != tt.wantVersion {
				t.Errorf("PytestVersion = %q, want %q", got, tt.wantVersion)
			}
			data, _ := os.ReadFile(log)
			if n := strings.Count(string(data), "import "); n != tt.asked {
				t.Errorf("the stand-in python3 was asked %d times:\n%s\nwant %d", n, data, tt.asked)
			}
		})
	}
}
