package envsetup

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/pipeline/sandbox"
	"github.com/ticketd/ticketd/pipeline/validate"
)

// fixture is a checkout (a plain folder) and its tracked files.
type fixture struct {
	dir   string
	files []string
}

func writeFixture(t *testing.T, dir string, files map[string]string) fixture {
	t.Helper()
	f := fixture{dir: dir}
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		f.files = append(f.files, rel)
	}
	return f
}

// bundle is a builder over a cache in a temporary folder, with a fake clock.
type bundle struct {
	b      *Builder
	now    atomic.Pointer[time.Time]
	wheels string
}

func setup(t *testing.T) *bundle {
	t.Helper()
	root := t.TempDir()
	bu := &bundle{wheels: filepath.Join(root, "wheels")}
	start := time.Date(2025, 3, 1, 1, 0, 0, 0, time.UTC)
	bu.now.Store(&start)
	bu.b = &Builder{Root: filepath.Join(root, "envs"), Sandbox: testSandbox(t), ReadOnly: []string{bu.wheels},
		ScratchRoot: root, Now: func() time.Time { return *bu.now.Load() }}
	writeWheel(t, bu.wheels, "shinyfmt", "1.0", map[string]string{"__init__.py": "def shout(s):\n    return s.upper() + '!'\n"})
	writeWheel(t, bu.wheels, "shinyfmt", "2.0", map[string]string{"__init__.py": "def shout(s):\n    return s.upper() + '!!'\n"})
	return bu
}

func (bu *bundle) advance(d time.Duration) {
	next := bu.now.Load().Add(d)
	bu.now.Store(&next)
}

// recipe installs requirements.txt from the test's wheelhouse into a virtualenv that sees the
// system's pytest and pip (--without-pip spares the tests ensurepip's seconds; the benchmark
// measures the full recipe).
func (bu *bundle) recipe() Recipe {
	return Recipe{Python: venvPython, Commands: []string{
		`"$PYTHON" -m venv --without-pip --system-site-packages "$ENV"`,
		`"$ENV/bin/python" -m pip install -q --no-index --find-links ` + bu.wheels + ` -r requirements.txt`,
	}}
}

func run(t *testing.T, py string, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(py, args...).CombinedOutput()
	return string(out), err
}

// A recipe installs a third-party package from a local wheelhouse, with real pip; the next
// night reuses the environment; a changed requirements file rebuilds it once; verify_every
// forces a cold rebuild of an unchanged one.
func TestEnsureBuildsCachesAndRebuildsOnInputs(t *testing.T) {
	needVenv(t)
	t.Parallel()
	bu := setup(t)
	src := writeFixture(t, t.TempDir(), map[string]string{"requirements.txt": "shinyfmt==1.0\n", "README.md": "x\n"})
	req := Request{Repo: "app", Source: src.dir, Files: src.files, Recipe: bu.recipe(), NeedPython: true}

	env, err := bu.b.Ensure(t.Context(), req)
	if err != nil {
		t.Fatalf("first build: %v", err)
	}
	if env.Cached || env.Why != "first build" || env.Python != filepath.Join(env.Dir, "bin", "python") {
		t.Fatalf("first build: %+v", env)
	}
	if out, err := run(t, env.Python, "-c", "import shinyfmt, pytest; print(shinyfmt.shout('hi'))"); err != nil || strings.TrimSpace(out) != "HI!" {
		t.Fatalf("the environment's python: %v %q; want shinyfmt 1.0 and pytest importable", err, out)
	}
	t.Logf("cold setup: %s", env.Took)

	bu.advance(24 * time.Hour)
	start := time.Now()
	again, err := bu.b.Ensure(t.Context(), req)
	if err != nil || !again.Cached || again.Key != env.Key || again.Dir != env.Dir {
		t.Fatalf("unchanged inputs next night: %+v, %v; want the cached environment %s", again, err, env.Key)
	}
	t.Logf("cached start: %s", time.Since(start))

	// A changed requirements file is a new key: rebuilt once, then cached again.
	os.WriteFile(filepath.Join(src.dir, "requirements.txt"), []byte("shinyfmt==2.0\n"), 0o644)
	changed, err := bu.b.Ensure(t.Context(), req)
	if err != nil || changed.Cached || changed.Key == env.Key || !strings.Contains(changed.Why, "new key") {
		t.Fatalf("changed requirements: %+v, %v; want a rebuild under a new key", changed, err)
	}
	if out, _ := run(t, changed.Python, "-c", "import shinyfmt; print(shinyfmt.shout('hi'))"); strings.TrimSpace(out) != "HI!!" {
		t.Fatalf("rebuilt environment has %q; want shinyfmt 2.0", out)
	}
	if second, err := bu.b.Ensure(t.Context(), req); err != nil || !second.Cached || second.Key != changed.Key {
		t.Fatalf("after the rebuild: %+v, %v; want it cached", second, err)
	}
	// A README change is no input: same key.
	os.WriteFile(filepath.Join(src.dir, "README.md"), []byte("changed\n"), 0o644)
	if same, err := bu.b.Ensure(t.Context(), req); err != nil || same.Key != changed.Key || !same.Cached {
		t.Fatalf("a README change: %+v, %v; want the same key, cached", same, err)
	}

	bu.advance(DefaultVerifyEvery + time.Hour)
	cold, err := bu.b.Ensure(t.Context(), req)
	if err != nil || cold.Cached || cold.Key != changed.Key || !strings.Contains(cold.Why, "verify_every") {
		t.Fatalf("after verify_every: %+v, %v; want a cold rebuild under the same key", cold, err)
	}
}

