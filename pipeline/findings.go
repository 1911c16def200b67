package pipeline

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/ticketd/ticketd/pipeline/tools"
	"github.com/ticketd/ticketd/pipeline/validate"
)

// A change answers for what it does to the checks before it is judged. Suppressions it adds
// (skip and xfail markers, unittest.skip, # noqa, # type: ignore, per-file ignores) are
// refused unless the issue asks for them; changes to the test configuration (conftest.py,
// pytest.ini, tox.ini, ...) are refused since the checks never use them; code under test
// that reaches into the test runner (see runnerReach) is refused, since it runs inside the
// runner's process; a protected path (see tools.ProtectedPath) is refused as the write tools
// refuse it. The maker is told once; a change that still carries them ends the attempt for a
// human (StatusTestsChanged), who may accept it (ticketctl accept) when the fix truly needs
// them.

// MaxFindingRefusals bounds the submits sent back for suppressions, test configuration or
// protected paths; the next such submit ends the attempt for a human.
const MaxFindingRefusals = 1

// suppression is one kind of added line that silences a check.
type suppression struct {
	what     string
	re       *regexp.Regexp
	keywords []string // an issue that says one of these asks for the suppression
}

var suppressions = []suppression{
	{"a skip marker", regexp.MustCompile(`\bmark\.skip|pytest\.skip\(|pytest\.importorskip\(|unittest\.skip|@skip(If|Unless)?\b|\.skipTest\(|SkipTest\b`), []string{"skip"}},
	{"an expected-failure marker", regexp.MustCompile(`\bmark\.xfail|pytest\.xfail\(|expectedFailure`), []string{"xfail", "expected failure", "expectedfailure"}},
	// Ruff and flake8 read noqa in any case, and a file-level "# flake8: noqa" as Ruff's own.
	{"a # noqa", regexp.MustCompile(`(?i)#\s*((ruff|flake8):\s*)?noqa\b`), []string{"noqa"}},
	// A "# mypy:" comment is mypy's inline configuration (ignore-errors, disable-error-code,
	// allow-untyped-defs...): the module's own mypy.ini section.
	{"a # type: ignore", regexp.MustCompile(`#\s*type:\s*ignore|#\s*mypy:|#\s*pyright:\s*(ignore|basic\b)`), []string{"type: ignore", "type ignore", "ignore-errors", "disable-error-code"}},
	{"per-file ignores", regexp.MustCompile(`per[-_]file[-_]ignores`), []string{"per-file", "per_file"}},
}

// hunkHeader reads the new side's first line of a unified diff hunk.
var hunkHeader = regexp.MustCompile(`^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@`)

// isHunkHeader is hunkHeader.MatchString(l), its expression run only on a line starting as
// every hunk header does: a diff's other lines (most of them) never can match, and each match
// of the expression allocates.
func isHunkHeader(l string) bool {
	return strings.HasPrefix(l, "@@ -") && hunkHeader.MatchString(l)
}

// hunkHeaderMatch is hunkHeader.FindStringSubmatch(l), likewise.
func hunkHeaderMatch(l string) []string {
	if !strings.HasPrefix(l, "@@ -") {
		return nil
	}
	return hunkHeader.FindStringSubmatch(l)
}

// addedSuppressions lists "path:line: adds <what>" for each line diff adds that silences a
// check, where the issue (issueText) does not ask for it.
func addedSuppressions(diff, issueText string) []string {
	issue := strings.ToLower(issueText)
	var out []string
	for _, fd := range splitDiff(diff) {
		for _, l := range addedLines(fd) {
			for _, s := range suppressions {
				if s.re.MatchString(l.text) && !asked(issue, s.keywords) {
					out = append(out, fmt.Sprintf("%s:%d: adds %s: %s", fd.path, l.n, s.what, clip(strings.TrimSpace(l.text), 120)))
					break
				}
			}
		}
	}
	return out
}

// numberedLine is a line of a file's new version, with its number.
type numberedLine struct {
	n    int
	text string
}

