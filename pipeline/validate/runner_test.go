package validate

import (
	"context"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ticketd/ticketd/pipeline/sandbox"
	"github.com/ticketd/ticketd/scripts/testenv"
	"github.com/ticketd/ticketd/store/clock/clocktest"
)

// project writes a tiny Python project into a fresh directory: stats.py and
// a test file that both pytest and `python -m unittest` run. With buggy,
// mean([]) raises ZeroDivisionError instead of returning 0.
func project(t *testing.T, buggy bool) string {
	t.Helper()
	dir := t.TempDir()
	body := "def mean(xs):\n    if not xs:\n        return 0.0\n    return sum(xs) / len(xs)\n"
	if buggy {
		body = "def mean(xs):\n    return sum(xs) / len(xs)\n"
	}
	files := map[string]string{
		"stats.py":            body,
		"tests/__init__.py":   "",
		"tests/test_stats.py": "import unittest\n\nfrom stats import mean\n\n\nclass TestMean(unittest.TestCase):\n    def test_empty(self):\n        self.assertEqual(mean([]), 0.0)\n\n    def test_pair(self):\n        self.assertEqual(mean([1, 3]), 2)\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// listing returns the sorted relative paths under dir, to prove a check
// left nothing behind in the worktree.
func listing(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func requirePytest(t *testing.T) {
	t.Helper()
	_, err := ResolvePytest(context.Background())
	testenv.Need(t, testenv.Pytest, err)
}

func TestRunPytest(t *testing.T) {
	requirePytest(t)
	// The daemon's environment may lack it; the Runner must set it itself.
	t.Setenv("PYTHONDONTWRITEBYTECODE", "")
	ctx := context.Background()
	r := Runner{Sandbox: testSandbox(t)}
	check := Check{Name: "tests", Kind: KindPytest}

	t.Run("pass", func(t *testing.T) {
		dir := project(t, false)
		before := listing(t, dir)
		res := r.Run(ctx, dir, []Check{check})[0]
		if !res.Passed || res.ExitCode != 0 || res.Summary != "2 passed" || len(res.Findings) != 0 {
			t.Errorf("got passed=%v exit=%d summary=%q findings=%v\noutput:\n%s", res.Passed, res.ExitCode, res.Summary, res.Findings, res.Output)
		}
		if after := listing(t, dir); !slices.Equal(before, after) {
			t.Errorf("pytest left files in the worktree:\nbefore %q\nafter  %q", before, after)
		}
	})

	t.Run("failure", func(t *testing.T) {
		dir := project(t, true)
		res := r.Run(ctx, dir, []Check{check})[0]
		want := Finding{File: "stats.py", Line: 2, Test: "tests/test_stats.py::TestMean::test_empty", Message: "ZeroDivisionError: division by zero"}
		if res.Passed || res.ExitCode != 1 || res.Summary != "1 failed, 1 passed" || len(res.Findings) != 1 || res.Findings[0] != want {
			t.Errorf("got passed=%v exit=%d summary=%q findings=%+v\nwant 1 failed, 1 passed with %+v\noutput:\n%s", res.Passed, res.ExitCode, res.Summary, res.Findings, want, res.Output)
		}
	})

	t.Run("assertion", func(t *testing.T) {
		dir := project(t, false)
		os.WriteFile(filepath.Join(dir, "tests", "test_extra.py"), []byte("from stats import mean\n\n\ndef test_three():\n    assert mean([1, 2]) == 2\n"), 0o644)
		res := r.Run(ctx, dir, []Check{check})[0]
		want := Finding{File: "tests/test_extra.py", Line: 5, Test: "tests/test_extra.py::test_three", Message: "assert 1.5 == 2\n +  where 1.5 = mean([1, 2])"}
		if res.Passed || len(res.Findings) != 1 || res.Findings[0] != want {
			t.Errorf("got passed=%v findings=%+v\nwant %+v", res.Passed, res.Findings, want)
		}
	})

	t.Run("no tests collected", func(t *testing.T) {
		dir := t.TempDir()
		res := r.Run(ctx, dir, []Check{check})[0]
		if !res.Passed || res.ExitCode != pytestExitNoTests || res.Summary != "no tests collected" {
			t.Errorf("got passed=%v exit=%d summary=%q", res.Passed, res.ExitCode, res.Summary)
		}
	})

	t.Run("usage error", func(t *testing.T) {
		dir := project(t, false)
		argv, _ := ResolvePytest(ctx)
		res := r.Run(ctx, dir, []Check{{Name: "bad", Kind: KindPytest, Command: append(argv, "--no-such-flag")}})[0]
		if res.Passed || res.ExitCode != 4 || !strings.Contains(res.Summary, "without a test report") || len(res.Findings) != 1 || !strings.Contains(res.Findings[0].Message, "--no-such-flag") {
			t.Errorf("got passed=%v exit=%d summary=%q findings=%+v", res.Passed, res.ExitCode, res.Summary, res.Findings)
		}
	})
}

// A repository's -x or --maxfail must not end the gate's run at a failure the base already
// has: the tests after it would run neither at the base nor in the change, and a regression
// among them would never show.
func TestPytestRunsPastFirstFailure(t *testing.T) {
	requirePytest(t)
	argv, _ := ResolvePytest(context.Background())
	failing := "def test_platform():\n    assert False, 'fails at the base, unrelated'\n"
	passing := "def test_add():\n    assert 1 + 2 == 3\n"
	for _, tt := range []struct {
		name   string
		config map[string]string
		check  Check
	}{
		{"-x in pyproject.toml addopts", map[string]string{"pyproject.toml": "[tool.pytest.ini_options]\naddopts = \"-x\"\n"}, Check{Name: "tests", Kind: KindPytest}},
		{"--maxfail=1 in setup.cfg addopts", map[string]string{"setup.cfg": "[tool:pytest]\naddopts = --maxfail=1 -v\n"}, Check{Name: "tests", Kind: KindPytest}},
		{"--exitfirst in tox.ini addopts", map[string]string{"tox.ini": "[pytest]\naddopts = --exitfirst\n"}, Check{Name: "tests", Kind: KindPytest}},
		{"--maxfail 1 in pytest.ini addopts", map[string]string{"pytest.ini": "[pytest]\naddopts = --maxfail 1\n"}, Check{Name: "tests", Kind: KindPytest}},
		{"-x in the check's command", nil, Check{Name: "tests", Kind: KindPytest, Command: append(slices.Clone(argv), "-x")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			files := map[string]string{"tests/test_a.py": failing, "tests/test_b.py": passing}
			for name, content := range tt.config {
				files[name] = content
			}
			dir := writeTree(t, files)
			r := Runner{Sandbox: testSandbox(t)}
			res := r.Run(context.Background(), dir, []Check{tt.check})[0]
			if got := OutcomeOf(res.Outcomes, "tests/test_b.py::test_add"); got != OutcomePassed || res.Tests != 2 {
				t.Errorf("tests/test_b.py::test_add %s, %d tests (%s); want it run and passed after the failure in tests/test_a.py\ncommand %q\n%s",
					got, res.Tests, res.Summary, res.Command, res.Output)
			}
		})
	}
}

// A repository's --junit-prefix and junit_logging do not reach the report the gate reads:
// the ids stay the tests' own, and a passing test's output (here past maxReportBytes)
// stays out of it.
func TestPytestReportKeepsItsShape(t *testing.T) {
	requirePytest(t)
	for _, config := range []map[string]string{
		{"pytest.ini": "[pytest]\naddopts = --junit-prefix=nightly\njunit_logging = all\n"},
		{"pyproject.toml": "[tool.pytest.ini_options]\naddopts = [\"--junit-prefix\", \"nightly\"]\njunit_logging = \"system-out\"\n"},
	} {
		for name := range config {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				files := map[string]string{"tests/test_a.py": "def test_chatty():\n    print('x' * (65 << 20))\n\n\ndef test_bad():\n    assert False\n"}
				maps.Copy(files, config)
				dir := writeTree(t, files)
				r := Runner{Sandbox: testSandbox(t)}
				res := r.Run(context.Background(), dir, []Check{{Name: "tests", Kind: KindPytest}})[0]
				if OutcomeOf(res.Outcomes, "tests/test_a.py::test_chatty") != OutcomePassed || OutcomeOf(res.Outcomes, "tests/test_a.py::test_bad") != OutcomeFailed {
					t.Errorf("outcomes %v, summary %q; want the tests read under their own ids\ncommand %q", res.Outcomes, res.Summary, res.Command)
				}
			})
		}
	}
}

// A pytest run that something ends before pytest writes its report shows nothing passing,
// whatever its exit status: os._exit(0) where the code under test or a fixture runs would
// otherwise end the suite early and pass it.
func TestPytestEndedWithoutReport(t *testing.T) {
	requirePytest(t)
	for _, tt := range []struct {
		name  string
		files map[string]string
	}{
		{"os._exit(0) in a fixture", map[string]string{
			"tests/conftest.py": "import os\n\nimport pytest\n\n\n@pytest.fixture\ndef hard():\n    os._exit(0)\n",
			"tests/test_a.py":   "def test_ok():\n    pass\n\n\ndef test_hard(hard):\n    pass\n\n\ndef test_after():\n    assert False\n"}},
		{"os._exit(0) in the code under test", map[string]string{
			"cli.py":          "import os\n\n\ndef main():\n    print('done')\n    os._exit(0)\n",
			"test_cli.py":     "from cli import main\n\n\ndef test_main():\n    main()\n",
			"test_zz_late.py": "def test_late():\n    assert False\n"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := writeTree(t, tt.files)
			r := Runner{Sandbox: testSandbox(t)}
			res := r.Run(context.Background(), dir, []Check{{Name: "tests", Kind: KindPytest}})[0]
			if res.Passed || res.Tests != -1 || !strings.Contains(res.Summary, "without a test report") || len(res.Findings) == 0 {
				t.Errorf("passed %v, exit %d, tests %d, summary %q, findings %+v; want a failure without a report\n%s", res.Passed, res.ExitCode, res.Tests, res.Summary, res.Findings, res.Output)
			}
			if problems := Health([]Result{res}); len(problems) != 1 {
				t.Errorf("at the base: health problems %+v, want the missing report named", problems)
			}
		})
	}
}

func TestRunUnittest(t *testing.T) {
	t.Parallel() // own directories and processes
	ctx := context.Background()
	r := Runner{Sandbox: testSandbox(t)}
	check := Check{Name: "unit", Kind: KindUnittest}
	res := r.Run(ctx, project(t, false), []Check{check})[0]
	if !res.Passed || res.Summary != "ran 2 tests: OK" || res.Tests != 2 || res.Errored != 0 {
		t.Errorf("passing project: passed=%v summary=%q tests=%d errored=%d\n%s", res.Passed, res.Summary, res.Tests, res.Errored, res.Output)
	}
	dir := project(t, true)
	res = r.Run(ctx, dir, []Check{check})[0]
	want := Finding{File: "stats.py", Line: 2, Test: "tests.test_stats.TestMean.test_empty", Message: "ZeroDivisionError: division by zero"}
	// The count is what the evidence step and the health check read, as for pytest's report.
	if res.Tests != 2 || res.Errored != 1 {
		t.Errorf("buggy project: tests=%d errored=%d, want 2 and 1", res.Tests, res.Errored)
	}
	if res.Passed || res.Summary != "ran 2 tests: FAILED (errors=1)" || len(res.Findings) != 1 || res.Findings[0] != want {
		t.Errorf("buggy project: passed=%v summary=%q findings=%+v\nwant %+v\n%s", res.Passed, res.Summary, res.Findings, want, res.Output)
	}
	res = r.Run(ctx, t.TempDir(), []Check{check})[0]
	if !res.Passed || res.Summary != "no tests collected" {
		t.Errorf("empty project: passed=%v summary=%q", res.Passed, res.Summary)
	}
}

// processesLeftIn returns the host pids of live processes whose working
// directory is dir or below it, after giving a SIGKILL already sent up to
// within to take effect (polled, not slept). The pids a sandboxed check writes are
// those of its own PID namespace, so the working directory identifies its
// processes from the outside; the stragglers are killed so they do not
// outlive the test.
func processesLeftIn(dir string, within time.Duration) []int {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		real = dir
	}
	scan := func() []int {
		var pids []int
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd")
			if err != nil || (cwd != real && !strings.HasPrefix(cwd, real+"/")) || zombieOrAbsent(pid) {
				continue
			}
			pids = append(pids, pid)
		}
		return pids
	}
	var pids []int
	clocktest.Poll(within, func() bool { pids = scan(); return len(pids) == 0 })
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	return pids
}