// A failing recipe is a BuildError naming the command, its exit and its output; nothing of
// the half-built environment is left to be used.
func TestEnsureFailingRecipe(t *testing.T) {
	needVenv(t)
	t.Parallel()
	bu := setup(t)
	src := writeFixture(t, t.TempDir(), map[string]string{"requirements.txt": "shinyfmt==9.9\n"})
	req := Request{Repo: "app", Source: src.dir, Files: src.files, Recipe: bu.recipe(), NeedPython: true}
	_, err := bu.b.Ensure(t.Context(), req)
	var be *BuildError
	if !errors.As(err, &be) {
		t.Fatalf("err = %v; want a BuildError", err)
	}
	// ticketd check builds no environment: the error must not send the operator there.
	if be.Step != 2 || be.ExitCode == 0 || !strings.Contains(be.Output, "shinyfmt==9.9") || !strings.Contains(err.Error(), "repos.app.setup") ||
		strings.Contains(err.Error(), "ticketd check") || !strings.Contains(err.Error(), "by hand") {
		t.Fatalf("BuildError step %d exit %d, %q\noutput:\n%s", be.Step, be.ExitCode, err, be.Output)
	}
	if all, _ := List(bu.b.Root); len(all) != 0 {
		t.Fatalf("cache after a failed build: %+v; want nothing", all)
	}
	// A recipe that makes no interpreter fails when the checks need one.
	req.Recipe = Recipe{Python: venvPython, Commands: []string{"true"}}
	if _, err := bu.b.Ensure(t.Context(), req); err == nil || !strings.Contains(err.Error(), "$ENV/bin/python") {
		t.Fatalf("no interpreter: %v", err)
	}
}

// Setup sees its pass_env variables (an index token), a check in the same environment never;
// the recipe writes only $ENV, and the network is off unless the recipe asks.
func TestSetupOnlyVariablesAndNetwork(t *testing.T) {
	needVenv(t)
	t.Parallel()
	bu := setup(t)
	if bu.b.Sandbox != "bwrap" {
		t.Skip("needs the bwrap sandbox: network namespaces (apt-get install -y bubblewrap)")
	}
	const token = "setup-only-3f9a1c"
	bu.b.BaseEnv = append(os.Environ(), "INDEX_TOKEN="+token)
	src := writeFixture(t, t.TempDir(), map[string]string{"requirements.txt": "shinyfmt==1.0\n"})
	r := bu.recipe()
	r.PassEnv = []string{"INDEX_TOKEN"}
	r.Commands = append(r.Commands,
		`test "$INDEX_TOKEN" = `+token+` || { echo "setup does not see INDEX_TOKEN"; exit 1; }`,
		// no network: nothing but loopback exists
		`"$ENV/bin/python" -c "import socket; print(sorted(n for _, n in socket.if_nameindex()))" > "$ENV/ifaces"`)
	env, err := bu.b.Ensure(t.Context(), Request{Repo: "app", Source: src.dir, Files: src.files, Recipe: r, NeedPython: true})
	if err != nil {
		t.Fatal(err)
	}
	if ifaces, _ := os.ReadFile(filepath.Join(env.Dir, "ifaces")); strings.TrimSpace(string(ifaces)) != "['lo']" {
		t.Errorf("setup without network: interfaces %q; want loopback only", ifaces)
	}
	// The same variable, offered to a check the way the daemon passes the daemon's
	// environment, is not there.
	tree := writeFixture(t, t.TempDir(), map[string]string{"test_env.py": "import os\n\ndef test_no_token():\n    assert 'INDEX_TOKEN' not in os.environ, os.environ['INDEX_TOKEN']\n"})
	runner := &validate.Runner{Sandbox: bu.b.Sandbox, BaseEnv: bu.b.BaseEnv}
	res := runner.Run(context.Background(), tree.dir, []validate.Check{{Name: "tests", Kind: validate.KindPytest, Python: env.Python, EnvDir: env.Dir}})
	if !res[0].Passed || res[0].Tests != 1 {
		t.Fatalf("check in the environment: %+v\n%s", res[0], res[0].Output)
	}

	r.Network = true
	r.Commands[len(r.Commands)-1] = `"$ENV/bin/python" -c "import socket; print(len(socket.if_nameindex()) > 1 or 'lo only')" > "$ENV/ifaces"`
	env, err = bu.b.Ensure(t.Context(), Request{Repo: "app", Source: src.dir, Files: src.files, Recipe: r, NeedPython: true})
	if err != nil {
		t.Fatal(err)
	}
	host, _ := run(t, venvPython, "-c", "import socket; print(len(socket.if_nameindex()) > 1 or 'lo only')")
	if got, _ := os.ReadFile(filepath.Join(env.Dir, "ifaces")); strings.TrimSpace(string(got)) != strings.TrimSpace(host) {
		t.Errorf("setup with network: sees %q, the host %q", got, host)
	}
}