// addedLines are the lines fd adds, numbered in the new version. A line the same file's
// diff also removes (moved, re-indented) is not added. The "--- a/" and "+++ b/" lines are
// headers only before the first hunk: inside one, "+++x" is an added line "++x" (Python reads
// "++pytest.skip(...)" as a call), never a header to pass over.
func addedLines(fd fileDiff) []numberedLine {
	lines := strings.Split(fd.body, "\n")
	removed := map[string]bool{}
	inHunk := false
	for _, l := range lines {
		switch {
		case isHunkHeader(l):
			inHunk = true
		case inHunk && strings.HasPrefix(l, "-"):
			removed[strings.TrimSpace(l[1:])] = true
		}
	}
	var out []numberedLine
	n := 0
	inHunk = false
	for _, l := range lines {
		if m := hunkHeaderMatch(l); m != nil {
			n, _ = strconv.Atoi(m[1])
			inHunk = true
			continue
		}
		switch {
		case !inHunk:
		case strings.HasPrefix(l, "+"):
			if !removed[strings.TrimSpace(l[1:])] {
				out = append(out, numberedLine{n, l[1:]})
			}
			n++
		case strings.HasPrefix(l, " "):
			n++
		}
	}
	return out
}

func asked(issue string, keywords []string) bool {
	return slices.ContainsFunc(keywords, func(k string) bool { return strings.Contains(issue, k) })
}

// fileDiff is one file's part of a git diff.
type fileDiff struct {
	path string // the new path ("b/..."), or the old one for a deletion
	body string // from its "diff --git" line to the next
}

// splitDiff cuts a git diff into its files.
func splitDiff(diff string) []fileDiff {
	var out []fileDiff
	var cur *fileDiff
	var b strings.Builder
	inHunk := false
	flush := func() {
		if cur != nil {
			cur.body = b.String()
			out = append(out, *cur)
		}
		b.Reset()
	}
	for _, l := range strings.SplitAfter(diff, "\n") {
		if strings.HasPrefix(l, "diff --git ") {
			flush()
			cur = &fileDiff{}
			inHunk = false
		}
		if cur == nil {
			continue
		}
		b.WriteString(l)
		if inHunk = inHunk || isHunkHeader(l); inHunk {
			// An added line "++ b/tests/test_x.py" is "+++ b/tests/test_x.py" here: a
			// header only before the first hunk, else it would name the file's lines a
			// test's, which the nets for code under test pass over.
			continue
		}
		if p, ok := strings.CutPrefix(strings.TrimRight(l, "\n"), "+++ "); ok && p != "/dev/null" {
			cur.path = DiffPaths("+++ " + p + "\n")[0]
		} else if p, ok := strings.CutPrefix(strings.TrimRight(l, "\n"), "--- "); ok && p != "/dev/null" && cur.path == "" {
			cur.path = DiffPaths("--- " + p + "\n")[0]
		}
	}
	flush()
	return out
}

// fileDiffs is the part of diff that changes paths, for the report's list of test changes.
func fileDiffs(diff string, paths []string) string {
	var b strings.Builder
	for _, fd := range splitDiff(diff) {
		if slices.Contains(paths, fd.path) {
			b.WriteString(fd.body)
		}
	}
	return b.String()
}

// TestChangesDiff is the part of diff that edits the base commit's test files and test
// configuration (ev's TestChanges and InfraChanges): what the report shows a human as the
// test changes, never evidence.
func TestChangesDiff(diff string, ev *Evidence) string {
	if ev == nil {
		return ""
	}
	return fileDiffs(diff, append(slices.Clone(ev.TestChanges), ev.InfraChanges...))
}

// shadowFindings name the changed paths that are modules named like a check's tool
// (tools.ShadowModule) in a folder that is not a package (no __init__.py in the worktree):
// where a check puts that folder on its import path (a PYTHONPATH of its own, a folder the
// base's imports needed, pytest's pythonpath), Python imports them instead of the tool. The
// write tools refuse them at the root and in src/ already; deeper, only the checks'
// configuration says whether a folder is on the path, so any such folder counts.
func shadowFindings(ctx context.Context, job Job, changed []string) []string {
	var out []string
	for _, p := range changed {
		if hasGitElement(p) || tools.ProtectedPath(p, job.AllowPaths) != "" || tools.Allowed(job.AllowPaths, p) {
			continue // refused by the write tools already, or allowed by the operator
		}
		parts := strings.Split(p, "/")
		for i := 1; i < len(parts); i++ {
			name := parts[i]
			if i == len(parts)-1 {
				if !strings.HasSuffix(name, ".py") {
					break
				}
				name = strings.TrimSuffix(name, ".py")
			}
			folder := strings.Join(parts[:i], "/")
			if _, err := os.Lstat(filepath.Join(job.Dir, folder, "__init__.py")); err == nil {
				continue // a package: its modules are never top-level
			}
			if tools.ShadowModule(name) {
				out = append(out, fmt.Sprintf("%s: a module named like the check tool %q in %s/, a folder that is not a package: on a check's import path Python would import it instead of the tool", p, name, folder))
				break
			}
		}
		if module, folder := onCheckPath(job, p); module != "" && tools.ImportedModule(module) && !tools.ShadowModule(module) && !inBase(ctx, job, p) {
			out = append(out, fmt.Sprintf("%s: a module named like %q, which Python and the checks' tools import, in %s/, a folder a check puts on its import path: Python would import it instead of the real one, inside the checks", p, module, folder))
		}
	}
	return out
}

