// Package caseset loads the bench's frozen bug cases and judges a produced
// branch against a case's hidden tests.
//
// A case is a folder: case.yaml (difficulty, scripted behaviour), issue.md
// (what a user reported), repo/ (the project at the bug), golden.patch (one
// known fix) and hidden/ (tests that fail at the bug and pass once fixed).
// The bench judges success only through the hidden tests, never through the
// pipeline's own verdict, so the hidden files are never part of the repository
// the pipeline sees. The format is documented in ../cases/README.md.
package caseset

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/ticketd/ticketd/pipeline/envsetup"
	"github.com/ticketd/ticketd/pipeline/validate"
)

// Difficulties a case may declare in case.yaml.
const (
	Easy   = "easy"
	Medium = "medium"
	Hard   = "hard"
)

// Scripted behaviours of the offline scripted model for a case.
const (
	ScriptSolve          = "solve"            // the right patch at once
	ScriptWrongThenRight = "wrong_then_right" // a first patch that fails a check, then the fix
	ScriptLateFix        = "late_fix"         // several unhelpful steps, then the fix
	ScriptLoop           = "loop"             // repeats itself until the step limit stops it
	ScriptNever          = "never"            // never produces the fix
)

// Sentinel errors; test with errors.Is.
var (
	// ErrInvalidCase marks a case folder that does not follow the format.
	ErrInvalidCase = errors.New("invalid case")
	// ErrNoCases means the cases folder holds no case at all.
	ErrNoCases = errors.New("no cases found")
)

// Case is one frozen bug: the project at the bug, what a user said about it,
// one known fix and the tests that decide whether a fix works.
type Case struct {
	Name       string // folder name, unique in a set
	Dir        string // absolute path of the case folder
	Difficulty string // Easy, Medium or Hard
	// Scripted is the offline scripted model's behaviour for this case; when
	// case.yaml omits it: easy solve, medium wrong_then_right, hard late_fix.
	Scripted string
	Title    string   // from issue.md's front matter
	Body     string   // issue.md after the front matter
	Labels   []string // from issue.md's front matter
	Issue    string   // issue.md as written
	Golden   string   // golden.patch, a git-style unified diff against repo/
	// TestPatch is test.patch when the case has one: upstream's regression test as a diff
	// against repo/ (it may change an existing test module, such as a tests.py), which the
	// scripted model submits beside the golden patch as the test a model writes. "" when
	// the case has none.
	TestPatch string
	// HiddenFiles are the files under hidden/, slash-separated and relative
	// to the repository root they are copied into, sorted.
	HiddenFiles []string
	// HiddenTestCommand, when case.yaml sets it, replaces pytest on the
	// hidden test files as the judge's command (argv, run in the repository).
	HiddenTestCommand []string
	// FailToPass and PassToPass are pytest node ids (visible or hidden) the judge also runs:
	// the first must pass only once fixed, the second at the bug and once fixed.
	FailToPass, PassToPass []string
	// Checks, when case.yaml sets them, replace the bench's default gate (pytest alone) for
	// this case's repository, e.g. a lint and a type check the fix must not regress.
	Checks []validate.Check
	// BaseFailures are the visible tests (pytest node ids; a module that fails to import is
	// its path) that fail at the bug for reasons unrelated to it, as real repositories have
	// them: they fail at the bug and still fail with the golden patch.
	BaseFailures []string
	// TestEnv is NAME=value pairs the bench's judge (and the verification) run the tests
	// with, as the project's own instructions would set them up (PYTHONPATH=src for a src/
	// layout meant to be installed). The pipeline never sees it.
	TestEnv []string
	// Setup, when case.yaml sets it, is the repository's environment recipe
	// (repos.<name>.setup, docs/environments.md): the night builds it and runs the checks in
	// it. The judge does not use it (test_env says how the judge runs).
	Setup *envsetup.Recipe
	// Companions are more issues against the same repository (companions.go).
	Companions []Companion
	// companionSpecs are case.yaml's, read once the patches are.
	companionSpecs []companionSpec
}