// What real pip says when the wheelhouse lacks something becomes an error that names it and
// says what to do: a missing dependency, and a build backend a pyproject.toml requires.
func TestEnsureNamesWhatTheWheelhouseLacks(t *testing.T) {
	needVenv(t)
	t.Parallel()
	for _, tc := range []struct {
		name    string
		files   map[string]string
		command string
		want    []string
	}{
		{
			name:    "a dependency",
			files:   map[string]string{"requirements.txt": "--index-url https://index.example.invalid/simple\nshinyfmt==1.0 ; python_version >= '3'\ncolorlib>=2  # for the banners\n"},
			command: `-r requirements.txt`,
			want:    []string{"pip found no distribution of colorlib>=2:", "add its wheel to the wheelhouse", "pip download 'colorlib>=2'", "setup.network: true", "repos.app.setup"},
		},
		{
			name: "a build backend",
			files: map[string]string{
				"pyproject.toml":      "[build-system]\nrequires = [\"hatchling\"]\nbuild-backend = \"hatchling.build\"\n\n[project]\nname = \"app\"\nversion = \"1.0\"\n\n[project.optional-dependencies]\ntest = [\"shinyfmt\"]\n",
				"src/app/__init__.py": "",
			},
			command: `-e '.[test]'`,
			want:    []string{"pip found no distribution of hatchling, a build dependency", "--no-build-isolation", "repos.app.setup"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bu := setup(t)
			src := writeFixture(t, t.TempDir(), tc.files)
			r := bu.recipe()
			r.Commands[1] = `"$ENV/bin/python" -m pip install --no-index --find-links ` + bu.wheels + " " + tc.command
			_, err := bu.b.Ensure(t.Context(), Request{Repo: "app", Source: src.dir, Files: src.files, Recipe: r, NeedPython: true})
			var be *BuildError
			if !errors.As(err, &be) {
				t.Fatalf("err = %v; want a BuildError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q; pip said:\n%s", err, w, be.Output)
				}
			}
		})
	}
}

// A wheelhouse the sandbox does not show is what an operator meets first (it lives beside
// the project, not under /usr): pip ignores the folder and then finds nothing, so the error
// names the folder and sandbox_paths, not the distributions it would have held.
func TestEnsureNamesAWheelhouseTheSandboxHides(t *testing.T) {
	needVenv(t)
	if testSandbox(t) != sandbox.ModeBwrap {
		t.Skip("needs the bwrap sandbox (apt-get install -y bubblewrap)")
	}
	t.Parallel()
	bu := setup(t)
	bu.b.ReadOnly = nil // as configured without sandbox_paths
	src := writeFixture(t, t.TempDir(), map[string]string{"requirements.txt": "shinyfmt==1.0\n"})
	_, err := bu.b.Ensure(t.Context(), Request{Repo: "app", Source: src.dir, Files: src.files, Recipe: bu.recipe(), NeedPython: true})
	var be *BuildError
	if !errors.As(err, &be) {
		t.Fatalf("err = %v; want a BuildError", err)
	}
	for _, w := range []string{"pip could not see the wheelhouse " + bu.wheels, "sandbox_paths"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q\nlacks %q; pip said:\n%s", err, w, be.Output)
		}
	}
	if strings.Contains(err.Error(), "add its wheel") {
		t.Errorf("error %q blames the wheelhouse's content; the wheel is there", err)
	}
}