// onCheckPath is the top-level module p is in a folder a check puts on PYTHONPATH
// (Check.PythonPath), and that folder: module.py or module/__init__.py right inside it
// (what shadows a module of the same name); "" otherwise.
func onCheckPath(job Job, p string) (module, folder string) {
	for _, c := range job.Checks {
		for _, f := range c.PythonPath {
			f = strings.Trim(path.Clean(f), "/")
			rest, ok := strings.CutPrefix(p, f+"/")
			if !ok || f == "." || f == "" {
				continue
			}
			if name, ok := strings.CutSuffix(rest, ".py"); ok && !strings.Contains(name, "/") {
				return name, f
			}
			if name, ok := strings.CutSuffix(rest, "/__init__.py"); ok && !strings.Contains(name, "/") {
				return name, f
			}
		}
	}
	return "", ""
}

// inBase reports whether the base commit holds p (the project's own module there); false
// when it cannot be read.
func inBase(ctx context.Context, job Job, p string) bool {
	if job.BaseFile == nil {
		return false
	}
	_, found, err := job.BaseFile(ctx, p)
	return err == nil && found
}

// lintIgnoreNames are files that hide files from a check without configuring it: Ruff
// respects them (respect-gitignore, on by default), and skips a tracked file they name.
var lintIgnoreNames = map[string]bool{".gitignore": true, ".ignore": true}

// runnerReach matches a line of code that reaches into the test runner: pytest's internals
// (_pytest, pluggy), its hooks, its JUnit report, a test of whether it runs under pytest, or
// an assignment over unittest's classes (TestCase.assertEqual = ...). Code under test runs
// inside the runner's own process, so such a line in it can rewrite what the runner reports
// (every failure a pass) or behave one way under test and another in use.
var runnerReach = regexp.MustCompile(`\b_pytest\b|\bpluggy\b|\bjunitxml\b|\bpytest_[a-z_]+\b|PYTEST_[A-Z_]+|\bsys\.modules\b.*\bpytest\b|\bpytest\b.*\bsys\.modules\b` +
	`|\b(unittest(\.\w+)*|TestCase|TestResult|TextTestResult|TestSuite|TestLoader)\.\w+\s*=[^=]|\bsetattr\(\s*(unittest|TestCase|TestResult)\b`)

// outcomeReach matches a line that decides what the runner reports: a hook that makes or
// reads the reports, picks the tests or ends the session, a hook wrapper (which sees and can
// change any hook's result), or an assignment over a report's or the session's outcome. A
// project's own pytest plugin (a module whose base mentions pytest, loaded by its conftest or
// its entry point) runs in the runner's process as a conftest does: its fixes add fixtures and
// options, never these, unless the issue is about them.
var outcomeReach = regexp.MustCompile(`\bdef\s+pytest_(runtest_\w+|report_\w+|collection_modifyitems|deselected|ignore_collect|collect_file|pycollect_makeitem|pyfunc_call|make_collect_report|collectreport|itemcollected|sessionfinish|runtestloop|terminal_summary)\b` +
	`|\b(hookwrapper|wrapper)\s*=\s*True|\.(outcome|exitstatus|longrepr|wasxfail)\s*=[^=]`)

// runnerKeywords are what an issue says when it is about the code's own pytest integration,
// and so asks for such lines.
var runnerKeywords = []string{"_pytest", "pluggy", "pytest plugin", "pytest hook", "junitxml", "pytest_"}