// zombieOrAbsent reads the process state where pidfds are unavailable.
func zombieOrAbsent(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && (fields[0] == "Z" || fields[0] == "X")
}

func TestTimeoutKillsProcessGroup(t *testing.T) {
	t.Parallel() // own directories and processes
	ctx := context.Background()
	r := Runner{Sandbox: testSandbox(t)}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	script := "sleep 300 & echo $! > child.pid; echo started; wait"
	// The time-out is what is under test; a slow machine may kill the
	// shell before it starts its child, so the time-out grows until the
	// child was seen to start.
	var res Result
	var timeout time.Duration
	for _, timeout = range []time.Duration{300 * time.Millisecond, time.Second, 5 * time.Second, 30 * time.Second} {
		res = r.Run(ctx, dir, []Check{{Name: "hang", Kind: KindCommand, Command: []string{"sh", "-c", script}, Timeout: timeout}})[0]
		if _, err := os.Stat(pidFile); err == nil {
			break
		}
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the shell never started its child: %v (result %+v)", err, res)
	}
	if _, err := strconv.Atoi(strings.TrimSpace(string(data))); err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.Passed || res.ExitCode != -1 || !strings.Contains(res.Summary, "timed out after "+timeout.String()) {
		t.Errorf("got timed_out=%v passed=%v exit=%d summary=%q", res.TimedOut, res.Passed, res.ExitCode, res.Summary)
	}
	if left := processesLeftIn(dir, time.Minute); len(left) > 0 {
		t.Errorf("processes %v of the timed-out check still run in %s: its processes were not killed", left, dir)
	}
	// Not killed, the check would wait for its sleep of 300 s; killed, it takes its time-out
	// and the drain (a few seconds): a minute tells them apart at any load.
	if res.Duration > time.Minute {
		t.Errorf("check took %s with a %s time-out", res.Duration, timeout)
	}
	if !strings.Contains(res.Output, "started") {
		t.Errorf("output before the time-out was lost: %q", res.Output)
	}
}

