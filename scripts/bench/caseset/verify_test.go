package caseset

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/scripts/testenv"
)

// pytestOnce finds pytest once per test binary; every verifying test needs it.
var pytestOnce = sync.OnceValues(func() ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return PytestCommand(ctx)
})

func needPytest(t *testing.T) []string {
	t.Helper()
	cmd, err := pytestOnce()
	testenv.Need(t, testenv.Pytest, err)
	return cmd
}

// TestCasesVerify holds the case set to its contract: visible tests pass at
// the bug, hidden tests fail at the bug, the golden patch applies, touches no
// test, replays as exact-match edits, and makes every test pass. With
// TICKETD_CASES set it verifies that folder instead (without the 16/16/5
// count), so authors can check their own cases.
func TestCasesVerify(t *testing.T) {
	if testing.Short() {
		t.Skip("runs pytest several times on each of the 37 cases (long tier; run without -short)")
	}
	dir, own := os.LookupEnv("TICKETD_CASES")
	if !own {
		dir = filepath.Join("..", "cases")
	}
	pytest := needPytest(t)
	cases, err := Load(dir)
	if err != nil {
		t.Fatalf("Load(%q): %v", dir, err)
	}
	if !own {
		checkMix(t, cases)
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			verifyCase(t, c, pytest)
		})
	}
}

func checkMix(t *testing.T, cases []Case) {
	t.Helper()
	count := map[string]int{}
	hardScript := map[string]int{}
	night := 0
	for _, c := range cases {
		if len(c.Companions) > 0 {
			night++ // measures the night (issue 35), not the maker: outside the mix
			continue
		}
		count[c.Difficulty]++
		if c.Difficulty == Hard {
			hardScript[c.Scripted]++
		}
	}
	if night != 3 {
		t.Errorf("cases with companions: got %d, want 3", night)
	}
	want := map[string]int{Easy: 16, Medium: 16, Hard: 5}
	for d, n := range want {
		if count[d] != n {
			t.Errorf("%s cases: got %d, want %d (all: %v)", d, count[d], n, count)
		}
	}
	wantHard := map[string]int{ScriptLateFix: 2, ScriptLoop: 1, ScriptNever: 1, ScriptSolve: 1}
	for s, n := range wantHard {
		if hardScript[s] != n {
			t.Errorf("hard cases scripted %s: got %d, want %d (all: %v)", s, hardScript[s], n, hardScript)
		}
	}
}

func verifyCase(t *testing.T, c Case, pytest []string) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	root := t.TempDir()

	base := filepath.Join(root, "base")
	if err := c.Materialize(ctx, base); err != nil {
		t.Fatalf("Materialize: %v", err)
	}
	checkGolden(t, c, base)

	if failed, out := runPytest(ctx, t, c, base, pytest); !slices.Equal(failed, sorted(c.BaseFailures)) {
		t.Errorf("visible tests failing at the bug: %q; want exactly base_failures %q:\n%s", failed, sorted(c.BaseFailures), out)
	}
	if c.GoldenAddsTests() || c.TestPatch != "" {
		checkGoldenTestsFailAtBug(ctx, t, c, filepath.Join(root, "golden-tests"), pytest)
	}
	passed, out, err := c.Judge(ctx, base, pytest)
	if err != nil {
		t.Fatalf("Judge at the bug: %v\n%s", err, out)
	}
	if passed {
		t.Errorf("hidden tests pass at the bug; they must fail there:\n%s", out)
	}

	checkWrongGuess(ctx, t, c, filepath.Join(root, "wrong"), pytest)

	fixed := filepath.Join(root, "fixed")
	if err := c.Materialize(ctx, fixed); err != nil {
		t.Fatalf("Materialize: %v", err)
	}
	patch := filepath.Join(root, "golden.patch")
	if err := os.WriteFile(patch, []byte(c.Golden), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := runGit(ctx, fixed, "apply", "--whitespace=nowarn", patch); err != nil {
		t.Fatalf("git apply golden.patch: %v\n%s", err, out)
	}
	checkReplay(t, c, c.Golden, base, fixed)
	if c.TestPatch != "" {
		checkTestPatch(ctx, t, c, base, filepath.Join(root, "fixed-with-test"), pytest)
	}
	passed, out, err = c.Judge(ctx, fixed, pytest)
	if err != nil {
		t.Fatalf("Judge with the golden patch: %v\n%s", err, out)
	}
	if !passed {
		t.Errorf("hidden tests fail with the golden patch; they must pass:\n%s", out)
	}
	// The hidden files now sit in the checkout, so this runs visible and hidden together.
	if failed, out := runPytest(ctx, t, c, fixed, pytest); !slices.Equal(failed, sorted(c.BaseFailures)) {
		t.Errorf("tests failing with the golden patch applied: %q; want only base_failures %q:\n%s", failed, sorted(c.BaseFailures), out)
	}
}