// runnerReaches lists "path:line: adds code that reaches into the test runner: ..." for each
// line diff adds to the code under test (not a test path of tree, not test configuration)
// that matches runnerReach, unless the issue (issueText) is about pytest integration; where the
// file's base version already mentions pytest or unittest (the project's own plugin or test
// helpers), only the lines that decide outcomes (outcomeReach) count. A net for the plain move, like the suppressions: code that hides the reach
// (names built at run time) is left to the checker and the judge, who read the diff.
func runnerReaches(ctx context.Context, tree *testTree, diff, issueText string) []string {
	if asked(strings.ToLower(issueText), runnerKeywords) {
		return nil
	}
	var out []string
	var pluggyKnown, pluggyOwn bool
	for _, fd := range splitDiff(diff) {
		if !strings.HasSuffix(fd.path, ".py") || tree.isTestPath(fd.path) || isInfraPath(fd.path) {
			continue
		}
		reach := runnerReach
		if tree.baseFile != nil {
			if base, found, err := tree.baseFile(ctx, fd.path); err == nil && found && (strings.Contains(string(base), "pytest") || strings.Contains(string(base), "unittest")) {
				reach = outcomeReach // the project's own plugin or test helpers
			}
		}
		for _, l := range addedLines(fd) {
			if reach.MatchString(l.text) && !ownsPluggy(ctx, tree, &pluggyKnown, &pluggyOwn, l.text) {
				out = append(out, fmt.Sprintf("%s:%d: adds code that reaches into the test runner (its internals, hooks or report, or whether the code runs under test) to the code under test: %s", fd.path, l.n, clip(strings.TrimSpace(l.text), 120)))
			}
		}
	}
	return out
}

// dependencyFiles are where a project names what it depends on.
var dependencyFiles = []string{"pyproject.toml", "setup.cfg", "setup.py", "requirements.txt"}

// pluggyName matches pluggy named as a requirement (`"pluggy>=1.0"`, `pluggy\n`, `pluggy ~= 1.5`).
var pluggyName = regexp.MustCompile(`(?m)(^|["'\s,\[])pluggy\s*([<>=!~;,\]"'\[]|$)`)

// ownsPluggy reports whether line's only reach into the runner is pluggy and the project
// depends on pluggy at its base (tox, datasette and every plugin host build on it: there an
// `import pluggy` is the project's own code, not a reach into pytest). known and own cache the
// base's answer for one diff.
func ownsPluggy(ctx context.Context, tree *testTree, known, own *bool, line string) bool {
	if runnerReach.MatchString(strings.ReplaceAll(line, "pluggy", "")) || !strings.Contains(line, "pluggy") {
		return false
	}
	if !*known {
		*known = true
		for _, p := range dependencyFiles {
			if tree.baseFile == nil {
				break
			}
			if data, found, err := tree.baseFile(ctx, p); err == nil && found && pluggyName.Match(data) {
				*own = true
				break
			}
		}
	}
	return *own
}

// submitFindings are what a change (diff, touching changed) must answer for before it is
// judged, one line each; tree tells the tests from the code.
func submitFindings(ctx context.Context, job Job, tree *testTree, diff string, changed []string) []string {
	var out []string
	for _, p := range changed {
		if why := tools.ProtectedPath(p, job.AllowPaths); why != "" {
			out = append(out, fmt.Sprintf("%s: is %s; files that run elsewhere never reach a fix branch", p, why))
		}
	}
	out = append(out, shadowFindings(ctx, job, changed)...)
	out = append(out, stubFindings(ctx, job, changed)...)
	out = append(out, testPackageFindings(ctx, job, tree, changed)...)
	out = append(out, libraryShadowFindings(ctx, job, tree, changed)...)
	out = append(out, lintSkippedFindings(ctx, job, changed)...)
	for _, p := range infraPaths(changed) {
		out = append(out, fmt.Sprintf("%s: changes the test configuration, which the checks never use (they run with the base commit's version)", p))
	}
	for _, p := range changed {
		if lintIgnoreNames[path.Base(p)] && !hasGitElement(p) {
			out = append(out, fmt.Sprintf("%s: changes which files the checks see (Ruff skips every file .gitignore and .ignore name, tracked or not)", p))
		}
	}
	issue := job.Ticket.Title + "\n" + job.Ticket.Body
	for _, q := range job.Ticket.Questions {
		issue += "\n" + q.Answer
	}
	out = append(out, addedSuppressions(diff, issue)...)
	out = append(out, runnerReaches(ctx, tree, diff, issue)...)
	out = append(out, testReaches(ctx, tree, diff)...)
	out = append(out, hiddenTextFindings(ctx, tree, diff, changed)...)
	return append(out, bytecodeReaches(ctx, tree, diff, issue)...)
}

