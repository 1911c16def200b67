package daemon

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/pipeline/discover"
	"github.com/ticketd/ticketd/pipeline/envsetup"
	"github.com/ticketd/ticketd/pipeline/envsetup/envtest"
	"github.com/ticketd/ticketd/pipeline/sandbox"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/store"
)

// bannerRepo: a package whose tests import a third-party package (shinyfmt) that only its
// recipe installs, from a local wheelhouse, with the project itself installed editable.
func bannerRepo(t *testing.T, root, pin string) realRepo {
	t.Helper()
	r := realRepo{name: "banner", path: filepath.Join(root, "banner"), title: "Banners lose their frame"}
	writeRepo(t, r.path, map[string]string{
		"setup.py":             "from setuptools import setup\nsetup(name='banner', version='1.0', packages=['banner'])\n",
		"requirements.txt":     "shinyfmt==" + pin + "\n",
		"banner/__init__.py":   "from shinyfmt import shout\n\n\ndef banner(s):\n    return shout(s)\n",
		"tests/test_banner.py": "import shinyfmt\nfrom banner import banner\n\n\ndef test_shout():\n    assert shinyfmt.shout('a') == 'A!'\n\n\ndef test_banner():\n    assert 'HI!' in banner('hi')\n",
	})
	r.patch = fixPatch(t, r.path, map[string][2]string{
		"banner/__init__.py":   {"    return shout(s)\n", "    return '*' + shout(s) + '*'\n"},
		"tests/test_banner.py": {"def test_banner():\n", "def test_banner_framed():\n    assert banner('hi') == '*HI!*'\n\n\ndef test_banner():\n"},
	})
	return r
}