// ticketd as root runs a recipe as the checks' user, who cannot read a wheel only root may
// (flit and hatchling write theirs 0600): the error names the file and the fix, not the
// distribution.
func TestEnsureNamesAWheelTheChecksUserCannotRead(t *testing.T) {
	needVenv(t)
	if os.Geteuid() != 0 || testSandbox(t) != sandbox.ModeBwrap {
		t.Skip("needs root and the bwrap sandbox: the recipe runs as another user only then")
	}
	t.Parallel()
	bu := setup(t)
	wheel := writeWheel(t, bu.wheels, "dimfmt", "1.0", map[string]string{"__init__.py": ""})
	if err := os.Chmod(wheel, 0o600); err != nil {
		t.Fatal(err)
	}
	src := writeFixture(t, t.TempDir(), map[string]string{"requirements.txt": "dimfmt==1.0\n"})
	_, err := bu.b.Ensure(t.Context(), Request{Repo: "app", Source: src.dir, Files: src.files, Recipe: bu.recipe(), NeedPython: true})
	var be *BuildError
	if !errors.As(err, &be) {
		t.Fatalf("err = %v; want a BuildError", err)
	}
	for _, w := range []string{"could not read " + wheel, "chmod -R a+rX"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q\nlacks %q; pip said:\n%s", err, w, be.Output)
		}
	}
}

// A project versioned by setuptools-scm builds in a copy without .git: the error says to set
// SETUPTOOLS_SCM_PRETEND_VERSION instead of leaving pip's traceback to be read.
func TestEnsureNamesTheVersionSetuptoolsSCMCannotFind(t *testing.T) {
	needVenv(t)
	if _, err := run(t, venvPython, "-c", "import setuptools_scm"); err != nil {
		t.Skip("needs setuptools-scm for " + venvPython + " (apt-get install -y python3-setuptools-scm)")
	}
	t.Parallel()
	bu := setup(t)
	src := writeFixture(t, t.TempDir(), map[string]string{
		"pyproject.toml":  "[build-system]\nrequires = [\"setuptools\", \"setuptools_scm\"]\nbuild-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"app\"\ndynamic = [\"version\"]\n\n[tool.setuptools_scm]\n",
		"app/__init__.py": "",
	})
	r := bu.recipe()
	r.Commands[1] = `"$ENV/bin/python" -m pip install --no-index --no-build-isolation --no-deps -e .`
	_, err := bu.b.Ensure(t.Context(), Request{Repo: "app", Source: src.dir, Files: src.files, Recipe: r, NeedPython: true})
	var be *BuildError
	if !errors.As(err, &be) {
		t.Fatalf("err = %v; want a BuildError", err)
	}
	if !strings.Contains(err.Error(), "SETUPTOOLS_SCM_PRETEND_VERSION=") {
		t.Errorf("error %q\ndoes not say to set SETUPTOOLS_SCM_PRETEND_VERSION; pip said:\n%s", err, be.Output)
	}
}

