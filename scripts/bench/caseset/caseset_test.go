package caseset

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeCase writes a minimal valid case under root/name, then applies edits
// (relative path -> content; empty content removes the file or folder).
func writeCase(t *testing.T, root, name string, edits map[string]string) string {
	t.Helper()
	dir := filepath.Join(root, name)
	files := map[string]string{
		"case.yaml":                   "difficulty: easy\n",
		"issue.md":                    "---\ntitle: Average of an empty list crashes\nlabels: [bug, math]\n---\nmean([]) raises ZeroDivisionError; expected 0.\n",
		"repo/mathx/__init__.py":      "def mean(xs):\n    return sum(xs) / len(xs)\n",
		"repo/conftest.py":            "import os, sys\nsys.path.insert(0, os.path.dirname(__file__))\n",
		"repo/tests/test_mean.py":     "from mathx import mean\n\n\ndef test_mean():\n    assert mean([1, 3]) == 2\n",
		"golden.patch":                "diff --git a/mathx/__init__.py b/mathx/__init__.py\n--- a/mathx/__init__.py\n+++ b/mathx/__init__.py\n@@ -1,2 +1,4 @@\n def mean(xs):\n+    if not xs:\n+        return 0\n     return sum(xs) / len(xs)\n",
		"hidden/tests/test_hidden.py": "from mathx import mean\n\n\ndef test_empty():\n    assert mean([]) == 0\n",
	}
	for k, v := range edits {
		files[k] = v
	}
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if content == "" {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(content, "symlink:"); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for rel, content := range edits {
		if content == "" {
			if err := os.RemoveAll(filepath.Join(dir, filepath.FromSlash(rel))); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

func TestLoadValid(t *testing.T) {
	root := t.TempDir()
	writeCase(t, root, "b-case", map[string]string{"case.yaml": "difficulty: hard\nscripted: never\n"})
	writeCase(t, root, "a-case", map[string]string{"case.yaml": "difficulty: medium\nhidden_test_command: [python3, -m, unittest]\n"})
	writeCase(t, root, "_draft", map[string]string{"case.yaml": "nonsense: 1\n"})
	if err := os.WriteFile(filepath.Join(root, "README.md"), []byte("# cases\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases, err := Load(root)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	var names []string
	for _, c := range cases {
		names = append(names, c.Name)
	}
	if want := []string{"a-case", "b-case"}; !slices.Equal(names, want) {
		t.Fatalf("names: got %v, want %v", names, want)
	}
	a, b := cases[0], cases[1]
	if a.Scripted != ScriptWrongThenRight || b.Scripted != ScriptNever {
		t.Errorf("scripted: got %q and %q, want %q (medium default) and %q", a.Scripted, b.Scripted, ScriptWrongThenRight, ScriptNever)
	}
	if !slices.Equal(a.HiddenTestCommand, []string{"python3", "-m", "unittest"}) {
		t.Errorf("hidden_test_command: got %q", a.HiddenTestCommand)
	}
	if a.Title != "Average of an empty list crashes" || !slices.Equal(a.Labels, []string{"bug", "math"}) {
		t.Errorf("front matter: got title %q labels %q", a.Title, a.Labels)
	}
	if !strings.HasPrefix(a.Body, "mean([])") || !strings.HasPrefix(a.Issue, "---\n") {
		t.Errorf("body %q / issue %q", a.Body, a.Issue)
	}
	if !slices.Equal(a.HiddenFiles, []string{"tests/test_hidden.py"}) {
		t.Errorf("hidden files: got %q", a.HiddenFiles)
	}
	if !filepath.IsAbs(a.Dir) {
		t.Errorf("Dir %q is not absolute", a.Dir)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name  string
		edits map[string]string
		want  string // must appear in the error, besides the case name
	}{
		{"no case.yaml", map[string]string{"case.yaml": ""}, "case.yaml"},
		{"unknown key", map[string]string{"case.yaml": "difficulty: easy\nscripte: solve\n"}, "scripte"},
		{"bad difficulty", map[string]string{"case.yaml": "difficulty: trivial\n"}, `"trivial"`},
		{"no difficulty", map[string]string{"case.yaml": "scripted: solve\n"}, "difficulty is missing"},
		{"bad scripted", map[string]string{"case.yaml": "difficulty: easy\nscripted: maybe\n"}, `"maybe"`},
		{"wrong type", map[string]string{"case.yaml": "difficulty: [easy]\n"}, "case.yaml"},
		{"empty case.yaml", map[string]string{"case.yaml": "\n"}, "empty"},
		{"no issue", map[string]string{"issue.md": ""}, "issue.md"},
		{"no front matter", map[string]string{"issue.md": "just text\n"}, "front matter"},
		{"unclosed front matter", map[string]string{"issue.md": "---\ntitle: x\nbody\n"}, "not closed"},
		{"no title", map[string]string{"issue.md": "---\nlabels: [bug]\n---\nbody\n"}, "no title"},
		{"empty body", map[string]string{"issue.md": "---\ntitle: x\n---\n\n"}, "body is empty"},
		{"no repo", map[string]string{"repo": ""}, "repo/"},
		{"no golden", map[string]string{"golden.patch": ""}, "golden.patch"},
		{"golden not git", map[string]string{"golden.patch": "--- a/x\n+++ b/x\n"}, "git-style"},
		{"no hidden", map[string]string{"hidden": ""}, "hidden/"},
		{"hidden without tests", map[string]string{"hidden/tests/test_hidden.py": "", "hidden/tests/helper.py": "x = 1\n"}, "test_*.py"},
		{"hidden visible", map[string]string{"repo/tests/test_hidden.py": "def test_x():\n    pass\n"}, "also exists in repo/"},
		{"git repository in repo/", map[string]string{"repo/.git/HEAD": "ref: refs/heads/main\n"}, "not a git repository"},
		{"symlink out of repo/", map[string]string{"repo/mathx/evil.py": "symlink:../../../outside.py"}, "leaves repo/"},
		{"bad check", map[string]string{"case.yaml": "difficulty: easy\nchecks: [{name: x, kind: eslint}]\n"}, "checks[0]"},
		{"bad test id", map[string]string{"case.yaml": "difficulty: easy\nfail_to_pass: [tests/test_x.py]\n"}, "not a pytest node id"},
		{"bad test_env name", map[string]string{"case.yaml": "difficulty: easy\ntest_env: {\"A-B\": x}\n"}, "test_env"},
		{"bad base failure", map[string]string{"case.yaml": "difficulty: easy\nbase_failures: [\"-x\"]\n"}, "base_failures"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			writeCase(t, root, "broken", tt.edits)
			writeCase(t, root, "fine", nil)
			_, err := Load(root)
			if err == nil {
				t.Fatalf("edits %v: got no error, want one mentioning %q", tt.edits, tt.want)
			}
			if !errors.Is(err, ErrInvalidCase) || !strings.Contains(err.Error(), `case "broken"`) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("edits %v:\n got  %v\n want ErrInvalidCase naming case \"broken\" and %q", tt.edits, err, tt.want)
			}
			if strings.Contains(err.Error(), `case "fine"`) {
				t.Errorf("error blames the valid case: %v", err)
			}
		})
	}
}

func TestLoadReportsEveryBrokenCase(t *testing.T) {
	root := t.TempDir()
	writeCase(t, root, "one", map[string]string{"case.yaml": ""})
	writeCase(t, root, "two", map[string]string{"issue.md": ""})
	_, err := Load(root)
	if err == nil || !strings.Contains(err.Error(), `case "one"`) || !strings.Contains(err.Error(), `case "two"`) {
		t.Fatalf("got %v, want errors for both cases", err)
	}
}

func TestLoadNoCases(t *testing.T) {
	if _, err := Load(t.TempDir()); !errors.Is(err, ErrNoCases) {
		t.Errorf("empty folder: got %v, want ErrNoCases", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing folder: got %v, want an error naming it", err)
	}
}

func TestParseIssue(t *testing.T) {
	tests := []struct {
		in     string
		title  string
		labels []string
		body   string
	}{
		{"---\ntitle: A\nlabels: [bug, ui]\n---\nBody\n", "A", []string{"bug", "ui"}, "Body"},
		{"---\r\ntitle: A\r\n---\r\n\r\nBody\r\nmore\r\n", "A", nil, "Body\nmore"},
		{"---\ntitle: \"Quoted: with colon\"\nrepo: sample\nlabels:\n  - x\n---\nB", "Quoted: with colon", []string{"x"}, "B"},
		{"\ufeff---\ntitle: BOM\n---\nbody --- with dashes\n---\nstill body", "BOM", nil, "body --- with dashes\n---\nstill body"},
	}
	for _, tt := range tests {
		title, labels, body, err := parseIssue(tt.in)
		if err != nil || title != tt.title || !slices.Equal(labels, tt.labels) || body != tt.body {
			t.Errorf("parseIssue(%q):\n got  %q %q %q %v\n want %q %q %q nil", tt.in, title, labels, body, err, tt.title, tt.labels, tt.body)
		}
	}
}

func FuzzParseIssue(f *testing.F) {
	f.Add("---\ntitle: A\nlabels: [bug]\n---\nBody\n")
	f.Add("---\n---\n")
	f.Add("---\ntitle: [unclosed\n---\nx")
	f.Add("no front matter")
	f.Fuzz(func(t *testing.T, in string) {
		title, _, body, err := parseIssue(in)
		if err != nil {
			return
		}
		if title == "" || body == "" {
			t.Errorf("parseIssue(%q) accepted an empty title %q or body %q", in, title, body)
		}
		if strings.TrimSpace(title) != title || strings.TrimSpace(body) != body {
			t.Errorf("parseIssue(%q) returned untrimmed title %q or body %q", in, title, body)
		}
	})
}

func FuzzParseCaseFile(f *testing.F) {
	f.Add("difficulty: easy\n")
	f.Add("difficulty: hard\nscripted: loop\nhidden_test_command: [a, b]\n")
	f.Add("difficulty: medium\nextra: 1\n")
	f.Fuzz(func(t *testing.T, in string) {
		cf, err := parseCaseFile([]byte(in))
		if err != nil {
			return
		}
		if !slices.Contains([]string{Easy, Medium, Hard}, cf.Difficulty) {
			t.Errorf("parseCaseFile(%q) accepted difficulty %q", in, cf.Difficulty)
		}
		if !slices.Contains([]string{ScriptSolve, ScriptWrongThenRight, ScriptLateFix, ScriptLoop, ScriptNever}, cf.Scripted) {
			t.Errorf("parseCaseFile(%q) accepted scripted %q", in, cf.Scripted)
		}
	})
}

// repo/ is the upstream snapshot file for file: a file upstream tracks although its own
// .gitignore matches it (distro's tests/resources/distros/*/usr/lib/os-release, under the
// "lib/" of Python's usual .gitignore) is part of the base commit.
func TestMaterializeKeepsIgnoredFiles(t *testing.T) {
	root := t.TempDir()
	writeCase(t, root, "c", map[string]string{
		"repo/.gitignore": "lib/\n*.log\n",
		"repo/tests/resources/arch/usr/lib/os-release": "ID=arch\n",
		"repo/tests/resources/arch/etc/os-release":     "symlink:../usr/lib/os-release",
		"repo/tests/resources/build.log":               "kept\n",
	})
	cases, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "repo")
	if err := cases[0].Materialize(t.Context(), dst); err != nil {
		t.Fatalf("Materialize: %v", err)
	}
	out, err := runGit(t.Context(), dst, "ls-files")
	if err != nil {
		t.Fatalf("ls-files: %v %s", err, out)
	}
	for _, want := range []string{"tests/resources/arch/usr/lib/os-release", "tests/resources/arch/etc/os-release", "tests/resources/build.log"} {
		if !slices.Contains(strings.Split(strings.TrimSpace(out), "\n"), want) {
			t.Errorf("base commit lacks %s (ignored by repo/.gitignore); it has:\n%s", want, out)
		}
	}
	if status, err := runGit(t.Context(), dst, "status", "--porcelain", "--ignored"); err != nil || status != "" {
		t.Errorf("status after Materialize: %q %v, want clean", status, err)
	}
}

func TestMaterializeIsRepeatable(t *testing.T) {
	root := t.TempDir()
	writeCase(t, root, "c", nil)
	cases, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	var heads []string
	for _, name := range []string{"one", "two"} {
		dst := filepath.Join(t.TempDir(), name)
		if err := cases[0].Materialize(ctx, dst); err != nil {
			t.Fatalf("Materialize: %v", err)
		}
		head, err := runGit(ctx, dst, "rev-parse", "HEAD")
		if err != nil {
			t.Fatalf("rev-parse: %v %s", err, head)
		}
		heads = append(heads, strings.TrimSpace(head))
		status, err := runGit(ctx, dst, "status", "--porcelain")
		if err != nil || status != "" {
			t.Errorf("status after Materialize: %q %v, want clean", status, err)
		}
		if msg, _ := runGit(ctx, dst, "log", "-1", "--format=%s %D"); !strings.HasPrefix(msg, "base HEAD -> main") {
			t.Errorf("commit: got %q, want subject base on main", msg)
		}
		if _, err := os.Stat(filepath.Join(dst, "tests", "test_hidden.py")); !os.IsNotExist(err) {
			t.Errorf("hidden test leaked into the materialized repo: %v", err)
		}
	}
	if heads[0] != heads[1] {
		t.Errorf("base commit differs between runs: %s vs %s", heads[0], heads[1])
	}

	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cases[0].Materialize(ctx, full); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("Materialize into a non-empty folder: got %v, want a not-empty error", err)
	}
}

func TestJudge(t *testing.T) {
	pytest := needPytest(t)
	tests := []struct {
		name       string
		edits      map[string]string
		patch      bool
		wantPassed bool
		wantErr    string
	}{
		{name: "at the bug", wantPassed: false},
		{name: "with the fix", patch: true, wantPassed: true},
		{name: "command override passes", edits: map[string]string{"case.yaml": "difficulty: easy\nhidden_test_command: [git, --version]\n"}, wantPassed: true},
		{name: "command override fails", edits: map[string]string{"case.yaml": "difficulty: easy\nhidden_test_command: [git, no-such-command]\n"}, wantPassed: false},
		{name: "command missing", edits: map[string]string{"case.yaml": "difficulty: easy\nhidden_test_command: [/nonexistent/judge]\n"}, wantErr: "run /nonexistent/judge"},
		{name: "no tests collected", edits: map[string]string{"hidden/tests/test_hidden.py": "x = 1\n"}, wantErr: "collected no tests"},
		{name: "pass-to-pass holds with the fix", patch: true, wantPassed: true,
			edits: map[string]string{"case.yaml": "difficulty: easy\npass_to_pass: [tests/test_mean.py::test_mean]\nfail_to_pass: [tests/test_hidden.py::test_empty]\n"}},
		{name: "broken pass-to-pass fails the fix", patch: true, wantPassed: false,
			edits: map[string]string{"case.yaml": "difficulty: easy\npass_to_pass: [tests/test_mean.py::test_mean]\n", "repo/tests/test_mean.py": "from mathx import mean\n\n\ndef test_mean():\n    assert mean([1, 3]) == 3\n"}},
		{name: "symlinked module", patch: true, wantPassed: true,
			edits: map[string]string{"repo/mathx/alias.py": "symlink:__init__.py", "case.yaml": "difficulty: easy\nchecks: [{name: tests, kind: pytest}]\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			writeCase(t, root, "c", tt.edits)
			cases, err := Load(root)
			if err != nil {
				t.Fatal(err)
			}
			c := cases[0]
			repo := filepath.Join(t.TempDir(), "repo")
			if err := c.Materialize(t.Context(), repo); err != nil {
				t.Fatal(err)
			}
			if tt.patch {
				p := filepath.Join(root, "c", "golden.patch")
				if out, err := runGit(t.Context(), repo, "apply", p); err != nil {
					t.Fatalf("git apply: %v %s", err, out)
				}
			}
			passed, out, err := c.Judge(t.Context(), repo, pytest)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got err %v, want one containing %q\n%s", err, tt.wantErr, out)
				}
				return
			}
			if err != nil || passed != tt.wantPassed {
				t.Fatalf("got passed=%v err=%v, want passed=%v\n%s", passed, err, tt.wantPassed, out)
			}
		})
	}
}

func TestJudgeCancelled(t *testing.T) {
	pytest := needPytest(t)
	root := t.TempDir()
	writeCase(t, root, "c", nil)
	cases, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(t.TempDir(), "repo")
	if err := cases[0].Materialize(t.Context(), repo); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, _, err := cases[0].Judge(ctx, repo, pytest); err == nil {
		t.Errorf("Judge with a cancelled context: got nil error, want one (not a verdict)")
	}
}

// The keys for repositories as they really are: base failures and the judge's environment.
func TestLoadBaseFailuresAndTestEnv(t *testing.T) {
	root := t.TempDir()
	writeCase(t, root, "c", map[string]string{"case.yaml": "difficulty: easy\nbase_failures: [tests/test_meta.py::test_version, tests/test_opt.py]\ntest_env: {PYTHONPATH: src, B: \"1\"}\n"})
	cases, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	c := cases[0]
	if !slices.Equal(c.BaseFailures, []string{"tests/test_meta.py::test_version", "tests/test_opt.py"}) || !slices.Equal(c.TestEnv, []string{"B=1", "PYTHONPATH=src"}) {
		t.Errorf("base failures %q, test env %q", c.BaseFailures, c.TestEnv)
	}
}

// ScriptedPatch gives the scripted maker a regression test: the golden patch's own when it
// has one, else the hidden tests as a new file beside them, under another name.
func TestScriptedPatch(t *testing.T) {
	root := t.TempDir()
	writeCase(t, root, "plain", nil)
	withTest := "diff --git a/mathx/__init__.py b/mathx/__init__.py\n--- a/mathx/__init__.py\n+++ b/mathx/__init__.py\n@@ -1,2 +1,4 @@\n def mean(xs):\n+    if not xs:\n+        return 0\n     return sum(xs) / len(xs)\n" +
		"diff --git a/tests/test_mean.py b/tests/test_mean.py\n--- a/tests/test_mean.py\n+++ b/tests/test_mean.py\n@@ -3,3 +3,7 @@\n \n def test_mean():\n     assert mean([1, 3]) == 2\n+\n+\n+def test_empty():\n+    assert mean([]) == 0\n"
	writeCase(t, root, "own-test", map[string]string{"golden.patch": withTest})
	cases, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		patch, err := c.ScriptedPatch()
		if err != nil {
			t.Fatal(err)
		}
		switch c.Name {
		case "own-test":
			if !c.GoldenAddsTests() || patch != c.Golden {
				t.Errorf("%s: scripted patch is not the golden patch with its own test:\n%s", c.Name, patch)
			}
		case "plain":
			want := "diff --git a/tests/test_regression_hidden.py b/tests/test_regression_hidden.py\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_regression_hidden.py\n@@ -0,0 +1,5 @@\n+from mathx import mean\n"
			if c.GoldenAddsTests() || !strings.HasPrefix(patch, c.Golden) || !strings.Contains(patch, want) || !strings.HasSuffix(patch, "+    assert mean([]) == 0\n") {
				t.Errorf("%s: scripted patch lacks the hidden test as a new file:\n%s", c.Name, patch)
			}
		}
	}
}

