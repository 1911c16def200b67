package envsetup

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/pipeline/sandbox"
	"github.com/ticketd/ticketd/pipeline/validate"
)

// An editable install of the project points at the checkout the environment was built from.
// Even with that checkout still on disk and visible (no sandbox hides it), a check in the
// environment imports the worktree's code — the fix under test — and the probe says so;
// the same interpreter without the environment's path order imports the base checkout,
// and the probe refuses it.
func TestEditableInstallNeverBeatsTheWorktree(t *testing.T) {
	needVenv(t)
	t.Parallel()
	bu := setup(t)
	bu.b.Sandbox = sandbox.ModeNone // nothing hidden: the base checkout stays reachable
	base := map[string]string{
		"setup.py":             "from setuptools import setup\nsetup(name='banner', version='1.0', packages=['banner'])\n",
		"requirements.txt":     "shinyfmt==1.0\n",
		"banner/__init__.py":   "from shinyfmt import shout\n\n\ndef banner(s):\n    return shout(s)  # BUG: no frame\n",
		"tests/test_banner.py": "from banner import banner\n\n\ndef test_banner():\n    assert banner('hi') == '*HI!*'\n",
	}
	src := writeFixture(t, t.TempDir(), base)
	r := bu.recipe()
	r.Commands = append(r.Commands, `"$ENV/bin/python" -m pip install -q --no-index --no-build-isolation --no-deps -e .`)
	env, err := bu.b.Ensure(t.Context(), Request{Repo: "banner", Source: src.dir, Files: src.files, Recipe: r, NeedPython: true})
	if err != nil {
		t.Fatal(err)
	}
	// Put the build's checkout back, as a recipe that kept it would have it.
	kept := writeFixture(t, env.Dir+".src", base)
	t.Cleanup(func() { os.RemoveAll(kept.dir) })

	fixed := map[string]string{}
	for k, v := range base {
		fixed[k] = v
	}
	fixed["banner/__init__.py"] = "from shinyfmt import shout\n\n\ndef banner(s):\n    return '*' + shout(s) + '*'\n"
	tree := writeFixture(t, t.TempDir(), fixed)
	runner := &validate.Runner{Sandbox: sandbox.ModeNone}
	inEnv := validate.Check{Name: "tests", Kind: validate.KindPytest, Python: env.Python, EnvDir: env.Dir, Command: []string{"pytest"}}
	bare := validate.Check{Name: "tests", Kind: validate.KindPytest, Python: env.Python, Command: []string{env.Python, "-c", "import sys; del sys.path[0]; import pytest; sys.exit(pytest.main())"}} // as the pytest script starts: the folder is not on the path
	for _, tc := range []struct {
		name      string
		check     validate.Check
		pass      bool
		probeWant string
	}{
		{"in the environment", inEnv, true, "ok banner -> " + tree.dir},
		{"without the worktree first", bare, false, "OUTSIDE banner -> " + kept.dir},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runner.Run(context.Background(), tree.dir, []validate.Check{tc.check, ProbeCheck(tc.check, Packages(tree.dir))})
			t.Logf("tests: %s; probe: %s", res[0].Summary, strings.TrimSpace(res[1].Output))
			if res[0].Passed != tc.pass || res[0].Tests != 1 {
				t.Errorf("the fixed worktree's test passed = %v (%d tests); want %v\n%s", res[0].Passed, res[0].Tests, tc.pass, res[0].Output)
			}
			if res[1].Passed != tc.pass || !strings.Contains(res[1].Output, filepath.Clean(tc.probeWant)) {
				t.Errorf("probe passed = %v, output %q; want %v with %q", res[1].Passed, res[1].Output, tc.pass, tc.probeWant)
			}
		})
	}
}