func sorted(xs []string) []string {
	out := slices.Clone(xs)
	slices.Sort(out)
	if out == nil {
		out = []string{}
	}
	return out
}

// testModules are the Python files among a patch's test files, the ones pytest is pointed at:
// a data file the tests read (tests/resources/x/os-release) is applied with them, but pytest
// given it as an argument stops with a usage error.
func testModules(files []string) []string {
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, ".py") {
			out = append(out, f)
		}
	}
	return out
}

func TestTestModules(t *testing.T) {
	got := testModules([]string{"tests/resources/special/x/os-release", "tests/test_x.py", "tests/data/input.json", "test_y.py"})
	if want := []string{"tests/test_x.py", "test_y.py"}; !slices.Equal(got, want) {
		t.Errorf("testModules = %q; want %q", got, want)
	}
}

// goldenTestFiles are the test files golden.patch changes or adds.
func goldenTestFiles(t *testing.T, c Case) []string {
	t.Helper()
	files, err := parsePatch(c.Golden)
	if err != nil {
		t.Fatalf("golden.patch: %v", err)
	}
	var out []string
	for _, f := range files {
		if IsTestPath(f.path) {
			out = append(out, f.path)
		}
	}
	return out
}

// applyTestPart applies only the regression test in dir: test.patch when the case has one,
// else the test files of golden.patch.
func applyTestPart(ctx context.Context, t *testing.T, c Case, dir string) []string {
	t.Helper()
	if c.TestPatch != "" {
		patch := filepath.Join(t.TempDir(), "test.patch")
		if err := os.WriteFile(patch, []byte(c.TestPatch), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := runGit(ctx, dir, "apply", "--whitespace=nowarn", patch); err != nil {
			t.Fatalf("git apply test.patch: %v\n%s", err, out)
		}
		return testModules(c.TestPatchFiles())
	}
	tests := goldenTestFiles(t, c)
	patch := filepath.Join(t.TempDir(), "golden.patch")
	if err := os.WriteFile(patch, []byte(c.Golden), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"apply", "--whitespace=nowarn"}
	for _, f := range tests {
		args = append(args, "--include="+f)
	}
	if out, err := runGit(ctx, dir, append(args, patch)...); err != nil {
		t.Fatalf("git apply the test part of golden.patch: %v\n%s", err, out)
	}
	return testModules(tests)
}

// checkGoldenTestsFailAtBug: a regression test that golden.patch brings must fail at the bug
// (the code as it is, the test added): it is what the evidence step checks of a maker.
func checkGoldenTestsFailAtBug(ctx context.Context, t *testing.T, c Case, dir string, pytest []string) {
	t.Helper()
	if err := c.Materialize(ctx, dir); err != nil {
		t.Fatalf("Materialize: %v", err)
	}
	tests := applyTestPart(ctx, t, c, dir)
	failed, out := runPytest(ctx, t, c, dir, pytest, tests...)
	var new []string
	for _, f := range failed {
		if !slices.Contains(c.BaseFailures, f) {
			new = append(new, f)
		}
	}
	if len(new) == 0 {
		t.Errorf("golden.patch's tests %v pass at the bug; a regression test must fail there:\n%s", tests, out)
	}
}

// runPytest runs the project's test suite (or the given paths) as a gate would: pytest from
// the repository root, configuration as the project sets it, the case's test_env set, and
// returns the failing and erroring tests, sorted, as pytest's summary names them.
func runPytest(ctx context.Context, t *testing.T, c Case, dir string, pytest []string, paths ...string) ([]string, string) {
	t.Helper()
	args := append(append([]string{}, pytest[1:]...), "-q", "-rfE", "-p", "no:cacheprovider", "--continue-on-collection-errors")
	cmd := exec.CommandContext(ctx, pytest[0], append(args, paths...)...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1"), c.TestEnv...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("run pytest in %s: %v", dir, err)
		}
	}
	failed := []string{}
	for _, line := range strings.Split(string(out), "\n") {
		for _, prefix := range []string{"FAILED ", "ERROR "} {
			if rest, ok := strings.CutPrefix(line, prefix); ok {
				id, _, _ := strings.Cut(rest, " - ")
				if id = strings.TrimSpace(id); !slices.Contains(failed, id) {
					failed = append(failed, id)
				}
			}
		}
	}
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 5 && len(paths) == 0 {
		// pytest collects none of the project's tests (a root test.py of unittest cases):
		// run them as ticketd then does, with unittest.
		return runUnittest(ctx, t, c, dir)
	}
	if err != nil && len(failed) == 0 {
		failed = append(failed, "pytest exited non-zero without naming a test: "+err.Error())
	}
	slices.Sort(failed)
	return failed, string(out)
}

