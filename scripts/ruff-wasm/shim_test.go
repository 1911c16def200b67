// Package ruffwasm holds the tests of ruff.js, ticketd's `ruff check --output-format=json`
// over Ruff's WebAssembly engine: where no ruff binary exists it is the ruff the lint gate
// runs, so it must read a project's configuration as ruff does, or the gate compares noise.
// The expectations are ruff's documented behaviour; where a ruff is on PATH each case runs
// against it too, which checks the expectations themselves.
package ruffwasm

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/scripts/testenv"
)

const (
	unusedImport  = "import os\n"
	trailingSpace = "import os\nx = 1 \n" // F401 on line 1, W291 on line 2
)

type shimCase struct {
	name  string
	files map[string]string // path under the case's folder: content
	dir   string            // where ruff runs, under the case's folder; "" is the folder
	args  []string          // after `check --output-format=json --no-cache --no-fix`; nil is "."
	want  []string          // "path:CODE" relative to dir, sorted
	exit  int
}

var shimCases = []shimCase{
	{
		name: "per-file-ignores by path under the project and by basename",
		files: map[string]string{
			"pyproject.toml": "[tool.ruff.lint]\nselect = [\"F\"]\n\n[tool.ruff.lint.per-file-ignores]\n" +
				"\"tests/*\" = [\"F401\"]\n\"__init__.py\" = [\"F\"]\n",
			"tests/test_a.py": unusedImport,
			"pkg/__init__.py": unusedImport,
			"pkg/mod.py":      unusedImport,
		},
		want: []string{"pkg/mod.py:F401"},
		exit: 1,
	},
	{
		name: "a negated per-file-ignores pattern applies to the files it does not match",
		files: map[string]string{
			"ruff.toml":    "[lint.per-file-ignores]\n\"!src/**\" = [\"F401\"]\n",
			"src/a.py":     unusedImport,
			"scripts/b.py": unusedImport,
		},
		want: []string{"src/a.py:F401"},
		exit: 1,
	},
	{
		name: "multi-line select and ignore lists with comments",
		files: map[string]string{
			"ruff.toml": "[lint]\nselect = [\n    \"F\",  # pyflakes\n    \"W\",\n]\nignore = [\n    # imports are fine here\n    \"F401\",\n]\n",
			"a.py":      trailingSpace,
		},
		want: []string{"a.py:W291"},
		exit: 1,
	},
	{
		name: "legacy top-level select and the deprecated extend-ignore",
		files: map[string]string{
			"pyproject.toml": "[tool.ruff]\nselect = [\"F\", \"W\"]\nextend-ignore = [\"F401\"]\n",
			"a.py":           trailingSpace,
		},
		want: []string{"a.py:W291"},
		exit: 1,
	},
	{
		name: "extend, relative to the file naming it, layered under the project's own settings",
		files: map[string]string{
			"shared/base.toml": "[lint]\nselect = [\"F\", \"W\"]\nignore = [\"F401\"]\n",
			"proj/ruff.toml":   "extend = \"../shared/base.toml\"\n\n[lint]\nextend-ignore = [\"W291\"]\n",
			"proj/a.py":        trailingSpace + "\n\ndef f():\n    y = 1\n",
		},
		dir:  "proj",
		want: []string{"a.py:F841"},
		exit: 1,
	},
	{
		name: "a circular extend is refused",
		files: map[string]string{
			"ruff.toml":  "extend = \"other.toml\"\n",
			"other.toml": "extend = \"ruff.toml\"\n",
			"a.py":       unusedImport,
		},
		exit: 2,
	},
	{
		name: "a pyproject.toml without [tool.ruff] is passed over for the ruff.toml above it",
		files: map[string]string{
			"ruff.toml":           "[lint]\nselect = [\"W\"]\n",
			"proj/pyproject.toml": "[project]\nname = \"proj\"\n",
			"proj/a.py":           trailingSpace,
		},
		dir:  "proj",
		want: []string{"a.py:W291"},
		exit: 1,
	},
	{
		name: "extend-exclude and ruff's default exclude list, which has no build/",
		files: map[string]string{
			"pyproject.toml":   "[tool.ruff]\nextend-exclude = [\"generated\"]\n",
			"generated/g.py":   unusedImport,
			"venv/v.py":        unusedImport,
			"build/b.py":       unusedImport,
			"a.py":             unusedImport,
			"docs/conf.py.txt": unusedImport,
		},
		want: []string{"a.py:F401", "build/b.py:F401"},
		exit: 1,
	},
	{
		name: "force-exclude drops an excluded file named on the command line",
		files: map[string]string{
			"pyproject.toml": "[tool.ruff]\nforce-exclude = true\nextend-exclude = [\"generated\"]\n",
			"generated/g.py": unusedImport,
		},
		args: []string{"generated/g.py"},
		exit: 0,
	},
	{
		name: "gitignored folders and files inside a git repository are not walked",
		files: map[string]string{
			".git/HEAD":  "ref: refs/heads/main\n",
			".gitignore": "out/\n*_pb2.py\n",
			"out/o.py":   unusedImport,
			"a_pb2.py":   unusedImport,
			"a.py":       unusedImport,
		},
		want: []string{"a.py:F401"},
		exit: 1,
	},
	{
		name: "requires-python is the target version, per-file-target-version overrides it",
		files: map[string]string{
			"pyproject.toml": "[project]\nname = \"p\"\nrequires-python = \">=3.9\"\n\n[tool.ruff.lint]\nselect = [\"UP\"]\n\n" +
				"[tool.ruff.per-file-target-version]\n\"new/*\" = \"py310\"\n",
			"old.py":     "from typing import Optional\n\n\ndef f(x: Optional[int]) -> None:\n    pass\n",
			"new/new.py": "from typing import Optional\n\n\ndef f(x: Optional[int]) -> None:\n    pass\n",
		},
		want: []string{"new/new.py:UP045"},
		exit: 1,
	},
	{
		// The engine sees no file name; the shim supplies what depends on it.
		name: "a package's __init__.py and isort's same-package first party",
		files: map[string]string{
			"pyproject.toml":    "[tool.ruff]\nsrc = [\"src\"]\n\n[tool.ruff.lint]\nselect = [\"F\", \"I\"]\n",
			"pkg/__init__.py":   "__all__ = [\"sub\"]\n",
			"tests/__init__.py": "",
			"tests/base.py":     "X = 1\n",
			"tests/test_a.py":   "import os\n\nfrom tests.base import X\n\nprint(os, X)\n",
		},
		exit: 0,
	},
	{
		// The engine applies these itself (the old shim passed too): kept as a guard.
		name: "noqa on a line and ruff: noqa for a file",
		files: map[string]string{
			"a.py": "import os  # noqa: F401\nimport sys\n",
			"b.py": "# ruff: noqa: F401\nimport os\n",
		},
		want: []string{"a.py:F401"},
		exit: 1,
	},
}