// The causes diagnose recognises, as pip and compilers print them; nothing is said about an
// output it does not recognise.
func TestDiagnose(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		output  string
		network bool
		want    string
	}{
		{"no compiler", "building 'fastcore._speed' extension\nerror: command 'x86_64-linux-gnu-gcc' failed: No such file or directory\n", false, "needs a C compiler"},
		{"no headers", "fastcore/_speed.c:1:10: fatal error: Python.h: No such file or directory\n", false, "python3-dev"},
		{"network off", "WARNING: Retrying ... NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection>: Failed to establish a new connection: [Errno -3] Temporary failure in name resolution')\n", false, "setup.network: true"},
		{"network on, not blamed", "Failed to establish a new connection\n", true, ""},
		{"a module missing", "ModuleNotFoundError: No module named 'flit_core'\n", false, "Python module flit_core is missing"},
		{"a missing distribution, network on", "ERROR: No matching distribution found for poetry-core>=1.0.0\n", true, "pip found no distribution of poetry-core>=1.0.0: add its wheel"},
		{"a wheelhouse that does not exist", "WARNING: Location '/nonexistent/wheels' is ignored: it is either a non-existing path or lacks a specific scheme.\nERROR: No matching distribution found for setuptools\n", false, "no such folder on this machine"},
		{"an unreadable wheel", "Processing /w/pytest_cov-7.0.0-py3-none-any.whl\nERROR: Could not install packages due to an OSError: [Errno 13] Permission denied: '/w/pytest_cov-7.0.0-py3-none-any.whl'\n", false, "could not read /w/pytest_cov-7.0.0-py3-none-any.whl"},
		{"setuptools-scm without git", "      LookupError: setuptools-scm was unable to detect version for /w/app.src.\n", false, "SETUPTOOLS_SCM_PRETEND_VERSION="},
		{"unrecognised", "AssertionError: wrong\n", false, ""},
	} {
		got := diagnose(tc.output, tc.network)
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s: diagnose(%q) = %q; want it to say %q", tc.name, tc.output, got, tc.want)
		}
		if tc.network && strings.Contains(got, "setup.network") {
			t.Errorf("%s: %q offers the network to a recipe that has it", tc.name, got)
		}
	}
}

// A recipe that hangs is stopped at its timeout, named as such, with what it printed; one
// that prints megabytes keeps only the tail. Neither leaves an environment behind.
func TestEnsureHangAndFlood(t *testing.T) {
	needVenv(t)
	t.Parallel()
	for _, tc := range []struct {
		name    string
		command string
		timeout time.Duration
		check   func(t *testing.T, be *BuildError)
	}{
		{"hangs", `echo started; sleep 600 & sleep 600`, 2 * time.Second, func(t *testing.T, be *BuildError) {
			if !be.TimedOut || !strings.Contains(be.Output, "started") || !strings.Contains(be.Error(), "timed out") {
				t.Errorf("BuildError %q, timed out %v, output %q; want a time-out with the output", be, be.TimedOut, be.Output)
			}
		}},
		{"floods", `head -c 20000000 /dev/zero | tr '\0' x; echo; echo the-last-line; exit 3`, 0, func(t *testing.T, be *BuildError) {
			if be.ExitCode != 3 || len(be.Output) > outputCap || !strings.Contains(be.Output, "the-last-line") {
				t.Errorf("BuildError %q, exit %d, %d bytes of output; want exit 3 and at most %d bytes ending with the last line", be, be.ExitCode, len(be.Output), outputCap)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bu := setup(t)
			src := writeFixture(t, t.TempDir(), map[string]string{"requirements.txt": "shinyfmt==1.0\n"})
			r := Recipe{Python: venvPython, Timeout: tc.timeout, Commands: []string{tc.command}}
			_, err := bu.b.Ensure(t.Context(), Request{Repo: "app", Source: src.dir, Files: src.files, Recipe: r})
			var be *BuildError
			if !errors.As(err, &be) {
				t.Fatalf("err = %v; want a BuildError", err)
			}
			tc.check(t, be)
			if all, _ := List(bu.b.Root); len(all) != 0 {
				t.Errorf("cache after a failed build: %+v; want nothing", all)
			}
		})
	}
}

// Without the sandbox, a command that leaves a background process holding its output fails
// the build saying so, not with Go's "WaitDelay expired before I/O complete".
func TestEnsureBackgroundProcessWithoutSandbox(t *testing.T) {
	needVenv(t)
	t.Parallel()
	bu := setup(t)
	bu.b.Sandbox = sandbox.ModeNone
	src := writeFixture(t, t.TempDir(), map[string]string{"requirements.txt": "shinyfmt==1.0\n"})
	r := Recipe{Python: venvPython, Commands: []string{`sleep 60 & echo started`}} // same process group: killed after the build
	_, err := bu.b.Ensure(t.Context(), Request{Repo: "app", Source: src.dir, Files: src.files, Recipe: r})
	if err == nil || !strings.Contains(err.Error(), "a process it started in the background") || !strings.Contains(err.Error(), "repos.app.setup") {
		t.Fatalf("err = %v; want the build failed, naming the background process", err)
	}
}

// A recipe sees none of the daemon's credentials, even named in pass_env, nor any variable
// the allowlist leaves out; whatever it writes outside $ENV (the wheelhouse, the checkout it
// was copied from, the host's /tmp) never reaches the host.
func TestSetupReachesNothingOfTheDaemon(t *testing.T) {
	needVenv(t)
	t.Parallel()
	bu := setup(t)
	if bu.b.Sandbox != sandbox.ModeBwrap {
		t.Skip("needs the bwrap sandbox (apt-get install -y bubblewrap)")
	}
	const key, token, other = "sk-live-0a1b2c3d4e5f6a7b8c9d", "ghp_0123456789abcdefghijABCDEFGHIJ012345", "daemon-only-77e1"
	bu.b.BaseEnv = append(os.Environ(), "MODEL_API_KEY="+key, "GITHUB_TOKEN="+token, "DAEMON_SETTING="+other)
	bu.b.Deny = []string{"MODEL_API_KEY", "GITHUB_TOKEN"}
	src := writeFixture(t, t.TempDir(), map[string]string{"requirements.txt": "shinyfmt==1.0\n"})
	hostTmp := filepath.Join(os.TempDir(), "ticketd-setup-escape-"+filepath.Base(t.TempDir()))
	t.Cleanup(func() { os.Remove(hostTmp) })
	r := bu.recipe()
	r.PassEnv = []string{"MODEL_API_KEY"} // the config refuses this; the builder too
	r.Commands = append(r.Commands,
		`env > "$ENV/seen-env"`,
		`for p in "`+bu.wheels+`/evil.whl" "`+src.dir+`/evil" "`+hostTmp+`"; do (echo x > "$p") 2>/dev/null && echo "wrote $p"; done; true`)
	env, err := bu.b.Ensure(t.Context(), Request{Repo: "app", Source: src.dir, Files: src.files, Recipe: r, NeedPython: true})
	if err != nil {
		t.Fatal(err)
	}
	seen, _ := os.ReadFile(filepath.Join(env.Dir, "seen-env"))
	for _, v := range []string{key, token, other} {
		if strings.Contains(string(seen), v) {
			t.Errorf("the recipe saw %q in its environment:\n%s", v, seen)
		}
	}
	for _, p := range []string{filepath.Join(bu.wheels, "evil.whl"), filepath.Join(src.dir, "evil"), hostTmp} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("the recipe wrote %s on the host", p)
		}
	}
}