// caseFile is case.yaml; unknown keys are an error so a typo cannot silently
// change how a case is run.
type caseFile struct {
	Difficulty        string            `yaml:"difficulty"`
	Scripted          string            `yaml:"scripted"`
	HiddenTestCommand []string          `yaml:"hidden_test_command"`
	FailToPass        []string          `yaml:"fail_to_pass"`
	PassToPass        []string          `yaml:"pass_to_pass"`
	Checks            []validate.Check  `yaml:"checks"`
	BaseFailures      []string          `yaml:"base_failures"`
	TestEnv           map[string]string `yaml:"test_env"`
	Setup             *envsetup.Recipe  `yaml:"setup"`
	Companions        []companionSpec   `yaml:"companions"`
}

// Load reads every case folder directly under dir, sorted by name. Entries
// that are not folders, and folders whose name starts with "." or "_", are
// skipped. Every broken case is reported, each error naming the case and the
// file at fault.
func Load(dir string) ([]Case, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("load cases from %s: %w", dir, err)
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return nil, fmt.Errorf("load cases from %s: %w (pass --cases with a folder of case folders)", dir, err)
	}
	var cases []Case
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			continue
		}
		c, err := loadCase(filepath.Join(abs, name))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cases = append(cases, c)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("load cases from %s: %w", dir, errors.Join(errs...))
	}
	if len(cases) == 0 {
		return nil, fmt.Errorf("load cases from %s: %w (each case is a folder holding case.yaml, issue.md, repo/, golden.patch and hidden/)", dir, ErrNoCases)
	}
	slices.SortFunc(cases, func(a, b Case) int { return strings.Compare(a.Name, b.Name) })
	return cases, nil
}

func loadCase(dir string) (Case, error) {
	c := Case{Name: filepath.Base(dir), Dir: dir}
	// Each step reads one file or folder of the case, in the order the README lists them.
	for _, step := range []func(*Case) error{(*Case).loadCaseFile, (*Case).loadIssue, (*Case).checkRepo, (*Case).loadPatches, (*Case).loadHidden, func(c *Case) error { return c.loadCompanions(c.companionSpecs) }} {
		if err := step(&c); err != nil {
			return c, err
		}
	}
	return c, nil
}

// bad is the error for a broken case: the case, the file at fault and what is wrong.
func (c *Case) bad(file, format string, args ...any) error {
	return fmt.Errorf("case %q: %s: %s: %w", c.Name, file, fmt.Sprintf(format, args...), ErrInvalidCase)
}

// loadCaseFile reads and checks case.yaml.
func (c *Case) loadCaseFile() error {
	raw, err := os.ReadFile(filepath.Join(c.Dir, "case.yaml"))
	if err != nil {
		return c.bad("case.yaml", "%v", err)
	}
	cf, err := parseCaseFile(raw)
	if err != nil {
		return c.bad("case.yaml", "%v", err)
	}
	c.Difficulty, c.Scripted, c.HiddenTestCommand = cf.Difficulty, cf.Scripted, cf.HiddenTestCommand
	c.FailToPass, c.PassToPass, c.Checks, c.BaseFailures = cf.FailToPass, cf.PassToPass, cf.Checks, cf.BaseFailures
	c.companionSpecs = cf.Companions
	if cf.Setup != nil {
		if err := cf.Setup.Validate(); err != nil {
			return c.bad("case.yaml", "setup: %v", err)
		}
		c.Setup = cf.Setup
	}
	for _, name := range slices.Sorted(maps.Keys(cf.TestEnv)) {
		if !envNameRe.MatchString(name) {
			return c.bad("case.yaml", "test_env: %q is not an environment variable name", name)
		}
		c.TestEnv = append(c.TestEnv, name+"="+cf.TestEnv[name])
	}
	for _, id := range c.BaseFailures {
		if id == "" || strings.HasPrefix(id, "-") {
			return c.bad("case.yaml", "base_failures: %q is not a pytest node id or a test module's path", id)
		}
	}
	for i, ch := range c.Checks {
		if ch.Name == "" {
			c.Checks[i].Name = ch.Kind
		}
		if err := c.Checks[i].Validate(); err != nil {
			return c.bad("case.yaml", "checks[%d]: %v", i, err)
		}
	}
	for _, id := range append(slices.Clone(c.FailToPass), c.PassToPass...) {
		if !strings.Contains(id, "::") || strings.HasPrefix(id, "-") {
			return c.bad("case.yaml", "test id %q is not a pytest node id like tests/test_x.py::test_y", id)
		}
	}
	return nil
}