// envConfig is realConfig with the repository's recipe: a virtualenv that sees the system's
// pytest, the requirements from the wheelhouse, the project editable.
func envConfig(t *testing.T, root, url, wheels string, r realRepo) config.Config {
	t.Helper()
	cfg := realConfig(t, root, url, r)
	repo := cfg.Repos[r.name]
	repo.Setup = &envsetup.Recipe{Python: envtest.Python, Commands: []string{
		`"$PYTHON" -m venv --without-pip --system-site-packages "$ENV"`,
		`"$ENV/bin/python" -m pip install -q --no-index --find-links ` + wheels + ` -r requirements.txt`,
		`"$ENV/bin/python" -m pip install -q --no-index --no-build-isolation --no-deps -e .`,
	}}
	repo.Python = ""
	for i := range repo.Checks {
		repo.Checks[i].Python = ""
	}
	cfg.Repos[r.name] = repo
	cfg.SandboxPaths = append(cfg.SandboxPaths, wheels)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// bannerNight is the set-up of the environment nights: a real-night test that needs venv, a
// wheelhouse, the banner repository pinning pin (its checks set by edit, when not nil), the
// scripted model replaying its fix, and a config with its recipe. It returns the config,
// the repository and the wheelhouse.
func bannerNight(t *testing.T, pin string, edit func(*realRepo)) (config.Config, realRepo, string) {
	t.Helper()
	realNight(t)
	envtest.NeedVenv(t)
	root := t.TempDir()
	wheels := wheelhouse(t, root)
	r := bannerRepo(t, root, pin)
	if edit != nil {
		edit(&r)
	}
	url := scriptedServer(t, []scriptedmodel.Case{{Match: r.title, Patch: r.patch}})
	return envConfig(t, root, url, wheels, r), r, wheels
}

func wheelhouse(t *testing.T, root string) string {
	t.Helper()
	dir := filepath.Join(root, "wheels")
	envtest.WriteWheel(t, dir, "shinyfmt", "1.0", map[string]string{"__init__.py": "def shout(s):\n    return s.upper() + '!'\n"})
	return dir
}

func noteWith(t *testing.T, st *store.Store, id int64, want string) string {
	t.Helper()
	events, _ := st.Events(context.Background(), id)
	for _, e := range events {
		if e.Kind == "note" && strings.Contains(e.Reason, want) {
			return e.Reason
		}
	}
	return ""
}

// A repository whose tests need a package only its recipe installs is fixed; the next night
// reuses the environment; a changed requirements file rebuilds it once, then it is reused.
func TestEnvRecipeNight(t *testing.T) {
	t.Parallel()
	cfg, r, _ := bannerNight(t, "1.0", nil)

	n := runNight(t, cfg, 0)
	tk := ticketByRepo(t, n.store, r.name)
	if all, ok := submits(t, n.store, tk.ID); tk.State != store.StateDone || all != 1 || ok != 1 {
		t.Fatalf("ticket %s (%s) after %d submit(s), %d accepted; want done in one", tk.State, tk.Reason, all, ok)
	}
	if note := noteWith(t, n.store, tk.ID, "built tonight"); note == "" {
		t.Errorf("no baseline note names the environment")
	} else {
		t.Logf("baseline note: %s", note)
	}
	envs := environments(t, n.store)
	if len(envs) != 1 || !envs[0].OK || envs[0].Cached || envs[0].Key == "" {
		t.Fatalf("environments after night 1: %+v", envs)
	}
	first := envs[0]
	t.Logf("night 1: cold setup %s", first.Took)

	// Each later night works the ticket again (requeued), so the repository has open work.
	again := func(label string) store.Environment {
		t.Helper()
		if err := n.store.RequeueTicket(context.Background(), tk.ID, "test", store.RequeueOptions{Note: label, Done: true}); err != nil {
			t.Fatal(err)
		}
		runNight(t, cfg, 0)
		if got := ticketByRepo(t, n.store, r.name); got.State != store.StateDone {
			t.Fatalf("%s: ticket %s (%s); want done", label, got.State, got.Reason)
		}
		return environments(t, n.store)[0]
	}
	if e := again("night 2"); !e.Cached || e.Key != first.Key {
		t.Errorf("night 2, nothing changed: %+v; want the environment %s reused", e, first.Key)
	}
	write(t, filepath.Join(r.path, "requirements.txt"), "# pinned for the release\nshinyfmt==1.0\n")
	git(t, r.path, "commit", "-qam", "requirements: a comment")
	rebuilt := again("night 3")
	if rebuilt.Cached || rebuilt.Key == first.Key {
		t.Errorf("night 3, requirements changed: %+v; want a rebuild under a new key", rebuilt)
	}
	if e := again("night 4"); !e.Cached || e.Key != rebuilt.Key {
		t.Errorf("night 4: %+v; want the rebuilt environment %s reused", e, rebuilt.Key)
	}
	if dirs, _ := os.ReadDir(filepath.Join(cfg.Workspace, EnvsDir, r.name)); len(dirs) < 2 {
		t.Errorf("envs folder holds %d entries; want both keys until gc", len(dirs))
	}
}

// A failing recipe pauses the repository for the night: no attempt charged, the output on
// the ticket's note and in the store, the night partial with the reason.
func TestEnvRecipeFailurePausesRepository(t *testing.T) {
	t.Parallel()
	cfg, r, _ := bannerNight(t, "9.9", nil) // 9.9 is not in the wheelhouse
	n := runNight(t, cfg, 0)
	tk := ticketByRepo(t, n.store, r.name)
	if tk.State != store.StateQueued || tk.Attempts != 0 {
		t.Errorf("ticket %s after %d attempt(s); want queued, uncharged", tk.State, tk.Attempts)
	}
	if note := noteWith(t, n.store, tk.ID, "environment setup of banner failed"); !strings.Contains(note, "shinyfmt==9.9") {
		t.Errorf("the ticket's note lacks the failure and pip's output: %q", note)
	}
	envs := environments(t, n.store)
	if len(envs) != 1 || envs[0].OK || !strings.Contains(envs[0].Output, "shinyfmt==9.9") {
		t.Errorf("environments: %+v; want the failure with its output", envs)
	}
	if n.rep.Outcome != store.OutcomePartial || !strings.Contains(n.rep.Error, "environment setup of banner failed") {
		t.Errorf("night %s: %s; want partial, naming the failed setup", n.rep.Outcome, n.rep.Error)
	}
	// What is missing and what to do are in the error itself, where ticketctl envs and the
	// night's outcome show it, not only in the output's last lines.
	envErr := ""
	if len(envs) == 1 {
		envErr = envs[0].Error
	}
	for _, want := range []string{"pip found no distribution of shinyfmt==9.9", "add its wheel to the wheelhouse"} {
		if !strings.Contains(n.rep.Error, want) || !strings.Contains(envErr, want) {
			t.Errorf("night's error %q, ticketctl envs' %q; want both to say %q", n.rep.Error, envErr, want)
		}
	}
}

func environments(t *testing.T, st *store.Store) []store.Environment {
	t.Helper()
	envs, err := st.Environments(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return envs
}

// An environment that lacks the checks' tool (a recipe that installs the project but not
// pytest) pauses the repository with no ticket charged, and the hint points at the recipe,
// the only place the fix can go: with a recipe, python: and a .venv in the clone are not
// where the checks' interpreter comes from.
func TestEnvWithoutTheTestToolNamesTheRecipe(t *testing.T) {
	t.Parallel()
	cfg, r, wheels := bannerNight(t, "1.0", nil)
	repo := cfg.Repos[r.name]
	repo.Setup.Commands = []string{
		`"$PYTHON" -m venv --without-pip "$ENV"`, // no system site-packages: no pytest
		`"$PYTHON" -m pip --python "$ENV/bin/python" install -q --no-index --find-links ` + wheels + ` -r requirements.txt`,
	}
	cfg.Repos[r.name] = repo
	n := runNight(t, cfg, 0)
	tk := ticketByRepo(t, n.store, r.name)
	if tk.State != store.StateQueued || tk.Attempts != 0 {
		t.Errorf("ticket %s after %d attempt(s); want queued, uncharged", tk.State, tk.Attempts)
	}
	note := noteWith(t, n.store, tk.ID, "pytest")
	for _, want := range []string{"repos.banner.setup", `"$ENV/bin/pip" install pytest`} {
		if !strings.Contains(note, want) {
			t.Errorf("the ticket's note %q\nlacks %q", note, want)
		}
	}
	if strings.Contains(note, ".venv") || strings.Contains(note, "set python:") {
		t.Errorf("the ticket's note %q sends the operator to python: or a .venv, which a recipe overrides", note)
	}
}

// recipeHints rewrites only a missing module's hint, only where the checks' interpreter is
// the recipe's environment, and never for a submodule (the project's own compiled extension).
func TestRecipeHints(t *testing.T) {
	t.Parallel()
	const orig = "the original hint"
	recipe := &envsetup.Recipe{Commands: []string{"true"}}
	checks := []validate.Check{{Name: "tests", Kind: validate.KindPytest}, {Name: "types", Kind: validate.KindMypy, Python: "/usr/bin/python3"}}
	for _, tc := range []struct {
		name     string
		repo     config.Repo
		problem  validate.Problem
		rewrites bool
	}{
		{"tool missing from the environment", config.Repo{Setup: recipe, Checks: checks}, validate.Problem{Check: "tests", Missing: "pytest"}, true},
		{"a dependency every test imports", config.Repo{Setup: recipe, Checks: checks}, validate.Problem{Check: "tests", Missing: "yaml"}, true},
		{"no recipe", config.Repo{Checks: checks}, validate.Problem{Check: "tests", Missing: "pytest"}, false},
		{"the repository names python:", config.Repo{Setup: recipe, Python: "/opt/py/bin/python", Checks: checks}, validate.Problem{Check: "tests", Missing: "pytest"}, false},
		{"the check names python:", config.Repo{Setup: recipe, Checks: checks}, validate.Problem{Check: "types", Missing: "mypy"}, false},
		{"a compiled submodule", config.Repo{Setup: recipe, Checks: checks}, validate.Problem{Check: "tests", Missing: "fast._speed"}, false},
		{"nothing missing", config.Repo{Setup: recipe, Checks: checks}, validate.Problem{Check: "tests"}, false},
	} {
		tc.problem.Hint = orig
		got := recipeHints("app", tc.repo, []validate.Problem{tc.problem})[0].Hint
		if rewrote := got != orig; rewrote != tc.rewrites || rewrote && !strings.Contains(got, "repos.app.setup") {
			t.Errorf("%s: hint %q; want rewritten %v, naming repos.app.setup", tc.name, got, tc.rewrites)
		}
	}
}

// A check's tool that only the recipe installs (in $ENV/bin) is no reason to skip the
// repository at start-up: the start-up check cannot look in an environment not built yet,
// so a repository with a recipe has its checks' tools judged at the baseline, in the
// environment. Here the host has no `shinylint`; the environment does, and the night fixes
// the ticket.
func TestEnvToolOnlyInTheEnvironment(t *testing.T) {
	t.Parallel()
	cfg, r, _ := bannerNight(t, "1.0", func(r *realRepo) {
		r.checks = "[{name: tests, kind: pytest}, {name: lint, kind: command, command: [shinylint]}]"
	})
	repo := cfg.Repos[r.name]
	repo.Setup.Commands = append(repo.Setup.Commands, `printf '#!/bin/sh\necho linted\n' > "$ENV/bin/shinylint" && chmod +x "$ENV/bin/shinylint"`)
	cfg.Repos[r.name] = repo
	n := runNight(t, cfg, 0)
	tk := ticketByRepo(t, n.store, r.name)
	if tk.State != store.StateDone {
		events, _ := n.store.Events(context.Background(), tk.ID)
		t.Fatalf("ticket %s (%s); want done with the environment's shinylint\nevents: %+v", tk.State, tk.Reason, events)
	}
}

// An offline recipe's wheelhouse the sandbox does not show (the operator built it beside the
// project and named no sandbox_paths) is said at start-up, with the fix, before the night
// spends a build on it; no ticket is charged.
func TestEnvWheelhouseHiddenFromTheSandbox(t *testing.T) {
	t.Parallel()
	cfg, r, wheels := bannerNight(t, "1.0", nil)
	if cfg.Sandbox != sandbox.ModeBwrap {
		t.Skip("needs the bwrap sandbox (apt-get install -y bubblewrap)")
	}
	cfg.SandboxPaths = slices.DeleteFunc(cfg.SandboxPaths, func(p string) bool { return p == wheels })
	st, err := OpenStore(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d := &Daemon{Config: cfg, Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	_, err = d.RunNight(t.Context(), "test")
	for _, want := range []string{"repos.banner.setup: the wheelhouse " + wheels, "add it to sandbox_paths"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("night: %v; want it to say %q", err, want)
		}
	}
	tk := ticketByRepo(t, st, r.name)
	if tk.State != store.StateQueued || tk.Attempts != 0 {
		t.Errorf("ticket %s after %d attempt(s); want queued, uncharged", tk.State, tk.Attempts)
	}
	if envs := environments(t, st); len(envs) != 0 {
		t.Errorf("environments: %+v; want none built for a recipe refused at start-up", envs)
	}
}

// The hint of a module the checks lack names where the project lists its distribution and
// the pip command that installs what lists it, with the recipe or without: invoke keeps
// pytest-relaxed in pyproject.toml's [dependency-groups] dev, which `pip install -e
// '.[test]'` (the generic advice) never installs.
func TestDependencyHints(t *testing.T) {
	t.Parallel()
	const orig = "the original hint"
	files := map[string]string{
		"pyproject.toml":       "[project]\nname = \"app\"\n\n[project.optional-dependencies]\ntest = [\"pytest-timeout\"]\n\n[dependency-groups]\ndev = [\n  \"pytest-relaxed>=2\",\n]\n",
		"dev-requirements.txt": "icecream>=2.1\npytest-timeout\n",
	}
	deps := discover.ReadDependencies(func(p string) ([]byte, bool) {
		s, ok := files[p]
		return []byte(s), ok
	}, []string{"dev-requirements.txt", "pyproject.toml"})
	recipe := &envsetup.Recipe{Commands: []string{"true"}}
	checks := []validate.Check{{Name: "tests", Kind: validate.KindPytest}}
	for _, tc := range []struct {
		name    string
		repo    config.Repo
		missing string
		want    []string // in the hint; none: the hint is left as it was
	}{
		{"a dependency group", config.Repo{Checks: checks}, "pytest_relaxed",
			[]string{`the tests cannot import pytest_relaxed; the project lists it as "pytest-relaxed>=2" in pyproject.toml's [dependency-groups] dev`, ".venv/bin/pip install -e . --group dev (pip 25.1 or later reads --group)"}},
		{"a requirements file", config.Repo{Checks: checks}, "icecream",
			[]string{`"icecream>=2.1" in dev-requirements.txt`, ".venv/bin/pip install -r dev-requirements.txt"}},
		{"an extra, and a file too", config.Repo{Checks: checks}, "pytest_timeout",
			[]string{"[project.optional-dependencies] test (also in dev-requirements.txt)", "pip install -e '.[test]'"}},
		{"the repository names python:", config.Repo{Python: "/opt/py/bin/python", Checks: checks}, "pytest_relaxed",
			[]string{"/opt/py/bin/python -m pip install -e . --group dev"}},
		{"the recipe's environment", config.Repo{Setup: recipe, Checks: checks}, "pytest_relaxed",
			[]string{"environment of repos.app.setup, which lacks the module pytest_relaxed", "add `\"$ENV/bin/pip\" install -e . --group dev`"}},
		{"listed nowhere", config.Repo{Checks: checks}, "yaml", nil},
		{"nothing missing", config.Repo{Checks: checks}, "", nil},
	} {
		p := validate.Problem{Check: "tests", Missing: tc.missing, Hint: orig}
		got := dependencyHints("app", tc.repo, deps, []validate.Problem{p})[0].Hint
		if len(tc.want) == 0 {
			if got != orig {
				t.Errorf("%s: hint %q, want it left as it was", tc.name, got)
			}
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: hint %q lacks %q", tc.name, got, w)
			}
		}
	}
}