// A requirements file's --index-url line, in a recipe without --no-index and without the
// network, costs no retries: each request fails at once (pip retries a refused connection
// five times with back-off, seconds per package) and pip goes on with the wheelhouse.
func TestSetupWithoutNetworkDoesNotRetryTheIndex(t *testing.T) {
	needVenv(t)
	t.Parallel()
	bu := setup(t)
	if bu.b.Sandbox != sandbox.ModeBwrap {
		t.Skip("needs the bwrap sandbox: network namespaces (apt-get install -y bubblewrap)")
	}
	src := writeFixture(t, t.TempDir(), map[string]string{"requirements.txt": "--index-url https://index.example.invalid/simple\nshinyfmt==1.0\n"})
	r := bu.recipe()
	r.Commands[1] = `"$ENV/bin/python" -m pip install --find-links ` + bu.wheels + ` -r requirements.txt`
	env, err := bu.b.Ensure(t.Context(), Request{Repo: "app", Source: src.dir, Files: src.files, Recipe: r, NeedPython: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(env.Output, "Retrying (Retry("); n != 0 {
		t.Errorf("pip retried the unreachable index %d times:\n%s", n, env.Output)
	}
	if out, err := run(t, env.Python, "-c", "import shinyfmt"); err != nil {
		t.Errorf("shinyfmt not installed from the wheelhouse: %v %s", err, out)
	}
}

// TestEnvironmentLockedDown: a recipe that leaves world-writable or set-ID files and folders in
// its environment (read by every later check of the repository, of every ticket) gets them
// back without those bits.
func TestEnvironmentLockedDown(t *testing.T) {
	t.Parallel()
	bu := setup(t)
	src := writeFixture(t, t.TempDir(), map[string]string{"README.md": "x\n"})
	r := Recipe{Commands: []string{`mkdir -p "$ENV/d" && echo x > "$ENV/d/f" && chmod 6777 "$ENV/d/f" && chmod 2777 "$ENV/d" && chmod 0777 "$ENV"`}}
	env, err := bu.b.Ensure(t.Context(), Request{Repo: "app", Source: src.dir, Files: src.files, Recipe: r})
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	for _, p := range []string{env.Dir, filepath.Join(env.Dir, "d"), filepath.Join(env.Dir, "d", "f")} {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode(); m&(0o022|os.ModeSetuid|os.ModeSetgid) != 0 {
			t.Errorf("%s is %v after the build: writable by others or set-ID", p, m)
		}
	}
}