// loadIssue reads issue.md.
func (c *Case) loadIssue() error {
	raw, err := os.ReadFile(filepath.Join(c.Dir, "issue.md"))
	if err != nil {
		return c.bad("issue.md", "%v", err)
	}
	c.Issue = string(raw)
	if c.Title, c.Labels, c.Body, err = parseIssue(c.Issue); err != nil {
		return c.bad("issue.md", "%v", err)
	}
	return nil
}

// checkRepo checks that repo/ holds the project's files and no git repository.
func (c *Case) checkRepo() error {
	if fi, err := os.Stat(filepath.Join(c.Dir, "repo")); err != nil || !fi.IsDir() {
		return c.bad("repo/", "missing folder with the project's files at the bug")
	}
	if _, err := os.Lstat(filepath.Join(c.Dir, "repo", ".git")); err == nil {
		// The bench makes the repository itself (one pinned "base" commit); a copied .git
		// would carry another history, hooks and config into every round.
		return c.bad("repo/.git", "repo/ must hold the project's files only, not a git repository; export them with `git -C <clone> archive HEAD | tar -x -C repo/` or remove repo/.git")
	}
	if _, err := listFiles(filepath.Join(c.Dir, "repo")); err != nil {
		return c.bad("repo/", "%v", err)
	}
	return nil
}

// loadPatches reads golden.patch and the optional test.patch.
func (c *Case) loadPatches() error {
	raw, err := os.ReadFile(filepath.Join(c.Dir, "golden.patch"))
	if err != nil {
		return c.bad("golden.patch", "%v", err)
	}
	if !bytes.Contains(raw, []byte("diff --git a/")) {
		return c.bad("golden.patch", "not a git-style diff (want `diff --git a/... b/...` headers; make it with `git diff` in a copy of repo/)")
	}
	c.Golden = string(raw)

	switch raw, err := os.ReadFile(filepath.Join(c.Dir, "test.patch")); {
	case err == nil && !bytes.Contains(raw, []byte("diff --git a/")):
		return c.bad("test.patch", "not a git-style diff (want `diff --git a/... b/...` headers; make it with `git diff` in a copy of repo/)")
	case err == nil:
		c.TestPatch = string(raw)
	case !errors.Is(err, fs.ErrNotExist):
		return c.bad("test.patch", "%v", err)
	}
	return nil
}

// loadHidden lists hidden/, which must hold tests the judge can run and nothing the
// pipeline can see in repo/.
func (c *Case) loadHidden() error {
	var err error
	c.HiddenFiles, err = listFiles(filepath.Join(c.Dir, "hidden"))
	if err != nil {
		return c.bad("hidden/", "%v", err)
	}
	if len(c.HiddenFiles) == 0 {
		return c.bad("hidden/", "holds no files; put the tests that fail at the bug there, e.g. hidden/tests/test_bug.py")
	}
	if len(c.HiddenTestCommand) == 0 && len(c.hiddenTests()) == 0 {
		return c.bad("hidden/", "holds no test_*.py or *_test.py file for pytest to run (or set hidden_test_command in case.yaml)")
	}
	for _, f := range c.HiddenFiles {
		if _, err := os.Lstat(filepath.Join(c.Dir, "repo", filepath.FromSlash(f))); err == nil {
			return c.bad("hidden/"+f, "also exists in repo/; hidden files must not be visible to the pipeline")
		}
	}
	return nil
}