// TestStragglerKilledAfterExit pins that a background child left by a check
// that exits normally is killed too, instead of outliving the check.
func TestStragglerKilledAfterExit(t *testing.T) {
	dir := t.TempDir()
	r := Runner{Sandbox: testSandbox(t)}
	res := r.Run(context.Background(), dir, []Check{{Name: "bg", Kind: KindCommand, Command: []string{"sh", "-c", "sleep 300 & echo $! > child.pid"}}})[0]
	if !res.Passed {
		t.Fatalf("got %+v", res)
	}
	if _, err := os.ReadFile(filepath.Join(dir, "child.pid")); err != nil {
		t.Fatal(err)
	}
	if left := processesLeftIn(dir, 5*time.Second); len(left) > 0 {
		t.Errorf("background children %v outlived their check", left)
	}
}

func TestPytestTimeout(t *testing.T) {
	t.Parallel() // own directories and processes
	requirePytest(t)
	dir := project(t, false)
	os.WriteFile(filepath.Join(dir, "tests", "test_hang.py"), []byte("import subprocess\n\n\ndef test_hang():\n    subprocess.run(['sleep', '300'])\n"), 0o644)
	r := Runner{Sandbox: testSandbox(t)}
	res := r.Run(context.Background(), dir, []Check{{Name: "tests", Kind: KindPytest, Timeout: 300 * time.Millisecond}})[0]
	// The test sleeps 300 s: a minute tells a kill at the time-out from none, at any load.
	if !res.TimedOut || res.Passed || res.Duration > time.Minute {
		t.Errorf("got timed_out=%v passed=%v duration=%s summary=%q", res.TimedOut, res.Passed, res.Duration, res.Summary)
	}
}