// A src/ layout installed editable (`pip install -e .`, the finder pointing at the build's
// copy) runs its checks against the worktree's src/, and the probe finds it there.
func TestEditableSrcLayoutUsesTheWorktree(t *testing.T) {
	needVenv(t)
	t.Parallel()
	bu := setup(t)
	base := map[string]string{
		"setup.py":              "from setuptools import setup, find_packages\nsetup(name='tally', version='1.0', package_dir={'': 'src'}, packages=find_packages('src'))\n",
		"requirements.txt":      "shinyfmt==1.0\n",
		"src/tally/__init__.py": "def total(xs):\n    return sum(xs) + 1  # BUG\n",
		"tests/test_tally.py":   "from tally import total\n\n\ndef test_total():\n    assert total([1, 2]) == 3\n",
		"tests/conftest.py":     "",
	}
	src := writeFixture(t, t.TempDir(), base)
	r := bu.recipe()
	r.Commands = append(r.Commands, `"$ENV/bin/python" -m pip install -q --no-index --no-build-isolation --no-deps -e .`)
	env, err := bu.b.Ensure(t.Context(), Request{Repo: "tally", Source: src.dir, Files: src.files, Recipe: r, NeedPython: true})
	if err != nil {
		t.Fatal(err)
	}
	fixed := map[string]string{}
	for k, v := range base {
		fixed[k] = v
	}
	fixed["src/tally/__init__.py"] = "def total(xs):\n    return sum(xs)\n"
	tree := writeFixture(t, t.TempDir(), fixed)
	check := validate.Check{Name: "tests", Kind: validate.KindPytest, Python: env.Python, EnvDir: env.Dir}
	res := (&validate.Runner{Sandbox: bu.b.Sandbox}).Run(context.Background(), tree.dir, []validate.Check{check, ProbeCheck(check, Packages(tree.dir))})
	if !res[0].Passed || res[0].Tests != 1 {
		t.Errorf("the fixed worktree's test: passed %v, %d tests; want the worktree's src/ imported\n%s", res[0].Passed, res[0].Tests, res[0].Output)
	}
	if want := "ok tally -> " + filepath.Join(tree.dir, "src", "tally"); !res[1].Passed || !strings.Contains(res[1].Output, want) {
		t.Errorf("probe: passed %v, %q; want %q", res[1].Passed, res[1].Output, want)
	}
}

// A setuptools project keeping its packages in lib/ (setup.cfg's package_dir = =lib, PyYAML's
// layout): the checks put lib/ on PYTHONPATH, and the probe looks for lib's packages, found
// there in the worktree; it used to look at the root and src/ only, found no package and
// proved nothing.
func TestProbeFindsPackageDirPackages(t *testing.T) {
	for _, tc := range []struct{ name, file, content string }{
		{"setup.cfg", "setup.cfg", "[metadata]\nname = yamlish\n\n[options]\npackage_dir =\n    =lib\npackages = find:\n\n[options.packages.find]\nwhere = lib\n"},
		{"setup.py", "setup.py", "from setuptools import setup\nsetup(name='yamlish', package_dir={'': 'lib'}, packages=['yamlish'])\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tree := writeFixture(t, t.TempDir(), map[string]string{
				tc.file:                   tc.content,
				"lib/yamlish/__init__.py": "def load(s):\n    return s\n",
				"tests/test_load.py":      "from yamlish import load\n\n\ndef test_load():\n    assert load('a') == 'a'\n",
			})
			pkgs := Packages(tree.dir)
			if !slices.Equal(pkgs, []string{"yamlish"}) {
				t.Fatalf("Packages = %q; want [yamlish] from lib/", pkgs)
			}
			like := validate.Check{Name: "tests", Kind: validate.KindPytest}
			res := (&validate.Runner{Sandbox: sandbox.ModeNone}).Run(context.Background(), tree.dir, []validate.Check{ProbeCheck(like, pkgs)})
			if want := "ok yamlish -> " + filepath.Join(tree.dir, "lib", "yamlish"); !res[0].Passed || !strings.Contains(res[0].Output, want) {
				t.Errorf("probe: passed %v, %q; want %q", res[0].Passed, res[0].Output, want)
			}
		})
	}
}