// runUnittest runs `python3 -m unittest discover` in dir and returns its failing tests (as
// unittest's FAIL:/ERROR: lines name them), or one line saying it ran none.
func runUnittest(ctx context.Context, t *testing.T, c Case, dir string) ([]string, string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, "python3", "-m", "unittest", "discover")
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1"), c.TestEnv...)
	out, err := cmd.CombinedOutput()
	failed := []string{}
	for _, line := range strings.Split(string(out), "\n") {
		for _, prefix := range []string{"FAIL: ", "ERROR: "} {
			if rest, ok := strings.CutPrefix(line, prefix); ok {
				failed = append(failed, strings.TrimSpace(rest))
			}
		}
	}
	if !strings.Contains(string(out), "\nRan ") || strings.Contains(string(out), "Ran 0 tests") {
		failed = append(failed, "neither pytest nor unittest found a test")
	} else if err != nil && len(failed) == 0 {
		failed = append(failed, "unittest exited non-zero without naming a test: "+err.Error())
	}
	slices.Sort(failed)
	return failed, string(out)
}

// checkTestPatch: test.patch applies at the bug as exact-match edits, and with the golden
// patch its tests pass and the visible suite fails only its base_failures.
func checkTestPatch(ctx context.Context, t *testing.T, c Case, base, dir string, pytest []string) {
	t.Helper()
	if err := c.Materialize(ctx, dir); err != nil {
		t.Fatalf("Materialize: %v", err)
	}
	patch := filepath.Join(t.TempDir(), "golden.patch")
	if err := os.WriteFile(patch, []byte(c.Golden), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := runGit(ctx, dir, "apply", "--whitespace=nowarn", patch); err != nil {
		t.Fatalf("git apply golden.patch: %v\n%s", err, out)
	}
	tests := applyTestPart(ctx, t, c, dir)
	checkReplay(t, c, c.TestPatch, base, dir)
	if failed, out := runPytest(ctx, t, c, dir, pytest, tests...); len(failed) > 0 {
		t.Errorf("test.patch's tests fail with the golden patch: %q\n%s", failed, out)
	}
	if failed, out := runPytest(ctx, t, c, dir, pytest); !slices.Equal(failed, sorted(c.BaseFailures)) {
		t.Errorf("with golden.patch and test.patch, failing: %q; want only base_failures %q:\n%s", failed, sorted(c.BaseFailures), out)
	}
}

// checkGolden checks what the bench and the scripted model rely on: git
// headers, and every hunk's old text found exactly once in the file at the bug
// (a file the patch adds has none). A golden patch may bring a regression test,
// as upstream fixes do, but must change project code too.
func checkGolden(t *testing.T, c Case, base string) {
	t.Helper()
	files, err := parsePatch(c.Golden)
	if err != nil {
		t.Fatalf("golden.patch: %v", err)
	}
	if len(files) == 0 {
		t.Fatalf("golden.patch changes no file")
	}
	code := 0
	for _, f := range files {
		if !IsTestPath(f.path) {
			code++
		}
		if f.isNew {
			continue
		}
		src, err := os.ReadFile(filepath.Join(base, filepath.FromSlash(f.path)))
		if err != nil {
			t.Errorf("golden.patch changes %s, which is not in repo/: %v", f.path, err)
			continue
		}
		for i, h := range f.hunks {
			if n := strings.Count(string(src), h.old); n != 1 {
				t.Errorf("golden.patch %s hunk %d: old text found %d times, want exactly 1:\n%s", f.path, i+1, n, h.old)
			}
			if h.context < 3 && !h.atEdge {
				t.Errorf("golden.patch %s hunk %d: %d lines of leading context, want 3 (make it with git diff)", f.path, i+1, h.context)
			}
		}
	}
	if code == 0 {
		t.Errorf("golden.patch changes only test files; it must fix the project's code")
	}
}

type patchHunk struct {
	old     string // context and removed lines, as they appear in the file
	new     string // context and added lines, what old becomes
	context int    // leading context lines
	atEdge  bool   // hunk starts at line 1, so less leading context is normal
}

type patchFile struct {
	path  string
	hunks []patchHunk
	isNew bool // the patch adds the file (--- /dev/null)
}

// parsePatch reads a git-style unified diff into files and hunks, enough to
// check the hunks replay as exact-match edits.
func parsePatch(diff string) ([]patchFile, error) {
	var files []patchFile
	var cur *patchFile
	var h *patchHunk
	leading := true
	flush := func() {
		if h != nil && cur != nil {
			cur.hunks = append(cur.hunks, *h)
		}
		h = nil
	}
	lines := strings.Split(diff, "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		switch {
		case strings.HasPrefix(line, "diff --git "):
			flush()
			fields := strings.Fields(line)
			if len(fields) != 4 || !strings.HasPrefix(fields[2], "a/") || !strings.HasPrefix(fields[3], "b/") {
				return nil, fmt.Errorf("line %d: bad header %q, want `diff --git a/x b/x`", i+1, line)
			}
			files = append(files, patchFile{path: strings.TrimPrefix(fields[3], "b/")})
			cur = &files[len(files)-1]
		case cur != nil && h == nil && line == "--- /dev/null":
			cur.isNew = true
		case strings.HasPrefix(line, "@@"):
			flush()
			if cur == nil {
				return nil, fmt.Errorf("line %d: hunk before any `diff --git` header", i+1)
			}
			var oldStart int
			if _, err := fmt.Sscanf(line, "@@ -%d", &oldStart); err != nil {
				return nil, fmt.Errorf("line %d: bad hunk header %q", i+1, line)
			}
			h = &patchHunk{atEdge: oldStart <= 1}
			leading = true
		case h != nil && strings.HasPrefix(line, " "):
			h.old += line[1:] + "\n"
			h.new += line[1:] + "\n"
			if leading {
				h.context++
			}
		case h != nil && strings.HasPrefix(line, "-"):
			h.old += line[1:] + "\n"
			leading = false
		case h != nil && strings.HasPrefix(line, "+"):
			h.new += line[1:] + "\n"
			leading = false
		case h != nil && strings.HasPrefix(line, `\`):
			// "\ No newline at end of file"
		default:
			flush()
		}
	}
	flush()
	return files, nil
}

// checkReplay replays the golden hunks in order as exact-match edits on the
// files at the bug, as the scripted model does, and checks the result equals
// what git apply produced.
func checkReplay(t *testing.T, c Case, diff, base, fixed string) {
	t.Helper()
	files, err := parsePatch(diff)
	if err != nil {
		t.Fatalf("patch: %v", err)
	}
	for _, f := range files {
		if f.isNew {
			continue
		}
		src, err := os.ReadFile(filepath.Join(base, filepath.FromSlash(f.path)))
		if err != nil {
			continue // reported by checkGolden
		}
		text := string(src)
		for i, h := range f.hunks {
			if n := strings.Count(text, h.old); n != 1 {
				t.Errorf("replay %s hunk %d: old text found %d times after the earlier hunks, want 1", f.path, i+1, n)
				continue
			}
			text = strings.Replace(text, h.old, h.new, 1)
		}
		want, err := os.ReadFile(filepath.Join(fixed, filepath.FromSlash(f.path)))
		if err != nil {
			t.Fatalf("read patched %s: %v", f.path, err)
		}
		if text != string(want) {
			t.Errorf("replaying the patch's hunks on %s as exact-match edits differs from git apply:\n got  %q\n want %q", f.path, text, want)
		}
	}
}

// checkWrongGuess applies the scripted maker's wrong first guess to a fresh checkout and
// checks the hidden tests catch it: the guess must be a real bug, so a `never` scenario can
// never be judged fixed (a harmless edit inside a docstring would be).
func checkWrongGuess(ctx context.Context, t *testing.T, c Case, dir string, pytest []string) {
	t.Helper()
	if err := c.Materialize(ctx, dir); err != nil {
		t.Fatalf("Materialize: %v", err)
	}
	rel, old, broken, err := scriptedmodel.WrongGuess(c.Golden)
	if err != nil {
		t.Fatalf("WrongGuess(golden.patch): %v", err)
	}
	p := filepath.Join(dir, filepath.FromSlash(rel))
	src, _ := os.ReadFile(p)
	text := string(src)
	switch {
	case old == "":
		text = broken
	case strings.Count(text, old) != 1:
		t.Fatalf("wrong guess: its old text is found %d times in %s, want 1", strings.Count(text, old), rel)
	default:
		text = strings.Replace(text, old, broken, 1)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	passed, out, _ := c.Judge(ctx, dir, pytest)
	if passed {
		t.Errorf("the scripted wrong guess (%s: %q → %q) passes the hidden tests; it must be a bug they catch:\n%s", rel, old, broken, out)
	}
	// The scripted maker writes the patch's regression test beside its wrong guess: the
	// test must catch the guess too, or the gate would let it through.
	if c.GoldenAddsTests() || c.TestPatch != "" {
		tests := applyTestPart(ctx, t, c, dir)
		if failed, out := runPytest(ctx, t, c, dir, pytest, tests...); len(failed) == 0 {
			t.Errorf("the scripted wrong guess passes the case's regression tests %v; they must catch it:\n%s", tests, out)
		}
	}
}