// TestEnvAllowlist pins that a check sees the allowlist and the passed names
// only: secrets under any name stay out, and so does everything unlisted.
func TestEnvAllowlist(t *testing.T) {
	t.Setenv("FOO_API_KEY", "sk-very-secret")
	t.Setenv("GITHUB_TOKEN", "ghp_secret")
	t.Setenv("db_password", "hunter2")
	t.Setenv("DATABASE_URL", "postgres://app:hunter3@db/prod")
	t.Setenv("GH_PAT", "plainvalue1")
	t.Setenv("SENTRY_DSN", "plainvalue2")
	t.Setenv("PLAIN_SETTING", "notlisted")
	t.Setenv("APP_MODE", "test")
	t.Setenv("SORT_KEY", "name")
	t.Setenv("LLM_ENDPOINT_KEY", "plainvalue3")
	t.Setenv("PYTHONHASHSEED", "0")
	t.Setenv("PYTHONDONTWRITEBYTECODE", "")
	r := Runner{Sandbox: testSandbox(t), PassEnv: []string{"APP_MODE", "SORT_KEY", "LLM_ENDPOINT_KEY", "DATABASE_URL"}, DenyEnv: []string{"LLM_ENDPOINT_KEY"}, ExtraEnv: []string{"TICKETD_CHECK=1"}}
	res := r.Run(context.Background(), t.TempDir(), []Check{{Name: "env", Kind: KindCommand, Command: []string{"env"}}})[0]
	if !res.Passed {
		t.Fatalf("env check failed: %+v", res)
	}
	tests := []struct {
		text string
		want bool
	}{
		{"FOO_API_KEY", false}, {"sk-very-secret", false}, {"GITHUB_TOKEN", false}, {"db_password", false},
		{"hunter3", false}, {"GH_PAT", false}, {"SENTRY_DSN", false}, {"plainvalue", false},
		{"PLAIN_SETTING", false}, {"\nAPP_MODE=test", true}, {"\nSORT_KEY=name", true}, {"\nPYTHONHASHSEED=0", true},
		{"PYTHONDONTWRITEBYTECODE=1", true}, {"TICKETD_CHECK=1", true}, {"\nPATH=", true}, {"\nHOME=", true}, {"\nTMPDIR=", true},
	}
	for _, tt := range tests {
		if got := strings.Contains("\n"+res.Output, tt.text); got != tt.want {
			t.Errorf("check environment contains %q = %v, want %v\n%s", tt.text, got, tt.want, res.Output)
		}
	}
}

func TestOutputCap(t *testing.T) {
	r := Runner{Sandbox: testSandbox(t), OutputCap: 1000}
	script := "i=0; while [ $i -lt 5000 ]; do echo line $i; i=$((i+1)); done; echo last line >&2; exit 3"
	res := r.Run(context.Background(), t.TempDir(), []Check{{Name: "loud", Kind: KindCommand, Command: []string{"sh", "-c", script}}})[0]
	if res.Passed || res.ExitCode != 3 || res.Summary != "exit status 3: last line" {
		t.Errorf("got passed=%v exit=%d summary=%q", res.Passed, res.ExitCode, res.Summary)
	}
	body := res.Output[strings.IndexByte(res.Output, '\n')+1:]
	if len(body) > 1000 || !strings.HasPrefix(res.Output, "[... ") || !strings.HasSuffix(res.Output, "line 4999\nlast line\n") {
		t.Errorf("output of %d bytes (body %d), starts %q ends %q", len(res.Output), len(body), res.Output[:min(40, len(res.Output))], res.Output[max(0, len(res.Output)-30):])
	}
}

