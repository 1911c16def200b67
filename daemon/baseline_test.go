package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/pipeline/discover"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/worktree"
)

// countingChecks runs the real checks and counts the whole-suite runs (no Only selection) of
// the repository's configured checks; the night's sandbox probe is not one.
type countingChecks struct {
	inner *validate.Runner
	mu    sync.Mutex
	full  int
}

func (c *countingChecks) Run(ctx context.Context, dir string, checks []validate.Check) []validate.Result {
	c.mu.Lock()
	for _, ch := range checks {
		if len(ch.Only) == 0 && ch.Name != sandboxProbeName {
			c.full++
			break
		}
	}
	c.mu.Unlock()
	return c.inner.Run(ctx, dir, checks)
}

func (c *countingChecks) Preflight(ctx context.Context, dir string, ch validate.Check, seen *validate.Probed) error {
	return c.inner.Preflight(ctx, dir, ch, seen)
}

// The second night at an unchanged base commit reuses the baseline the first night kept in
// the database: it runs no whole-suite check beyond the attempt's own, and the ticket's
// history says the baseline was reused. A third night with a changed checks configuration
// computes it again (the negative control).
func TestBaselineKeptAcrossNights(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	f := newFixture(t, 3)
	_, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
	issues := f.issues
	nights := []struct {
		name       string
		issue      string
		edit       func(cfg *config.Config)
		wantFull   int // whole-suite runs: the baseline's (if computed) and one per submit
		wantReused bool
	}{
		{"first night computes", "00.md", nil, 2, false},
		{"second night at the same base reuses", "01.md", nil, 1, true},
		{"changed checks compute again", "02.md", func(cfg *config.Config) { cfg.Repos["shop"].Checks[0].Timeout *= 2 }, 2, false},
	}
	// Each night sees one more issue: move the others aside.
	all, _ := filepath.Glob(filepath.Join(issues, "*.md"))
	hidden := filepath.Join(f.dir, "hidden")
	for _, p := range all {
		move(t, p, filepath.Join(hidden, filepath.Base(p)))
	}
	for _, n := range nights {
		move(t, filepath.Join(hidden, n.issue), filepath.Join(issues, n.issue))
		cfg := f.config(t, url, 1)
		if n.edit != nil {
			n.edit(&cfg)
		}
		st, err := OpenStore(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		checks := &countingChecks{inner: checkRunner(cfg, "", slog.New(slog.NewTextHandler(io.Discard, nil)))}
		d := &Daemon{Config: cfg, Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Checks: checks}
		rep, err := d.RunNight(context.Background(), "test")
		if err != nil {
			t.Fatalf("%s: night: %v", n.name, err)
		}
		tickets, err := st.List(context.Background(), store.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		var notes []string
		for _, tk := range tickets {
			events, _ := st.Events(context.Background(), tk.ID)
			for _, e := range events {
				if e.Kind == "note" && strings.HasPrefix(e.Reason, "baseline of shop") && e.At.After(rep.Started.Add(-1)) {
					notes = append(notes, e.Reason)
				}
			}
		}
		st.Close()
		t.Logf("%s: whole-suite runs %d, baseline notes %q", n.name, checks.full, notes)
		if checks.full != n.wantFull {
			t.Errorf("%s: %d whole-suite check runs; want %d", n.name, checks.full, n.wantFull)
		}
		if len(notes) != 1 || strings.Contains(notes[0], "reused") != n.wantReused {
			t.Errorf("%s: baseline notes %q; want one saying reused=%v", n.name, notes, n.wantReused)
		}
	}
}

func move(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

// fixedChecks answers every run with one passing test check, without running anything.
type fixedChecks struct{}

func (fixedChecks) Run(_ context.Context, _ string, checks []validate.Check) []validate.Result {
	out := make([]validate.Result, len(checks))
	for i, c := range checks {
		out[i] = validate.Result{Name: c.Name, Kind: c.Kind, Passed: true, Tests: 1, Summary: "1 passed"}
	}
	return out
}

// TestBaselineSaveFailureIsLogged: a baseline the database does not take is said in the
// log (the night goes on with it in memory). The save error once went to a variable scoped
// to its if, so nothing was logged (staticcheck SA4006).
func TestBaselineSaveFailureIsLogged(t *testing.T) {
	f := newFixture(t, 1)
	st, err := store.Open(context.Background(), filepath.Join(f.dir, "t.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st.Close() // every load and save now fails
	var logs syncBuffer
	b := newBaselines(fixedChecks{}, st, slog.New(slog.NewTextHandler(&logs, nil)))
	trees := worktree.NewManager(filepath.Join(f.dir, "work"), nil)
	tree, err := trees.Prepare(context.Background(), f.repo, "main", "ticketd/1-x")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { trees.Remove(context.Background(), tree, false) })
	repo := config.Repo{Path: f.repo, BaseRef: "main", Checks: []validate.Check{{Name: "tests", Kind: validate.KindPytest}}}
	if _, err := b.get(context.Background(), repo, tree); err != nil {
		t.Fatalf("baseline: %v", err)
	}
	if !strings.Contains(logs.String(), "keep baseline") || !strings.Contains(logs.String(), "closed") {
		t.Errorf("log lacks the failed save:\n%s", logs.String())
	}
}

// The baseline note names the test files that could not import at the base and what they
// lacked: in the report they are only lines among the base's failures, and
// packaging's version tests (without pretend) gating nothing is the operator's to know.
func TestBaselineNotesMissingImports(t *testing.T) {
	collect := func(file, module string) validate.Finding {
		return validate.Finding{File: file, Test: file + "::" + strings.ReplaceAll(strings.TrimSuffix(file, ".py"), "/", "."),
			Message: "ModuleNotFoundError: No module named '" + module + "' (collection failure)"}
	}
	for _, tc := range []struct {
		name    string
		results []validate.Result
		files   []string // the base's
		want    []string
	}{
		{"none", []validate.Result{{Name: "tests", Kind: validate.KindPytest, Findings: []validate.Finding{
			{File: "tests/test_a.py", Test: "tests/test_a.py::test_x", Message: "ModuleNotFoundError: No module named 'late'"},
		}}}, nil, []string{}},
		{"some modules", []validate.Result{{Name: "tests", Kind: validate.KindPytest, Notes: []string{"src/ put on PYTHONPATH"}, Findings: []validate.Finding{
			collect("tests/test_manylinux.py", "pretend"), collect("tests/test_musllinux.py", "pretend"),
			collect("tests/test_tags.py", "pretend"), collect("tests/test_version.py", "pretend"),
			collect("tests/test_pylock.py", "tomli_w"),
		}}}, nil, []string{
			"checks tests: src/ put on PYTHONPATH",
			"check tests: 5 test file(s) fail to import at the base commit, so their tests cannot gate a fix; missing: pretend (tests/test_manylinux.py, tests/test_musllinux.py, tests/test_tags.py and 1 more); tomli_w (tests/test_pylock.py); install these for the checks' interpreter (a repos.<name>.setup recipe, docs/environments.md)",
		}},
		{"not a pytest check", []validate.Result{{Name: "types", Kind: validate.KindMypy, Findings: []validate.Finding{collect("tests/test_a.py", "x")}}}, nil, []string{}},
		// platformdirs: most tests take pytest-mock's mocker, which is not installed.
		{"fixtures nothing provides", []validate.Result{{Name: "tests", Kind: validate.KindPytest, Findings: []validate.Finding{
			{File: "tests/test_unix.py", Test: "tests/test_unix.py::test_a[1]", Message: "failed on setup: fixture 'mocker' not found"},
			{File: "tests/test_unix.py", Test: "tests/test_unix.py::test_a[2]", Message: "failed on setup: fixture 'mocker' not found"},
			{File: "tests/test_macos.py", Test: "tests/test_macos.py::test_b", Message: "failed on setup: fixture 'mocker' not found"},
			{File: "tests/test_api.py", Test: "tests/test_api.py::test_c", Message: "failed on setup: fixture 'ticketd_fixture' not found"},
			{File: "tests/test_api.py", Test: "tests/test_api.py::test_d", Message: "AssertionError: fixture 'late' not found\nin the second line"},
		}}}, nil, []string{
			"check tests: 4 test(s) error at setup at the base commit, so they cannot gate a fix; no conftest.py or installed plugin provides the fixture: mocker, 3 test(s) in tests/test_unix.py, tests/test_macos.py (a fixture of pytest-mock); ticketd_fixture, 1 test(s) in tests/test_api.py; install the plugins that define these for the checks' interpreter (a repos.<name>.setup recipe, docs/environments.md)",
		}},
		// bitarray: the package's extension (bitarray/_bitarray.c) is built by setup.py; no
		// install puts it into the worktree, so the note does not send the operator to install it.
		{"the repository's own extension", []validate.Result{{Name: "tests", Kind: validate.KindPytest, Findings: []validate.Finding{
			collect("bitarray/test_bitarray.py", "bitarray._bitarray"), collect("bitarray/test_util.py", "bitarray._bitarray"),
		}}}, []string{"bitarray/__init__.py", "bitarray/_bitarray.c", "bitarray/util.py", "setup.py"}, []string{
			"check tests: 2 test file(s) fail to import at the base commit, so their tests cannot gate a fix; missing: bitarray._bitarray (bitarray/test_bitarray.py, bitarray/test_util.py), the repository's own compiled extension (bitarray/_bitarray.c), which ticketd does not build into the checks' worktrees (docs/environments.md, Limits)",
		}},
		// docutils: sandbox/ holds Python 2 test files (StringIO, `from __init__ import`) and
		// ones importing modules kept in another folder of the repository; none of these is
		// an install away, only tomli_w is.
		{"modules no install brings", []validate.Result{{Name: "tests", Kind: validate.KindPytest, Findings: []validate.Finding{
			collect("sandbox/old/test_io.py", "StringIO"), collect("sandbox/old/test_fn.py", "__init__"),
			collect("sandbox/docbook/test/test_all.py", "docutils_to_docbook"), collect("sandbox/xml/test/test_parse.py", "docutils_xml"),
			collect("tests/test_pylock.py", "tomli_w"),
		}}}, []string{"docutils/parsers/docutils_xml.py", "sandbox/docbook/scripts/docutils_to_docbook.py", "sandbox/xml/docutils_xml/__init__.py", "tests/test_pylock.py"}, []string{
			"check tests: 5 test file(s) fail to import at the base commit, so their tests cannot gate a fix; missing: StringIO (sandbox/old/test_io.py), a module of Python 2's standard library that Python 3 has not: those files are Python 2 code, which no install makes importable; " +
				"__init__ (sandbox/old/test_fn.py), Python 2's implicit relative import of the package's __init__.py: those files are Python 2 code, which no install makes importable; " +
				"docutils_to_docbook (sandbox/docbook/test/test_all.py), a module of the repository (sandbox/docbook/scripts/docutils_to_docbook.py) that is not on the path those tests run with, which no install brings; " +
				"docutils_xml (sandbox/xml/test/test_parse.py), a module of the repository (sandbox/xml/docutils_xml/__init__.py) that is not on the path those tests run with, which no install brings; " +
				"tomli_w (tests/test_pylock.py); install the others for the checks' interpreter (a repos.<name>.setup recipe, docs/environments.md)",
		}},
		{"only Python 2 modules", []validate.Result{{Name: "tests", Kind: validate.KindPytest, Findings: []validate.Finding{
			collect("sandbox/old/test_io.py", "cStringIO"),
		}}}, nil, []string{
			"check tests: 1 test file(s) fail to import at the base commit, so their tests cannot gate a fix; missing: cStringIO (sandbox/old/test_io.py), a module of Python 2's standard library that Python 3 has not: those files are Python 2 code, which no install makes importable",
		}},
		// A module named like one of Python 2's that the repository holds is the
		// repository's, not Python 2's.
		{"own module named like Python 2's", []validate.Result{{Name: "tests", Kind: validate.KindPytest, Findings: []validate.Finding{
			collect("tools/tests/test_cli.py", "commands"),
		}}}, []string{"tools/commands/__init__.py", "tools/tests/test_cli.py"}, []string{
			"check tests: 1 test file(s) fail to import at the base commit, so their tests cannot gate a fix; missing: commands (tools/tests/test_cli.py), a module of the repository (tools/commands/__init__.py) that is not on the path those tests run with, which no install brings",
		}},
		// asgiref: its tests are `async def` tests written for pytest-asyncio, not installed.
		{"async tests without an async plugin", []validate.Result{{Name: "tests", Kind: validate.KindPytest,
			AsyncSkips: []string{"tests/test_sync.py::test_a", "tests/test_sync.py::test_b", "tests/test_wsgi.py::test_c"}}}, nil, []string{
			"check tests: 3 test(s) are `async def` tests that pytest skips at the base commit because the checks' interpreter has no async plugin (pytest-asyncio, anyio, ...), so they never run and gate no fix (tests/test_sync.py, tests/test_wsgi.py); install the plugin the project's tests use for the checks' interpreter (a repos.<name>.setup recipe, docs/environments.md)",
		}},
	} {
		if got := baselineNotes(tc.results, tc.files, nil, nil); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s: baselineNotes =\n%q\nwant\n%q", tc.name, got, tc.want)
		}
	}
}

// A test file that cannot import a dependency the project lists is named with where it is
// listed and the pip command that installs it: mako's tests lack markupsafe, a dependency of
// the project itself, which `pip install -e .` brings.
func TestImportNoteNamesDeclaredDependency(t *testing.T) {
	collect := func(file, module string) validate.Finding {
		return validate.Finding{File: file, Test: file + "::" + strings.ReplaceAll(strings.TrimSuffix(file, ".py"), "/", "."),
			Message: "ModuleNotFoundError: No module named '" + module + "' (collection failure)"}
	}
	deps := discover.ReadDependencies(func(p string) ([]byte, bool) {
		return []byte("[project]\nname = \"Mako\"\ndependencies = [\n    \"MarkupSafe>=0.9.2\",\n]\n"), p == "pyproject.toml"
	}, nil)
	r := validate.Result{Name: "tests", Kind: validate.KindPytest, Findings: []validate.Finding{
		collect("test/test_filters.py", "markupsafe"), collect("test/test_cache.py", "markupsafe"), collect("test/test_babel.py", "babel"),
	}}
	got := strings.Join(baselineNotes([]validate.Result{r}, []string{"pyproject.toml", "test/test_filters.py"}, nil, deps), "\n")
	const want = "check tests: 3 test file(s) fail to import at the base commit, so their tests cannot gate a fix; missing: markupsafe (test/test_filters.py, test/test_cache.py), listed as \"MarkupSafe>=0.9.2\" in pyproject.toml's project dependencies (pip install -e .); babel (test/test_babel.py); install these for the checks' interpreter (a repos.<name>.setup recipe, docs/environments.md)"
	if got != want {
		t.Errorf("baselineNotes =\n%q\nwant\n%q", got, want)
	}
}

// A missing module that is a compiled extension of the repository's own package is named as
// such, not as a dependency to install: the checks import the package from the worktree.
func TestExtensionHints(t *testing.T) {
	for _, tt := range []struct {
		name    string
		files   []string
		missing string
		want    string // the source named in the hint; "" for the hint left as it was
	}{
		{"package extension in C", []string{"bitarray/__init__.py", "bitarray/_bitarray.c", "setup.py"}, "bitarray._bitarray", "bitarray/_bitarray.c"},
		{"src/ layout, Cython", []string{"src/fastx/__init__.py", "src/fastx/_speed.pyx"}, "fastx._speed", "src/fastx/_speed.pyx"},
		{"CPython's spelling", []string{"pkg/__init__.py", "pkg/_coremodule.c"}, "pkg._core", "pkg/_coremodule.c"},
		{"a Python module of that name is there", []string{"pkg/__init__.py", "pkg/_core.py", "pkg/_core.c"}, "pkg._core", ""},
		{"a dependency's submodule", []string{"app/__init__.py", "app/main.py"}, "yaml._yaml", ""},
		{"a top-level module", []string{"pvectorcmodule.c", "pyrsistent/__init__.py"}, "pvectorc", ""},
		{"nothing missing", []string{"pkg/__init__.py", "pkg/_core.c"}, "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := validate.Problem{Check: "tests", Reason: "every one of the 2 collected tests errors at the base commit", Hint: "generic", Missing: tt.missing}
			got := extensionHints(tt.files, nil, []validate.Problem{p})
			if tt.want == "" {
				if got[0].Hint != p.Hint {
					t.Errorf("hint = %q, want it left as %q", got[0].Hint, p.Hint)
				}
				return
			}
			if !strings.Contains(got[0].Hint, "compiled extension of the repository's own package, built from "+tt.want) || strings.Contains(got[0].Hint, "PYTHONPATH") {
				t.Errorf("hint = %q, want it to name %s as the repository's own extension, without a PYTHONPATH remedy", got[0].Hint, tt.want)
			}
		})
	}
}

// A unittest check that collects nothing at the base is told where the test modules are when
// discovery from the root cannot enter their folder (typing_extensions: src/test_*.py).
func TestUnittestStartHints(t *testing.T) {
	noTests := validate.Problem{Check: "tests", Command: []string{"python3", "-m", "unittest", "discover", "-v"},
		Reason: "the test run at the base commit collected no test", Hint: "generic"}
	pytestNoTests := validate.Problem{Check: "tests", Command: []string{"python3", "-m", "pytest"},
		Reason: "the test run at the base commit collected no test (and `python -m unittest discover` found none either)", Hint: "generic"}
	for _, tt := range []struct {
		name    string
		files   []string
		problem validate.Problem
		want    string // in the hint; "" for the hint left as it was
	}{
		{"src beside the code", []string{"src/typing_extensions.py", "src/test_typing_extensions.py", "src/_helper.py", "pyproject.toml"},
			noTests, "the test modules are in src, which unittest's discovery from the repository root does not enter (no __init__.py on the way): name the start folder in the check's command (command: [python3, -m, unittest, discover, -s, src])"},
		{"tests without __init__ first, then by count", []string{"docs/test_conf.py", "tests/test_a.py", "tests/test_b.py", "app/__init__.py"},
			noTests, "in tests, docs, which"},
		{"below a package", []string{"pkg/__init__.py", "pkg/tests/test_a.py"}, noTests, "in pkg/tests,"},
		{"reachable packages: nothing to name", []string{"pkg/__init__.py", "pkg/test_a.py", "test_root.py"}, noTests, ""},
		{"hidden folders are not tests", []string{".venv/lib/test_x.py"}, noTests, ""},
		{"a pytest check keeps its hint", []string{"src/test_x.py"}, pytestNoTests, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := unittestStartHints(tt.files, []validate.Problem{tt.problem})
			if tt.want == "" {
				if got[0].Hint != tt.problem.Hint {
					t.Errorf("hint = %q, want it left as %q", got[0].Hint, tt.problem.Hint)
				}
				return
			}
			if !strings.Contains(got[0].Hint, tt.want) {
				t.Errorf("hint = %q, want it to contain %q", got[0].Hint, tt.want)
			}
		})
	}
}

// versionedChecks is fixedChecks that tells each pytest check's version as the night's
// probes found it, and counts the asks.
type versionedChecks struct {
	fixedChecks
	version string
	asked   int
}

func (v *versionedChecks) PytestVersion(_ context.Context, _ string, _ validate.Check, seen *validate.Probed) string {
	if seen == nil {
		return "" // not the night's probes
	}
	v.asked++
	return v.version
}

// The baseline reads the repository's tests as the checks' own pytest reads them: pytest
// < 9 ignores pyproject.toml's [tool.pytest] (attrs, on pytest 7.2.1, collected bench/ while
// ticketd believed testpaths = tests), pytest 9 reads it. The version rides on the checks
// the attempts run, and leaves the checks' hash (a kept baseline) alone.
func TestBaselineTestsFollowPytestVersion(t *testing.T) {
	f := newFixture(t, 1)
	write(t, filepath.Join(f.repo, "pyproject.toml"), "[project]\nname = \"shop\"\n\n[tool.pytest]\ntestpaths = [\"tests\"]\n")
	git(t, f.repo, "add", "-A")
	git(t, f.repo, "commit", "-q", "-m", "native pytest table")
	trees := worktree.NewManager(filepath.Join(f.dir, "work"), nil)
	repo := config.Repo{Path: f.repo, BaseRef: "main", Checks: []validate.Check{{Name: "tests", Kind: validate.KindPytest}}}
	for i, tt := range []struct {
		version string
		paths   string
	}{
		{"7.2.1", ""},
		{"9.0.1", "tests"},
		{"", "tests"}, // not known: the newest pytest's reading
	} {
		b := newBaselines(fixedChecks{}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
		runner := &versionedChecks{version: tt.version}
		b.versions, b.probed = runner, &validate.Probed{}
		tree, err := trees.Prepare(context.Background(), f.repo, "main", fmt.Sprintf("ticketd/%d-x", i+1))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { trees.Remove(context.Background(), tree, false) })
		facts, err := b.get(context.Background(), repo, tree)
		if err != nil {
			t.Fatalf("baseline: %v", err)
		}
		if got := strings.Join(facts.tests.Paths, " "); got != tt.paths || runner.asked != 1 {
			t.Errorf("pytest %q: testpaths %q after %d asks; want %q after 1 (%s)", tt.version, got, runner.asked, tt.paths, facts.tests.Describe())
		}
		if len(facts.checks) != 1 || facts.checks[0].PytestVersion != tt.version {
			t.Errorf("pytest %q: the gate's checks carry %+v", tt.version, facts.checks)
		}
		if checksHash(repo.Checks) != checksHash(facts.checks) {
			t.Errorf("pytest %q: the version changed the checks' hash", tt.version)
		}
	}
}

// The repository's build files declare its compiled extensions: setup.py's Extension (C,
// pyrsistent's top-level pvectorc) and the Rust builds (maturin's module-name, a pyo3
// crate's library, setuptools-rust's RustExtension or ext-modules). One inside the
// repository's package is named so in the hint, though its source does not carry its name
// (src/lib.rs); a top-level one keeps the hint (a recipe installing the project builds it).
func TestDeclaredExtensions(t *testing.T) {
	for _, tt := range []struct {
		name    string
		files   map[string]string
		missing string
		want    string // what declares missing; "" when nothing does
	}{
		{"setup.py Extension, top-level (pyrsistent)", map[string]string{"setup.py": "from setuptools import setup, Extension\nextensions = [Extension('pvectorc', sources=['pvectorcmodule.c'])]\n",
			"pvectorcmodule.c": "", "pyrsistent/__init__.py": ""}, "pvectorc", "setup.py's Extension(\"pvectorc\")"},
		{"maturin module-name", map[string]string{"pyproject.toml": "[build-system]\nrequires = [\"maturin>=1.0,<2.0\"]\nbuild-backend = \"maturin\"\n\n[tool.maturin]\nmodule-name = \"fastx._core\"\npython-source = \"python\"\n",
			"Cargo.toml": "[package]\nname = \"fastx\"\n\n[dependencies]\npyo3 = { version = \"0.22\", features = [\"extension-module\"] }\n", "src/lib.rs": "", "python/fastx/__init__.py": ""},
			"fastx._core", "pyproject.toml's [tool.maturin] module-name (Rust, built by maturin)"},
		{"maturin without module-name: the crate's library", map[string]string{"pyproject.toml": "[build-system]\nrequires = [\n  \"maturin\",\n]\n",
			"Cargo.toml": "[package]\nname = \"rusty-thing\"\n\n[lib]\nname = \"_rusty\"\ncrate-type = [\"cdylib\"]\n"}, "_rusty", "Cargo.toml's crate (Rust, pyo3)"},
		{"maturin's manifest-path", map[string]string{"pyproject.toml": "[build-system]\nrequires = [\"maturin\"]\n\n[tool.maturin]\nmanifest-path = \"rust/Cargo.toml\"\n",
			"rust/Cargo.toml": "[package]\nname = \"inner\"\n"}, "inner", "rust/Cargo.toml's crate (Rust, pyo3)"},
		{"a pyo3 crate named by its package", map[string]string{"Cargo.toml": "[package]\nname = \"rusty-thing\"\n\n[dependencies.pyo3]\nversion = \"0.22\"\n"}, "rusty_thing", "Cargo.toml's crate (Rust, pyo3)"},
		{"setuptools-rust in setup.py", map[string]string{"setup.py": "from setuptools_rust import RustExtension\nsetup(rust_extensions=[RustExtension(\"pkg._native\", binding=Binding.PyO3)])\n", "pkg/__init__.py": ""},
			"pkg._native", "setup.py's RustExtension(\"pkg._native\") (Rust, setuptools-rust)"},
		{"setuptools-rust in pyproject.toml", map[string]string{"pyproject.toml": "[[tool.setuptools-rust.ext-modules]]\ntarget = \"pkg._lib\"\npath = \"Cargo.toml\"\n", "pkg/__init__.py": ""},
			"pkg._lib", "pyproject.toml's [[tool.setuptools-rust.ext-modules]] (Rust)"},
		{"a Rust crate that is not Python's", map[string]string{"Cargo.toml": "[package]\nname = \"tool\"\n\n[dependencies]\nserde = \"1\"\n"}, "tool", ""},
		{"a dependency, not the declared module", map[string]string{"setup.py": "Extension('pvectorc', sources=[])\n"}, "yaml", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ext := declaredExtensions(func(p string) ([]byte, bool) { s, ok := tt.files[p]; return []byte(s), ok })
			if got := ext[tt.missing]; got != tt.want {
				t.Fatalf("declared %v: %s is declared by %q, want %q", ext, tt.missing, got, tt.want)
			}
			var files []string
			for f := range tt.files {
				files = append(files, f)
			}
			p := validate.Problem{Check: "tests", Reason: "every one of the 2 collected tests errors at the base commit", Hint: "generic", Missing: tt.missing}
			got := extensionHints(files, ext, []validate.Problem{p})
			if tt.want == "" || !strings.Contains(tt.missing, ".") {
				if got[0].Hint != p.Hint {
					t.Errorf("declared %v: hint = %q, want it left as %q", ext, got[0].Hint, p.Hint)
				}
				return
			}
			if !strings.Contains(got[0].Hint, "compiled extension of the repository's own package, built from "+tt.want) {
				t.Errorf("declared %v: hint = %q, want it to name %s as the repository's own extension", ext, got[0].Hint, tt.want)
			}
		})
	}
}