// stubFindings lists each type stub (.pyi) the change adds beside a module of the worktree
// (calc.pyi beside calc.py, pkg/__init__.pyi beside pkg/__init__.py): mypy reads the stub
// instead of the module, so the module's own type errors would go unseen by the type check.
// A stub the base commit already has is the project's, and may be edited.
func stubFindings(ctx context.Context, job Job, changed []string) []string {
	var out []string
	for _, p := range changed {
		module, ok := strings.CutSuffix(p, ".pyi")
		if !ok || hasGitElement(p) || tools.Allowed(job.AllowPaths, p) || inBase(ctx, job, p) {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(job.Dir, filepath.FromSlash(module+".py"))); err == nil && fi.Mode().IsRegular() {
			out = append(out, fmt.Sprintf("%s: adds a type stub beside %s.py, which mypy reads instead of the module: the module's own type errors would go unseen by the type check", p, module))
		}
	}
	return out
}

// testPackageFindings lists each __init__.py the change adds, outside the tests, that makes
// a package of a folder holding one of the base's tests or above it (the repository's root
// too): pytest imports a test module in a package by its package name, so it runs each
// __init__.py of that chain before the test, a file nothing but the test run imports. Code
// there (calc.add = ... in a new root __init__.py) would change what the base's tests see
// and nothing a user runs: the checks would pass without the code being fixed. A fix puts
// new code in a package of its own, beside the tests' folders, not over them. An
// __init__.py the base commit has may be edited: it is the project's package.
func testPackageFindings(ctx context.Context, job Job, tree *testTree, changed []string) []string {
	var inits []string
	for _, p := range changed {
		if path.Base(p) == "__init__.py" && !hasGitElement(p) && !tree.isTestPath(p) && !tools.Allowed(job.AllowPaths, p) && !inBase(ctx, job, p) {
			if fi, err := os.Lstat(filepath.Join(job.Dir, filepath.FromSlash(p))); err == nil && fi.Mode().IsRegular() {
				inits = append(inits, p)
			}
		}
	}
	if len(inits) == 0 {
		return nil
	}
	isPackage := func(folder string) bool {
		fi, err := os.Lstat(filepath.Join(job.Dir, filepath.FromSlash(folder), "__init__.py"))
		return err == nil && fi.Mode().IsRegular()
	}
	var out []string
	for _, p := range inits {
		folder := path.Dir(p)
		for _, test := range tree.watched() {
			if !strings.HasSuffix(test, ".py") || !tree.isTestPath(test) || !underPackage(test, folder, isPackage) || !inBase(ctx, job, test) {
				continue
			}
			out = append(out, fmt.Sprintf("%s: a new __init__.py that makes a package of the folder over the base's test %s: pytest would run it before that test as part of the test's package, code that runs only under test; put new code in a package of its own, outside the folders of the tests", p, test))
			break
		}
	}
	return out
}

