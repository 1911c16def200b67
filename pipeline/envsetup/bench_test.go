package envsetup

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ticketd/ticketd/pipeline/validate"
)

// BenchmarkEnsure measures what a night pays for a repository's environment: a cold build
// of a full recipe (a virtualenv with its own pip from ensurepip, a requirement from a local
// wheelhouse, the project editable), a cached start (the key computed, the cache found), and
// the import probe the night runs in the sandbox.
//
//	go test -run '^$' -bench Ensure -benchtime 3x ./pipeline/envsetup
func BenchmarkEnsure(b *testing.B) {
	needVenv(b)
	root := b.TempDir()
	wheels := filepath.Join(root, "wheels")
	writeWheel(b, wheels, "shinyfmt", "1.0", map[string]string{"__init__.py": "def shout(s):\n    return s.upper() + '!'\n"})
	src := filepath.Join(root, "src")
	files := writeBenchFixture(b, src)
	recipe := Recipe{Python: venvPython, Commands: []string{
		`"$PYTHON" -m venv --system-site-packages "$ENV"`,
		`"$ENV/bin/pip" install -q --no-index --find-links ` + wheels + ` -r requirements.txt`,
		`"$ENV/bin/pip" install -q --no-index --no-build-isolation --no-deps -e .`,
	}}
	builder := &Builder{Root: filepath.Join(root, "envs"), Sandbox: testSandbox(b), ReadOnly: []string{wheels}, ScratchRoot: root}
	req := Request{Repo: "banner", Source: src, Files: files, Recipe: recipe, NeedPython: true}
	var env Env
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			recipe.VerifyEvery = time.Nanosecond // every build is a cold one
			req.Recipe = recipe
			var err error
			if env, err = builder.Ensure(context.Background(), req); err != nil || env.Cached {
				b.Fatal(err, env.Cached)
			}
		}
	})
	req.Recipe.VerifyEvery = 0
	b.Run("cached", func(b *testing.B) {
		for b.Loop() {
			if e, err := builder.Ensure(context.Background(), req); err != nil || !e.Cached {
				b.Fatal(err)
			}
		}
	})
	b.Run("probe", func(b *testing.B) {
		runner := &validate.Runner{Sandbox: builder.Sandbox}
		check := ProbeCheck(validate.Check{Python: env.Python, EnvDir: env.Dir}, []string{"banner"})
		for b.Loop() {
			if res := runner.Run(context.Background(), src, []validate.Check{check}); !res[0].Passed {
				b.Fatal(res[0].Output)
			}
		}
	})
}

func writeBenchFixture(b *testing.B, dir string) []string {
	b.Helper()
	files := map[string]string{
		"setup.py":           "from setuptools import setup\nsetup(name='banner', version='1.0', packages=['banner'])\n",
		"requirements.txt":   "shinyfmt==1.0\n",
		"banner/__init__.py": "from shinyfmt import shout\n",
	}
	var names []string
	for n, c := range files {
		writeFile(b, filepath.Join(dir, n), c)
		names = append(names, n)
	}
	return names
}

func writeFile(tb testing.TB, p, content string) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
}