func parseCaseFile(raw []byte) (caseFile, error) {
	var cf caseFile
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&cf); err != nil {
		if errors.Is(err, io.EOF) {
			return cf, errors.New("empty; want at least `difficulty: easy|medium|hard`")
		}
		return cf, err
	}
	switch cf.Difficulty {
	case Easy, Medium, Hard:
	case "":
		return cf, errors.New("difficulty is missing; want easy, medium or hard")
	default:
		return cf, fmt.Errorf("difficulty %q is not easy, medium or hard", cf.Difficulty)
	}
	switch cf.Scripted {
	case "":
		cf.Scripted = defaultScripted(cf.Difficulty)
	case ScriptSolve, ScriptWrongThenRight, ScriptLateFix, ScriptLoop, ScriptNever:
	default:
		return cf, fmt.Errorf("scripted %q is not one of solve, wrong_then_right, late_fix, loop, never", cf.Scripted)
	}
	for i, arg := range cf.HiddenTestCommand {
		if arg == "" {
			return cf, fmt.Errorf("hidden_test_command[%d] is empty", i)
		}
	}
	return cf, nil
}

func defaultScripted(difficulty string) string {
	switch difficulty {
	case Easy:
		return ScriptSolve
	case Medium:
		return ScriptWrongThenRight
	default:
		return ScriptLateFix
	}
}

// issueFront is the front matter of issue.md. repo is accepted so an intake
// issue file can be used as is, but a case does not need it: the bench
// points every case at its own repository.
type issueFront struct {
	Title  string   `yaml:"title"`
	Labels []string `yaml:"labels"`
	Repo   string   `yaml:"repo"`
}

// parseIssue splits issue.md into its front matter (between two `---`
// lines, keys title and labels) and the free-text body.
func parseIssue(raw string) (title string, labels []string, body string, err error) {
	text := strings.ReplaceAll(raw, "\r\n", "\n")
	text = strings.TrimPrefix(text, "\ufeff")
	rest, ok := strings.CutPrefix(text, "---\n")
	if !ok {
		return "", nil, "", errors.New("must start with a `---` line opening the front matter (title, labels)")
	}
	var front string
	if strings.HasPrefix(rest, "---\n") || rest == "---" {
		front, rest = "", strings.TrimPrefix(strings.TrimPrefix(rest, "---"), "\n")
	} else {
		var found bool
		front, rest, found = strings.Cut(rest, "\n---\n")
		if !found {
			if f, ok := strings.CutSuffix(rest, "\n---"); ok {
				front, rest, found = f, "", true
			}
		}
		if !found {
			return "", nil, "", errors.New("front matter is not closed by a `---` line")
		}
	}
	var fm issueFront
	dec := yaml.NewDecoder(strings.NewReader(front))
	dec.KnownFields(true)
	if err := dec.Decode(&fm); err != nil && !errors.Is(err, io.EOF) {
		return "", nil, "", fmt.Errorf("front matter: %w", err)
	}
	fm.Title = strings.TrimSpace(fm.Title)
	if fm.Title == "" {
		return "", nil, "", errors.New("front matter has no title")
	}
	body = strings.TrimSpace(rest)
	if body == "" {
		return "", nil, "", errors.New("body is empty; describe the symptom, how to reproduce it and what you expected")
	}
	return fm.Title, fm.Labels, body, nil
}