// libraryShadowFindings lists each Python file the change adds, outside the tests, that is a
// module or package named like a library the base's test runs imported from outside the
// worktree (validate.Result.Modules: yaml, six, what the tests assert with or read their
// expected values through), in a folder that is not a package: on a check's import path (the
// worktree's root for python -m pytest, src/, a folder of a test module that pytest puts
// first) Python imports it instead of the library, inside the checks, so a stand-in for
// yaml.safe_load would pass the tests with the code unfixed. The write tools and
// shadowFindings cover the standard library and the tools' own modules by name; this covers
// what this repository's runs import. A module the base commit has is the project's.
func libraryShadowFindings(ctx context.Context, job Job, tree *testTree, changed []string) []string {
	libs := map[string]bool{}
	for _, r := range job.Baseline {
		for _, m := range r.Modules {
			libs[m] = true
		}
	}
	if len(libs) == 0 {
		return nil
	}
	var out []string
	for _, p := range changed {
		if !strings.HasSuffix(p, ".py") || hasGitElement(p) || tree.isTestPath(p) || tools.ProtectedPath(p, job.AllowPaths) != "" || tools.Allowed(job.AllowPaths, p) || inBase(ctx, job, p) {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(job.Dir, filepath.FromSlash(p))); err != nil || !fi.Mode().IsRegular() {
			continue // removed: it shadows nothing
		}
		parts := strings.Split(strings.TrimSuffix(p, ".py"), "/")
		for i, name := range parts {
			folder := strings.Join(parts[:i], "/")
			if folder == "" {
				folder = "."
			}
			if _, err := os.Lstat(filepath.Join(job.Dir, filepath.FromSlash(folder), "__init__.py")); err == nil && folder != "." {
				continue // inside a package: its modules are never top-level (the root is on the path whatever it holds)
			}
			if libs[name] {
				out = append(out, fmt.Sprintf("%s: a new module named like %q, a library the base's checks import from outside the repository, in %s/, a folder that is not a package: on a check's import path Python would import it instead of the library, inside the checks; name it after what it does, inside the project's package", p, name, folder))
				break
			}
		}
	}
	return out
}

// underPackage reports whether pytest imports the Python file test as part of a package that
// folder is in: folder is test's own folder or one above it, and every folder from test's up
// to folder is a package (isPackage).
func underPackage(test, folder string, isPackage func(string) bool) bool {
	for d := path.Dir(test); ; d = path.Dir(d) {
		if !isPackage(d) {
			return false
		}
		if d == folder {
			return true
		}
		if d == "." {
			return false
		}
	}
}

// ruffDefaultExclude are the folder names Ruff skips by default (its `exclude` setting's
// default, with `build`, which Ruff versions before 0.1 skipped too): a file in one is never
// linted by `ruff check .` unless the project configures otherwise.
var ruffDefaultExclude = map[string]bool{".bzr": true, ".direnv": true, ".eggs": true, ".git": true, ".git-rewrite": true,
	".hg": true, ".ipynb_checkpoints": true, ".mypy_cache": true, ".nox": true, ".pants.d": true, ".pyenv": true,
	".pytest_cache": true, ".pytype": true, ".ruff_cache": true, ".svn": true, ".tox": true, ".venv": true, ".vscode": true,
	"__pypackages__": true, "_build": true, "buck-out": true, "build": true, "dist": true, "node_modules": true,
	"site-packages": true, "venv": true}

// lintSkippedFindings lists each Python file the change adds inside a folder Ruff skips by
// default (dist/helpers.py), where the job has a ruff check: code the package imports from
// there would never be linted. A folder the base commit already keeps files in is the
// project's (a vendored library it excludes on purpose, a package named build): a file added
// or edited there is the project's business, linted or not as its configuration says.
func lintSkippedFindings(ctx context.Context, job Job, changed []string) []string {
	if !slices.ContainsFunc(job.Checks, func(c validate.Check) bool { return c.Kind == validate.KindRuff }) {
		return nil
	}
	var out []string
	for _, p := range changed {
		if !strings.HasSuffix(p, ".py") && !strings.HasSuffix(p, ".pyi") || hasGitElement(p) || tools.Allowed(job.AllowPaths, p) || inBase(ctx, job, p) {
			continue
		}
		parts := strings.Split(p, "/")
		for i, name := range parts[:len(parts)-1] {
			folder := strings.Join(parts[:i+1], "/")
			if !ruffDefaultExclude[strings.ToLower(name)] || keepsBaseFiles(ctx, job, folder) {
				continue
			}
			if fi, err := os.Lstat(filepath.Join(job.Dir, filepath.FromSlash(p))); err == nil && fi.Mode().IsRegular() {
				out = append(out, fmt.Sprintf("%s: a new Python file in %s/, a folder Ruff skips by default: the lint check would never read it; put the code in the package, beside the module that uses it", p, folder))
			}
			break
		}
	}
	return out
}

// maxFolderScan bounds the files keepsBaseFiles looks at.
const maxFolderScan = 200