// A case's test.patch is upstream's regression test: the scripted maker submits it beside
// the golden patch (changing an existing test module), and the judge sets the files it
// touches back to the bug's versions before it runs its hidden tests. A test.patch that is
// not a diff is refused.
func TestTestPatch(t *testing.T) {
	root := t.TempDir()
	testPatch := "diff --git a/tests/test_mean.py b/tests/test_mean.py\n--- a/tests/test_mean.py\n+++ b/tests/test_mean.py\n@@ -3,3 +3,7 @@\n \n def test_mean():\n     assert mean([1, 3]) == 2\n+\n+\n+def test_empty():\n+    assert mean([]) == 0\n"
	writeCase(t, root, "with-test-patch", map[string]string{"test.patch": testPatch})
	cases, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	c := cases[0]
	patch, err := c.ScriptedPatch()
	if err != nil {
		t.Fatal(err)
	}
	if patch != c.Golden+testPatch || !slices.Equal(c.TestPatchFiles(), []string{"tests/test_mean.py"}) {
		t.Errorf("scripted patch %q (test files %q); want golden.patch then test.patch", patch, c.TestPatchFiles())
	}
	// The judge resets the test module a branch changed, and removes one test.patch adds.
	branch := t.TempDir()
	changed := filepath.Join(branch, "tests", "test_mean.py")
	if err := os.MkdirAll(filepath.Dir(changed), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(changed, []byte("def test_mean():\n    pass  # weakened\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.resetFile(branch, "tests/test_mean.py"); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(changed); string(got) != "from mathx import mean\n\n\ndef test_mean():\n    assert mean([1, 3]) == 2\n" {
		t.Errorf("reset test module = %q; want the bug's version", got)
	}
	added := filepath.Join(branch, "tests", "test_new.py")
	if err := os.WriteFile(added, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.resetFile(branch, "tests/test_new.py"); err != nil || fileExists(added) {
		t.Errorf("a test module the bug does not have is kept (%v)", err)
	}
	if err := c.resetFile(branch, "../outside.py"); err == nil {
		t.Error("a path leaving the repository was accepted")
	}

	bad := t.TempDir()
	writeCase(t, bad, "broken", map[string]string{"test.patch": "just text\n"})
	if _, err := Load(bad); !errors.Is(err, ErrInvalidCase) || !strings.Contains(err.Error(), "test.patch") {
		t.Errorf("Load with a test.patch that is no diff: %v; want ErrInvalidCase naming test.patch", err)
	}
}

func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