func TestShimReadsConfigurationAsRuff(t *testing.T) {
	t.Parallel()
	shim := testenv.RuffShim(t)
	runs := map[string]string{"shim": shim}
	if real, err := exec.LookPath("ruff"); err == nil {
		runs["ruff"] = real
	}
	for _, tc := range shimCases {
		for name, ruff := range runs {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				root := t.TempDir()
				for p, content := range tc.files {
					writeFile(t, filepath.Join(root, p), content)
				}
				got, code, stderr := runRuff(t, ruff, filepath.Join(root, tc.dir), tc.args)
				if code != tc.exit {
					t.Fatalf("%s exited %d, want %d; findings %v; stderr: %s", ruff, code, tc.exit, got, stderr)
				}
				if code == 2 {
					if !strings.Contains(stderr, "extend") {
						t.Errorf("the error does not name the cause: %s", stderr)
					}
					return
				}
				if !slices.Equal(got, tc.want) {
					t.Errorf("findings %v, want %v", got, tc.want)
				}
			})
		}
	}
}

// An option the shim does not implement is refused, not ignored: a silently dropped
// --exclude or --fix would lint something other than what the operator asked for.
func TestShimRefusesUnknownOptions(t *testing.T) {
	t.Parallel()
	shim := testenv.RuffShim(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.py"), unusedImport)
	for _, args := range [][]string{{"--fix"}, {"--statistics"}, {"--output-format=text"}} {
		_, code, stderr := runRuff(t, shim, dir, append(args, "."))
		if code != 2 || !strings.Contains(stderr, strings.SplitN(args[0], "=", 2)[0]) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming the option", args, code, stderr)
		}
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// runRuff runs `ruff check` as ticketd's ruff check does and returns the findings as
// "path:CODE" (path relative to dir), sorted, with the exit status and stderr.
func runRuff(t *testing.T, ruff, dir string, args []string) ([]string, int, string) {
	t.Helper()
	if args == nil {
		args = []string{"."}
	}
	cmd := exec.Command(ruff, append([]string{"check", "--output-format=json", "--no-cache", "--no-fix"}, args...)...)
	cmd.Dir = dir
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("run %s in %s: %v", ruff, dir, err)
		}
		code = exit.ExitCode()
	}
	if code == 2 {
		return nil, code, stderr.String()
	}
	var diags []struct {
		Code     *string `json:"code"`
		Filename string  `json:"filename"`
	}
	if err := json.Unmarshal([]byte(stdout.String()), &diags); err != nil {
		t.Fatalf("%s's output is not ruff's JSON: %v\nstdout: %s\nstderr: %s", ruff, err, stdout.String(), stderr.String())
	}
	var got []string
	for _, d := range diags {
		rel, err := filepath.Rel(dir, d.Filename)
		if err != nil {
			t.Fatal(err)
		}
		rule := "<nil>"
		if d.Code != nil {
			rule = *d.Code
		}
		got = append(got, fmt.Sprintf("%s:%s", filepath.ToSlash(rel), rule))
	}
	slices.Sort(got)
	return got, code, stderr.String()
}