// keepsBaseFiles reports whether the worktree's folder holds a file the base commit has
// (among the first maxFolderScan files found in it).
func keepsBaseFiles(ctx context.Context, job Job, folder string) bool {
	n := 0
	found := false
	_ = filepath.WalkDir(filepath.Join(job.Dir, filepath.FromSlash(folder)), func(p string, d fs.DirEntry, err error) error {
		if err != nil || found || n >= maxFolderScan {
			return filepath.SkipAll
		}
		if d.Type().IsRegular() {
			n++
			if rel, err := filepath.Rel(job.Dir, p); err == nil && inBase(ctx, job, filepath.ToSlash(rel)) {
				found = true
				return filepath.SkipAll
			}
		}
		return nil
	})
	return found
}

// bytecodeLine matches a line that writes Python's compiled bytecode or moves where Python
// looks for it: code under test that, inside the test run, plants a .pyc for a test helper
// (an unchecked hash-based one is loaded whatever the source says) and removes it at exit
// leaves no file behind for the gate's stamps to see.
var bytecodeLine = regexp.MustCompile(`\b(pycache_prefix|cache_from_source|_code_to_(hash|timestamp)_pyc|_bootstrap_external|__pycache__|MAGIC_NUMBER|source_hash|py_compile|compileall)\b|\.pyc\b|\bmarshal\.dumps?\b`)

// bytecodeKeywords are what an issue says when it is about the code's own bytecode handling.
var bytecodeKeywords = []string{"pyc", "bytecode", "marshal", "py_compile", "compileall", "pycache"}

// bytecodeReaches lists "path:line: adds code that writes Python bytecode ..." for each line
// diff adds to the code under test that matches bytecodeLine, unless the file's base version
// already mentions bytecode (a packaging tool, an import hook of the project's own) or the
// issue is about it. A net for the plain move, like runnerReaches.
func bytecodeReaches(ctx context.Context, tree *testTree, diff, issueText string) []string {
	if asked(strings.ToLower(issueText), bytecodeKeywords) {
		return nil
	}
	var out []string
	for _, fd := range splitDiff(diff) {
		if !strings.HasSuffix(fd.path, ".py") || tree.isTestPath(fd.path) || isInfraPath(fd.path) {
			continue
		}
		if tree.baseFile != nil {
			if base, found, err := tree.baseFile(ctx, fd.path); err == nil && found && bytecodeLine.Match(base) {
				continue
			}
		}
		for _, l := range addedLines(fd) {
			if bytecodeLine.MatchString(l.text) {
				out = append(out, fmt.Sprintf("%s:%d: adds code that writes Python bytecode or moves where Python reads it (in the test run it could stand in for a test's module) to the code under test: %s", fd.path, l.n, clip(strings.TrimSpace(l.text), 120)))
			}
		}
	}
	return out
}

// testModuleLine matches a line that imports a top-level module (import X, from X import),
// or names one in a string beside sys.modules (under any alias), import_module, __import__
// or ModuleType: one of its groups is the module's dotted name.
var testModuleLine = regexp.MustCompile(`^\s*(?:import|from)\s+([A-Za-z_][\w.]*)|(?:\.modules\b|import_module|__import__|ModuleType\b).*?["']([A-Za-z_][\w.]*)["']|["']([A-Za-z_][\w.]*)["'].*?\.modules\b`)

// testReaches lists "path:line: adds code that reaches into the tests: ..." for each line
// diff adds to the code under test that imports one of the tests' own modules (a test module,
// conftest.py, a helper in a test folder: what the test runner puts on the path) or names one
// beside sys.modules: code that can replace the helper a base test asserts with, before the
// test imports it. Code under test never needs the tests' modules. A net for the plain move,
// like runnerReaches.
func testReaches(ctx context.Context, tree *testTree, diff string) []string {
	names := testModuleNames(tree)
	if len(names) == 0 {
		return nil
	}
	var out []string
	for _, fd := range splitDiff(diff) {
		if !strings.HasSuffix(fd.path, ".py") || tree.isTestPath(fd.path) || isInfraPath(fd.path) {
			continue
		}
		// A name the file's base version already imports is the code's (a dependency that a
		// test helper happens to share a name with: tests/mock.py beside `import mock`).
		known := map[string]bool{}
		if tree.baseFile != nil {
			if base, found, err := tree.baseFile(ctx, fd.path); err == nil && found {
				for _, line := range strings.Split(string(base), "\n") {
					for _, m := range testModuleLine.FindAllStringSubmatch(line, -1) {
						top, _, _ := strings.Cut(m[1]+m[2]+m[3], ".")
						known[top] = true
					}
				}
			}
		}
		for _, l := range addedLines(fd) {
			for _, m := range testModuleLine.FindAllStringSubmatch(l.text, -1) {
				name := m[1] + m[2] + m[3]
				if top, _, _ := strings.Cut(name, "."); names[top] && !known[top] {
					out = append(out, fmt.Sprintf("%s:%d: adds code that reaches into the tests (the tests' own module %s, which the code under test never needs: it could replace what a test asserts with) to the code under test: %s", fd.path, l.n, top, clip(strings.TrimSpace(l.text), 120)))
					break
				}
			}
		}
	}
	return out
}