// listFiles returns the regular files under root, slash-separated and
// relative to root, sorted. Anything else (symlinks, devices) is an error:
// a case must copy the same way on every machine.
func listFiles(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "__pycache__" || d.Name() == ".pytest_cache" {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			// A symlink is kept as one, if it points inside the tree it belongs to.
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			resolved := filepath.Join(filepath.Dir(p), target)
			if filepath.IsAbs(target) || !strings.HasPrefix(resolved, filepath.Clean(root)+string(filepath.Separator)) {
				return fmt.Errorf("%s is a symlink to %s, which leaves repo/; use a relative link inside it", p, target)
			}
		} else if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", p)
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		files = append(files, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	return files, nil
}

var envNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// GoldenAddsTests reports whether golden.patch changes a test file (a regression test
// beside the fix, as upstream fixes come).
func (c Case) GoldenAddsTests() bool {
	for _, line := range strings.Split(c.Golden, "\n") {
		if rest, ok := strings.CutPrefix(line, "+++ b/"); ok && IsTestPath(strings.TrimSpace(rest)) {
			return true
		}
	}
	return false
}

// ScriptedPatch is the patch the offline scripted model (the test double) replays for the
// case: golden.patch with test.patch when the case has one (upstream's regression test, as
// a model that reproduces before fixing writes it); else golden.patch, and — when it carries
// no test — the case's hidden test modules as
// the regression test a model writes beside its fix, each as a new file test_regression_<x>
// beside the hidden one's path, so the judge's own files stay apart from the branch's. The
// scripted maker knows the fix anyway; what is measured is the pipeline's handling of it.
func (c Case) ScriptedPatch() (string, error) {
	if c.TestPatch != "" {
		golden := c.Golden
		if !strings.HasSuffix(golden, "\n") {
			golden += "\n"
		}
		return golden + c.TestPatch, nil
	}
	if c.GoldenAddsTests() {
		return c.Golden, nil
	}
	var b strings.Builder
	b.WriteString(c.Golden)
	if !strings.HasSuffix(c.Golden, "\n") {
		b.WriteString("\n")
	}
	for _, f := range c.hiddenTests() {
		data, err := os.ReadFile(filepath.Join(c.Dir, "hidden", filepath.FromSlash(f)))
		if err != nil {
			return "", fmt.Errorf("case %q: read hidden test: %w", c.Name, err)
		}
		base := strings.TrimSuffix(strings.TrimPrefix(path.Base(f), "test_"), ".py")
		base = strings.TrimSuffix(base, "_test")
		target := path.Join(path.Dir(f), "test_regression_"+base+".py")
		lines := strings.SplitAfter(string(data), "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		fmt.Fprintf(&b, "diff --git a/%s b/%s\nnew file mode 100644\n--- /dev/null\n+++ b/%s\n@@ -0,0 +1,%d @@\n", target, target, target, len(lines))
		for _, l := range lines {
			b.WriteString("+" + l)
			if !strings.HasSuffix(l, "\n") {
				b.WriteString("\n\\ No newline at end of file\n")
			}
		}
	}
	return b.String(), nil
}

// IsTestPath reports whether a repository path is test code: a test module, a conftest.py,
// or anything under a tests/ folder.
func IsTestPath(p string) bool {
	base := path.Base(p)
	return strings.HasPrefix(p, "tests/") || strings.Contains(p, "/tests/") ||
		strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py") || base == "conftest.py"
}

// hiddenTests are the hidden files pytest is pointed at: the test modules,
// not helpers or data that sit beside them.
func (c Case) hiddenTests() []string {
	var tests []string
	for _, f := range c.HiddenFiles {
		base := path.Base(f)
		if strings.HasSuffix(base, ".py") && (strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py")) {
			tests = append(tests, f)
		}
	}
	return tests
}

// TestPatchFiles are the paths test.patch changes or adds, in order; nil without one.
func (c Case) TestPatchFiles() []string {
	var out []string
	for _, line := range strings.Split(c.TestPatch, "\n") {
		if rest, ok := strings.CutPrefix(line, "diff --git "); ok {
			fields := strings.Fields(rest)
			if len(fields) == 2 && strings.HasPrefix(fields[1], "b/") {
				out = append(out, strings.TrimPrefix(fields[1], "b/"))
			}
		}
	}
	return out
}