func TestRunErrors(t *testing.T) {
	r := Runner{Sandbox: testSandbox(t)}
	dir := t.TempDir()
	res := r.Run(context.Background(), dir, []Check{
		{Name: "missing", Kind: KindCommand, Command: []string{"/no/such/binary"}},
		{Name: "odd", Kind: "eslint", Command: []string{"true"}},
	})
	if res[0].Passed || res[0].ExitCode != -1 || !strings.Contains(res[0].Summary, "could not start") {
		t.Errorf("missing binary: %+v", res[0])
	}
	if res[1].Passed || !strings.Contains(res[1].Summary, `kind "eslint"`) {
		t.Errorf("unknown kind: %+v", res[1])
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res = r.Run(ctx, dir, []Check{{Name: "a", Kind: KindCommand, Command: []string{"true"}}})
	if res[0].Passed || !strings.HasPrefix(res[0].Summary, "not run: ") {
		t.Errorf("cancelled run: %+v", res[0])
	}
	if Passed(res) || !Passed(nil) {
		t.Errorf("Passed(failed) = %v, Passed(nil) = %v", Passed(res), Passed(nil))
	}
}

func TestRunMypy(t *testing.T) {
	if testing.Short() {
		t.Skip("mypy takes seconds without a cache")
	}
	testenv.NeedMypy(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "typed.py"), []byte("def f(x: int) -> str:\n    return x\n"), 0o644)
	r := Runner{Sandbox: testSandbox(t)}
	res := r.Run(context.Background(), dir, []Check{{Name: "types", Kind: KindMypy, Command: []string{"/usr/bin/python3", "-m", "mypy", "typed.py"}}})[0]
	want := Finding{File: "typed.py", Line: 2, Test: "return-value", Message: `Incompatible return value type (got "int", expected "str")`}
	if res.Passed || len(res.Findings) != 1 || res.Findings[0] != want || !strings.HasPrefix(res.Summary, "Found 1 error") {
		t.Errorf("got passed=%v summary=%q findings=%+v\nwant %+v\n%s", res.Passed, res.Summary, res.Findings, want, res.Output)
	}
	if l := listing(t, dir); !slices.Equal(l, []string{".", "typed.py"}) {
		t.Errorf("mypy left files: %q", l)
	}
}

// TestRunMypyDefaultHonoursFiles: a check without a command runs mypy as the project's CI
// does. click, markupsafe and packaging name what they type in [tool.mypy] files; `mypy .`
// would replace that list and check their examples and docs too, which nobody types.
func TestRunMypyDefaultHonoursFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("mypy takes seconds without a cache")
	}
	testenv.NeedMypy(t)
	untyped := "def main(x: int) -> str:\n    return x\n" // not under files: never checked
	for _, tc := range []struct {
		name   string
		config map[string]string
		want   []string // files with findings
	}{
		{"pyproject files", map[string]string{"pyproject.toml": "[tool.mypy]\nfiles = [\"src\"]\nstrict = true\n"}, nil},
		{"mypy.ini files", map[string]string{"mypy.ini": "[mypy]\nfiles = src\n"}, nil},
		{"setup.cfg files", map[string]string{"setup.cfg": "[metadata]\nname = pkg\n\n[mypy]\nfiles =\n    src\n"}, nil},
		{"no files: the whole tree", map[string]string{"pyproject.toml": "[tool.mypy]\nstrict = true\n"}, []string{"examples/demo.py"}},
		{"mypy.ini wins over pyproject", map[string]string{"mypy.ini": "[mypy]\n", "pyproject.toml": "[tool.mypy]\nfiles = [\"src\"]\n"}, []string{"examples/demo.py"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{
				"src/pkg/__init__.py": "def double(x: int) -> int:\n    return 2 * x\n",
				"examples/demo.py":    untyped,
			}
			maps.Copy(files, tc.config)
			for name, content := range files {
				p := filepath.Join(dir, filepath.FromSlash(name))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r := Runner{Sandbox: testSandbox(t)}
			res := r.Run(context.Background(), dir, []Check{{Name: "types", Kind: KindMypy}})[0]
			var got []string
			for _, f := range res.Findings {
				got = append(got, f.File)
			}
			if !slices.Equal(got, tc.want) || res.NotStarted {
				t.Errorf("command %q: findings in %q, want %q\n%s", res.Command, got, tc.want, res.Output)
			}
		})
	}
}

// TestRunRuffReportsWhatItWouldFix: click and markupsafe set `fix = true` in [tool.ruff],
// and a plain `ruff check` then rewrites the files and reports only what it could not fix:
// an unsorted import a fix brings in would pass the gate and fail the project's CI. The
// stand-in behaves as ruff does with that setting: it fixes unless told --no-fix.
func TestRunRuffReportsWhatItWouldFix(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "pyproject.toml"), []byte("[tool.ruff]\nfix = true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	finding := `[{"code":"I001","message":"Import block is un-sorted or un-formatted","filename":"m.py","location":{"row":1,"column":1}}]`
	script := `for a; do [ "$a" = --no-fix ] && { echo '` + finding + `'; exit 1; }; [ "$a" = --fix ] && break; done; echo '[]'`
	for _, tc := range []struct {
		name    string
		command []string
		want    int // findings
	}{
		{"default", []string{"sh", "-c", script, "ruff", "check", "."}, 1},
		{"the operator's --fix is kept", []string{"sh", "-c", script, "ruff", "check", "--fix", "."}, 0},
	} {
		r := Runner{Sandbox: testSandbox(t)}
		res := r.Run(context.Background(), dir, []Check{{Name: "lint", Kind: KindRuff, Command: tc.command}})[0]
		if len(res.Findings) != tc.want || res.NotStarted {
			t.Errorf("%s: command %q: %d findings (%s), want %d\n%s", tc.name, res.Command, len(res.Findings), res.Summary, tc.want, res.Output)
		}
	}
}

