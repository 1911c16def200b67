package validate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/pipeline/sandbox"
)

// fakePyenv makes a pyenv root whose python3 shim does what pyenv's does — picks a version
// (the .python-version in its working directory, else "fake"), exports PYENV_VERSION, puts
// the version's bin folder first on PATH and execs the interpreter — and notes each of its
// runs in the worktree's .shim-runs. It returns the root.
func fakePyenv(t *testing.T, python string) string {
	t.Helper()
	root := t.TempDir()
	for _, v := range []string{"fake", "other"} {
		if err := os.MkdirAll(filepath.Join(root, "versions", v, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "shims"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := `#!/bin/sh
echo run >> .shim-runs
v=fake
[ -f .python-version ] && v=$(cat .python-version)
export PYENV_VERSION="$v"
PATH="` + root + `/versions/$v/bin:$PATH"
export PATH
exec ` + python + ` "$@"
`
	if err := os.WriteFile(filepath.Join(root, "shims", "python3"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestPyenvShimAskedOnce: a check whose command starts with python3, where a pyenv shim comes
// first on PATH, runs the interpreter the shim picks with the environment the shim gives it
// (the version's bin folder first on PATH, PYENV_VERSION), and the shim runs once for the
// runs of the same checkout instead of once per run. A .python-version the maker writes
// is asked about again, and the check follows it. Under bwrap and without a sandbox.
func TestPyenvShimAskedOnce(t *testing.T) {
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skipf("%s: %v", python, err)
	}
	for _, m := range modes {
		t.Run(string(m.mode), func(t *testing.T) {
			if m.mode == sandbox.ModeBwrap {
				requireBwrap(t)
			}
			root := fakePyenv(t, python)
			dir := t.TempDir()
			r := &Runner{Sandbox: m.mode, ScratchRoot: t.TempDir(),
				BaseEnv: []string{"PATH=" + filepath.Join(root, "shims") + ":/usr/bin:/bin", "PYENV_ROOT=" + root}}
			check := Check{Name: "py", Kind: KindCommand, Command: []string{"python3", "-c",
				`import os, sys; print(sys.executable, os.environ["PYENV_VERSION"], os.environ["PATH"].split(":")[0])`}}
			shimRuns := func() int {
				data, _ := os.ReadFile(filepath.Join(dir, ".shim-runs"))
				return strings.Count(string(data), "run\n")
			}
			steps := []struct {
				name     string
				version  string // written to .python-version first, when not ""
				want     string
				wantRuns int // the shim's runs so far
			}{
				{"first run asks the shim", "", python + " fake " + root + "/versions/fake/bin", 1},
				{"second run: kept", "", python + " fake " + root + "/versions/fake/bin", 1},
				{"third run: kept", "", python + " fake " + root + "/versions/fake/bin", 1},
				{"a .python-version: asked again", "other", python + " other " + root + "/versions/other/bin", 2},
				{"and kept", "", python + " other " + root + "/versions/other/bin", 2},
			}
			for _, st := range steps {
				if st.version != "" {
					if err := os.WriteFile(filepath.Join(dir, ".python-version"), []byte(st.version), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				res := r.Run(context.Background(), dir, []Check{check})[0]
				if got := strings.TrimSpace(res.Output); !res.Passed || got != st.want {
					t.Errorf("%s: passed %v, output %q, want %q (%s)", st.name, res.Passed, got, st.want, res.Summary)
				}
				if n := shimRuns(); n != st.wantRuns {
					t.Errorf("%s: the shim ran %d times, want %d", st.name, n, st.wantRuns)
				}
				if strings.Join(res.Command, " ") != strings.Join(check.Command, " ") {
					t.Errorf("%s: reported command %q, want the configured %q", st.name, res.Command, check.Command)
				}
			}
		})
	}
}

// TestPyenvShimLeftAlone: what is no pyenv shim of Python runs as it is.
func TestPyenvShimLeftAlone(t *testing.T) {
	root := fakePyenv(t, "/usr/bin/python3")
	env := []string{"PATH=" + filepath.Join(root, "shims") + ":/usr/bin:/bin", "PYENV_ROOT=" + root}
	tests := []struct {
		argv0 string
		env   []string
		want  string
	}{
		{"python3", env, filepath.Join(root, "shims", "python3")},
		{filepath.Join(root, "shims", "python3"), env, filepath.Join(root, "shims", "python3")},
		{"/usr/bin/python3", env, ""},
		{"pytest", env, ""},                             // a tool's shim runs the tool: not resolved
		{"python3", []string{"PATH=/usr/bin:/bin"}, ""}, // no pyenv
	}
	for _, tt := range tests {
		if got := pyenvShim(tt.argv0, tt.env); got != tt.want {
			t.Errorf("pyenvShim(%q) = %q, want %q", tt.argv0, got, tt.want)
		}
	}
}