// testModuleNames are the top-level names under which the base's test Python files can be
// imported (tests, test_calc, helpers, conftest), less those the code has too at the root or
// in src/ (a product module named utils beside a tests/utils.py).
func testModuleNames(tree *testTree) map[string]bool {
	names := map[string]bool{}
	for _, p := range tree.watched() {
		if !strings.HasSuffix(p, ".py") || !tree.isTestPath(p) {
			continue
		}
		dir, file := path.Split(p)
		if mod := strings.TrimSuffix(file, ".py"); mod != "__init__" {
			names[mod] = true
		} else if dir != "" {
			names[path.Base(dir)] = true
		}
		if top, _, ok := strings.Cut(p, "/"); ok && tree.isTestPath(top+"/__init__.py") {
			names[top] = true // a test folder imported as a package: from tests.helpers import check
		}
	}
	for name := range names {
		for _, p := range []string{name + ".py", name + "/__init__.py", "src/" + name + ".py", "src/" + name + "/__init__.py"} {
			if !tree.isTestPath(p) {
				if fi, err := os.Lstat(filepath.Join(tree.dir, p)); err == nil && fi.Mode().IsRegular() {
					delete(names, name)
				}
			}
		}
	}
	return names
}

// refusedFindings opens the answer to a submit with findings. Only a suppression is let
// through by an issue that asks for it; test configuration and protected paths never are.
const refusedFindings = "Not accepted: your change silences or reconfigures the checks, which a fix may not do (a suppression only where the issue asks for it). Nothing was run.\n\n"

// answerFindings refuses a submit with findings; when the maker was told before, the attempt
// ends for a human instead, its patch and branch kept.
func (a *attempt) answerFindings(summary string, findings []string) toolResult {
	var b strings.Builder
	b.WriteString(refusedFindings)
	for _, f := range clipList(findings, 20) {
		fmt.Fprintf(&b, "- %s\n", f)
	}
	b.WriteString("\nTake these out of the change: fix the code so that the tests pass as they are, and leave the test configuration and the files that run elsewhere alone. If the fix truly needs one of them, say why in the submit summary and submit it unchanged: the attempt then ends, and a human decides whether to accept it.")
	if a.findingRefusals < MaxFindingRefusals {
		a.findingRefusals++
		a.jr.note("submit %d: refused before the checks: %s", a.submits, clip(strings.Join(findings, "; "), 300))
		return toolResult{failed: true, text: b.String()}
	}
	out := Outcome{Conclusion: Conclusion{Status: StatusTestsChanged, Reason: "changes the checks themselves, kept for a human (ticketctl accept publishes it): " + clip(strings.Join(findings, "; "), 600)}, Artifacts: Artifacts{Summary: summary}}
	a.jr.note("stopped: %s", out.Reason)
	return toolResult{failed: true, text: b.String(), final: &out}
}

// weakenedStop ends an attempt whose change weakens tests the base passed.
func weakenedStop(jr *journal, summary string, g Gate) toolResult {
	out := Outcome{Conclusion: Conclusion{Status: StatusTestsChanged, Reason: "changes tests the base passed, kept for a human (ticketctl accept publishes it): " + clip(strings.Join(g.Weakened, "; "), 600)}, Artifacts: Artifacts{Summary: summary, Checks: g.Results, Gate: &g}}
	jr.note("stopped: %s", out.Reason)
	return toolResult{failed: true, text: refusedByChecks + g.Text, final: &out}
}