// TestRunPytestOnlyCollectionFailure: a module that fails to import is reported under the id
// file::dotted.module (packaging's tests/test_manylinux.py without pretend, pyparsing's
// tests/test_diagram.py without railroad), and the baseline reruns each failing id alone.
// pytest knows no such node: run as is, it stops with a usage error (exit 4) and the rerun
// says nothing about the module; run by its file, it imports the module again.
func TestRunPytestOnlyCollectionFailure(t *testing.T) {
	requirePytest(t)
	dir := project(t, false)
	if err := os.WriteFile(filepath.Join(dir, "tests", "test_extra.py"), []byte("import no_such_plugin_module\n\n\ndef test_x():\n    pass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := Runner{Sandbox: testSandbox(t)}
	full := r.Run(context.Background(), dir, []Check{{Name: "tests", Kind: KindPytest}})[0]
	var id string
	for _, f := range full.Findings {
		if strings.HasPrefix(f.Test, "tests/test_extra.py::") {
			id = f.Test
		}
	}
	if id == "" {
		t.Fatalf("no finding for the module that fails to import: %+v\n%s", full.Findings, full.Output)
	}
	res := r.Run(context.Background(), dir, []Check{{Name: "tests", Kind: KindPytest, Only: []string{id}}})[0]
	if res.ExitCode != 1 || res.Errored != 1 || len(res.Findings) != 1 || res.Findings[0].Test != id ||
		!strings.Contains(res.Findings[0].Message, "no_such_plugin_module") {
		t.Errorf("only %q: exit %d, errored %d, findings %+v; want the module's import error under the same id\ncommand %q\n%s",
			id, res.ExitCode, res.Errored, res.Findings, res.Command, res.Output)
	}
}

// TestRunMypyPrettyConfig: click, markupsafe and attrs set pretty = true for mypy, which
// wraps long messages, moves the error code to a line of its own and adds source lines and
// carets. Findings then lost their code and half their message, and the same error could
// read differently at the base and in a change. The check asks mypy for its plain lines.
func TestRunMypyPrettyConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("mypy takes seconds without a cache")
	}
	testenv.NeedMypy(t)
	dir := t.TempDir()
	files := map[string]string{
		"pyproject.toml": "[tool.mypy]\npretty = true\nstrict = true\n",
		"typed.py":       "def f() -> int:\n    return \"a string long enough that mypy has to wrap this message\"\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := Runner{Sandbox: testSandbox(t)}
	res := r.Run(context.Background(), dir, []Check{{Name: "types", Kind: KindMypy}})[0]
	want := Finding{File: "typed.py", Line: 2, Test: "return-value", Message: `Incompatible return value type (got "str", expected "int")`}
	if len(res.Findings) != 1 || res.Findings[0] != want {
		t.Errorf("command %q: findings %+v\nwant %+v\n%s", res.Command, res.Findings, want, res.Output)
	}
}

// TestMissingImports: packaging's test modules import pretend and tomli_w, which a machine
// without its test extras lacks; the modules that fail to import are named with what they
// lacked, while a test that fails for another reason is not. The modules here are named so
// that no machine has them (Debian packages both of packaging's).
func TestMissingImports(t *testing.T) {
	requirePytest(t)
	dir := project(t, true) // tests/test_stats.py::TestMean::test_empty fails: not an import
	for name, content := range map[string]string{
		"tests/test_tags.py":    "import pretend_absent\n\n\ndef test_x():\n    pass\n",
		"tests/test_version.py": "from pretend_absent import stub\n\n\ndef test_y():\n    pass\n",
		"tests/test_pylock.py":  "import tomli_w_absent\n\n\ndef test_z():\n    pass\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(name)), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := Runner{Sandbox: testSandbox(t)}
	res := r.Run(context.Background(), dir, []Check{{Name: "tests", Kind: KindPytest}})[0]
	got := MissingImports(res)
	slices.SortFunc(got, func(a, b ImportMiss) int { return strings.Compare(a.Module, b.Module) })
	for i := range got {
		slices.Sort(got[i].Files)
	}
	want := []ImportMiss{{"pretend_absent", []string{"tests/test_tags.py", "tests/test_version.py"}}, {"tomli_w_absent", []string{"tests/test_pylock.py"}}}
	if len(got) != len(want) || got[0].Module != want[0].Module || !slices.Equal(got[0].Files, want[0].Files) ||
		got[1].Module != want[1].Module || !slices.Equal(got[1].Files, want[1].Files) {
		t.Errorf("MissingImports = %+v, want %+v\nfindings %+v", got, want, res.Findings)
	}
}

func TestResolvePytest(t *testing.T) {
	argv, err := ResolvePytest(context.Background())
	testenv.Need(t, testenv.Pytest, err)
	out, err := exec.Command(argv[0], append(argv[1:], "--version")...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "pytest") {
		t.Errorf("resolved %q does not run: %v %s", argv, err, out)
	}
}

func TestCheckValidateAndYAML(t *testing.T) {
	var checks []Check
	src := "- name: tests\n  kind: pytest\n  timeout: 5m\n- name: lint\n  kind: ruff\n  command: [ruff, check, .]\n"
	if err := yaml.Unmarshal([]byte(src), &checks); err != nil {
		t.Fatal(err)
	}
	if checks[0].Timeout != 5*time.Minute || len(checks[1].Command) != 3 {
		t.Errorf("decoded %+v", checks)
	}
	tests := []struct {
		check Check
		want  string // "" means valid
	}{
		{checks[0], ""},
		{checks[1], ""},
		{Check{Name: "u", Kind: KindUnittest}, ""},
		{Check{Kind: KindPytest}, "name is empty"},
		{Check{Name: "x", Kind: "jest"}, `kind "jest"`},
		{Check{Name: "m", Kind: KindCommand}, "command is empty"},
		{Check{Name: "t", Kind: KindCommand, Command: []string{"make"}, Timeout: -time.Second}, "negative"},
	}
	for _, tt := range tests {
		err := tt.check.Validate()
		if (tt.want == "") != (err == nil) || (err != nil && (!strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrInvalidCheck))) {
			t.Errorf("Validate(%+v) = %v, want %q", tt.check, err, tt.want)
		}
	}
}

// TestEscapedChildDoesNotHang pins that a process which left the check's
// process group (setsid) and still holds its output pipe delays the result
// by at most the drain bound.
func TestEscapedChildDoesNotHang(t *testing.T) {
	if testing.Short() {
		t.Skip("waits the 2 s drain bound")
	}
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid not installed")
	}
	dir := t.TempDir()
	r := Runner{Sandbox: testSandbox(t)}
	script := "setsid sh -c 'echo $$ > esc.tmp; mv esc.tmp esc.pid; exec sleep 300' & while [ ! -e esc.pid ]; do sleep 0.01; done; echo parent done"
	res := r.Run(context.Background(), dir, []Check{{Name: "esc", Kind: KindCommand, Command: []string{"sh", "-c", script}}})[0]
	if data, err := os.ReadFile(filepath.Join(dir, "esc.pid")); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
			t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
		}
	}
	if !res.Passed || !strings.Contains(res.Output, "parent done") {
		t.Errorf("got %+v", res)
	}
}