// pyrsistent: its vector tests are parametrised over the C extension pvectorc, which
// nothing builds into the worktree, and skip by pytest.importorskip; the baseline note says
// so, where a dependency's importorskip (an optional one) says nothing.
func TestBaselineNotesExtensionSkips(t *testing.T) {
	ext := extensions{"pvectorc": "setup.py's Extension(\"pvectorc\")"}
	files := []string{"pvectorcmodule.c", "pyrsistent/__init__.py", "setup.py", "tests/vector_test.py"}
	for _, tc := range []struct {
		name  string
		skips []validate.ImportSkip
		want  string
	}{
		{"own extension", []validate.ImportSkip{{Module: "pvectorc", Tests: 101, Files: []string{"tests/vector_test.py"}}, {Module: "numpy", Tests: 3, Files: []string{"tests/np_test.py"}}},
			"check tests: 101 test(s) skip at the base commit because the repository's own compiled extension module is not built (pytest.importorskip), so they do not gate a fix: pvectorc, 101 test(s) in tests/vector_test.py (built from setup.py's Extension(\"pvectorc\")); a repos.<name>.setup recipe that installs the project builds a top-level extension where the checks import it from (docs/environments.md)"},
		{"an optional dependency only", []validate.ImportSkip{{Module: "numpy", Tests: 3, Files: []string{"tests/np_test.py"}}}, ""},
	} {
		r := validate.Result{Name: "tests", Kind: validate.KindPytest, ImportSkips: tc.skips}
		got := strings.Join(baselineNotes([]validate.Result{r}, files, ext, nil), "\n")
		if got != tc.want {
			t.Errorf("%s: notes =\n%q\nwant\n%q", tc.name, got, tc.want)
		}
	}
}