// TestRunConcurrent runs pytest in three worktrees at once through one
// Runner, as three workers do.
func TestRunConcurrent(t *testing.T) {
	requirePytest(t)
	r := Runner{Sandbox: testSandbox(t)}
	dirs := []string{project(t, false), project(t, true), project(t, false)}
	results := make([][]Result, len(dirs))
	var wg sync.WaitGroup
	for i, dir := range dirs {
		wg.Go(func() { results[i] = r.Run(context.Background(), dir, []Check{{Name: "tests", Kind: KindPytest}}) })
	}
	wg.Wait()
	for i, want := range []bool{true, false, true} {
		if got := results[i][0].Passed; got != want {
			t.Errorf("worktree %d: passed %v, want %v (%s)", i, got, want, results[i][0].Summary)
		}
	}
}

// testSandbox is the checks' sandbox in the tests whose subject is not the sandbox: bwrap
// where it works, else none (logged). sandbox_test.go tests the sandbox itself.
func testSandbox(t *testing.T) sandbox.Mode {
	t.Helper()
	_, err := sandbox.Probe(context.Background(), "")
	if testenv.Have(t, testenv.Bubblewrap, err) {
		return sandbox.ModeBwrap
	}
	return sandbox.ModeNone
}

// TestImportSkips: pyrsistent's vector tests take its C extension through
// pytest.importorskip, parametrised, and skip where it is not built; the result counts
// them by the missing module (a skip for another reason is not counted), with real pytest.
func TestImportSkips(t *testing.T) {
	requirePytest(t)
	dir := project(t, false)
	for name, content := range map[string]string{
		"tests/test_vector.py": "import pytest\n\n\n@pytest.fixture(params=['json', 'pvectorc_absent'])\ndef impl(request):\n    return pytest.importorskip(request.param)\n\n\n" +
			"@pytest.mark.parametrize('n', [1, 2])\ndef test_append(impl, n):\n    assert impl\n\n\n@pytest.mark.skip(reason='only for pvectorc')\ndef test_other():\n    pass\n",
		"tests/test_module.py": "import pytest\n\npytest.importorskip('pvectorc_absent')\n\n\ndef test_m():\n    pass\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(name)), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := Runner{Sandbox: testSandbox(t)}
	res := r.Run(context.Background(), dir, []Check{{Name: "tests", Kind: KindPytest}})[0]
	if len(res.ImportSkips) != 1 {
		t.Fatalf("ImportSkips = %+v, want one for pvectorc_absent\n%s", res.ImportSkips, res.Output)
	}
	got := res.ImportSkips[0]
	slices.Sort(got.Files)
	if got.Module != "pvectorc_absent" || got.Tests != 3 || !slices.Equal(got.Files, []string{"tests/test_module.py", "tests/test_vector.py"}) {
		t.Errorf("ImportSkips = %+v, want pvectorc_absent: 3 tests (2 parametrised, 1 module) in tests/test_module.py, tests/test_vector.py", got)
	}
}

// A tests/pytest.ini beside a root configuration file without a pytest section: pytest's
// search does not stop at the root file, so `pytest tests`, and a selected run of any
// command (`pytest tests/check_calc.py::test_low`), read tests/pytest.ini and would make
// tests/ the rootdir, naming the test check_calc.py::test_low. The gate pins the rootdir to
// the worktree, as it does without any root file, so ids stay the repository's in the
// whole run and in the selected one alike; a root pytest section (the control) needs no pin.
func TestRootdirBesideRootFileWithoutPytestSection(t *testing.T) {
	requirePytest(t)
	const test = "def test_low():\n    assert True\n"
	for _, tt := range []struct {
		name  string
		files map[string]string
	}{
		{"setup.cfg without [tool:pytest]", map[string]string{"setup.cfg": "[metadata]\nname = calc\n"}},
		{"pyproject.toml without [tool.pytest.ini_options]", map[string]string{"pyproject.toml": "[project]\nname = \"calc\"\n"}},
		{"tox.ini without [pytest]", map[string]string{"tox.ini": "[tox]\nenvlist = py3\n"}},
		{"no root file", map[string]string{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{"tests/pytest.ini": "[pytest]\npython_files = check_*.py\n", "tests/check_calc.py": test}
			for k, v := range tt.files {
				files[k] = v
			}
			dir := writeFiles(t, files)
			py, err := ResolvePytest(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			r := Runner{Sandbox: testSandbox(t)}
			for _, c := range []Check{
				{Name: "tests", Kind: KindPytest, Command: append(slices.Clone(py), "tests")},
				{Name: "tests", Kind: KindPytest, Command: append(slices.Clone(py), "tests"), Only: []string{"tests/check_calc.py::test_low"}},
				{Name: "tests", Kind: KindPytest, Only: []string{"tests/check_calc.py::test_low"}},
			} {
				res := r.Run(context.Background(), dir, []Check{c})[0]
				if got := slices.Sorted(maps.Keys(res.Outcomes)); !slices.Equal(got, []string{"tests/check_calc.py::test_low"}) || !res.Passed {
					t.Errorf("command %q: outcomes %q (passed %v), want tests/check_calc.py::test_low passed\n%s", res.Command, got, res.Passed, res.Output)
				}
			}
		})
	}
}

// A bare `pytest` at a root whose configuration file has no pytest section reads no
// configuration, while a selected run naming tests/test_w.py::test_w reads the
// tests/pytest.ini beside it (pytest searches from the paths it is given): its
// filterwarnings = error failed in the selected run a test the whole suite passed. The
// selected run reads what the check's own command reads: nothing for a bare pytest, the
// tests/pytest.ini for `pytest tests` (both runs fail the test then).
func TestSelectedRunReadsTheWholeRunsConfig(t *testing.T) {
	requirePytest(t)
	py, err := ResolvePytest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	const id = "tests/test_w.py::test_w"
	for _, tt := range []struct {
		name    string
		root    map[string]string
		command []string
		passed  bool
	}{
		{"bare pytest, setup.cfg without [tool:pytest]", map[string]string{"setup.cfg": "[metadata]\nname = w\n"}, py, true},
		{"bare pytest, no root file", nil, py, true},
		{"pytest tests reads tests/pytest.ini", map[string]string{"setup.cfg": "[metadata]\nname = w\n"}, append(slices.Clone(py), "tests"), false},
		{"a root pytest section", map[string]string{"tox.ini": "[pytest]\nfilterwarnings = default\n"}, py, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{
				"tests/pytest.ini": "[pytest]\nfilterwarnings = error\n",
				"tests/test_w.py":  "import warnings\n\n\ndef test_w():\n    warnings.warn('boom')\n",
			}
			for k, v := range tt.root {
				files[k] = v
			}
			dir := writeFiles(t, files)
			r := Runner{Sandbox: testSandbox(t)}
			for _, c := range []Check{
				{Name: "tests", Kind: KindPytest, Command: tt.command},
				{Name: "tests", Kind: KindPytest, Command: tt.command, Only: []string{id}},
			} {
				res := r.Run(context.Background(), dir, []Check{c})[0]
				if got := slices.Sorted(maps.Keys(res.Outcomes)); !slices.Equal(got, []string{id}) || res.Passed != tt.passed {
					t.Errorf("command %q: outcomes %q passed %v; want %s passed %v\n%s", res.Command, got, res.Passed, id, tt.passed, res.Output)
				}
			}
		})
	}
}
