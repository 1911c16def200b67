package pipeline

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/pipeline/validate"
)

func failing(tests ...string) validate.Result {
	r := validate.Result{Name: "tests", Kind: validate.KindPytest, Passed: len(tests) == 0, Summary: "x"}
	for _, id := range tests {
		r.Findings = append(r.Findings, validate.Finding{Test: id, File: "t.py", Line: 1, Message: "boom"})
	}
	return r
}

// lints is a ruff run with one B007 finding in file at each of lines.
func lints(file string, lines ...int) validate.Result {
	r := validate.Result{Name: "lint", Kind: validate.KindRuff}
	for _, l := range lines {
		r.Findings = append(r.Findings, validate.Finding{File: file, Line: l, Test: "B007", Message: "Loop control variable `i` not used within loop body"})
	}
	return r
}

func TestCompare(t *testing.T) {
	lint := func(file, code, msg string) validate.Result {
		return validate.Result{Name: "lint", Kind: validate.KindRuff, Findings: []validate.Finding{{File: file, Line: 9, Test: code, Message: msg}}}
	}
	tests := []struct {
		name           string
		base, cur      []validate.Result
		pass           bool
		nNew, nFixed   int
		wantTextSubstr string
	}{
		{name: "clean stays clean", base: []validate.Result{failing()}, cur: []validate.Result{failing()}, pass: true},
		{name: "target fixed, unrelated failure remains", base: []validate.Result{failing("a", "b")}, cur: []validate.Result{failing("b")},
			pass: true, nFixed: 1, wantTextSubstr: "already present at the base"},
		{name: "unrelated base failure carried, nothing fixed", base: []validate.Result{failing("a")}, cur: []validate.Result{failing("a")},
			pass: true, wantTextSubstr: "not yours, and no reason to refuse"},
		// requireTargets refuses a target that fails at the base and still fails, and that
		// target is in this list: the text names the exception.
		{name: "base failure carried, unless a target", base: []validate.Result{failing("a")}, cur: []validate.Result{failing("a")},
			pass: true, wantTextSubstr: "unless one is a target test the fix must make pass"},
		{name: "new failure", base: []validate.Result{failing()}, cur: []validate.Result{failing("c")},
			pass: false, nNew: 1, wantTextSubstr: "you caused these"},
		{name: "fixed one, broke another", base: []validate.Result{failing("a")}, cur: []validate.Result{failing("c")},
			pass: false, nNew: 1, nFixed: 1},
		{name: "crashed check without findings", base: []validate.Result{failing()},
			cur: []validate.Result{{Name: "tests", Kind: validate.KindPytest, ExitCode: 2, Output: "usage error"}}, pass: false, nNew: 1},
		{name: "timed out twice: not counted as caused", base: []validate.Result{failing()},
			cur: []validate.Result{{Name: "tests", Kind: validate.KindPytest, TimedOut: true, Summary: "timed out twice"}}, pass: false, nNew: 0, wantTextSubstr: "timed out again when re-run on their own"},
		{name: "cancelled: judges nothing", base: []validate.Result{failing()},
			cur: []validate.Result{{Name: "tests", Kind: validate.KindPytest, Cancelled: true, Summary: "cancelled: budget exhausted"}}, pass: false, nNew: 0},
		{name: "lint finding moved by an edit is not new", base: []validate.Result{lint("a.py", "E501", "line too long")},
			cur: []validate.Result{lint("a.py", "E501", "line too long")}, pass: true},
		{name: "same rule elsewhere is new", base: []validate.Result{lint("a.py", "E501", "line too long")},
			cur: []validate.Result{lint("b.py", "E501", "line too long")}, pass: false, nNew: 1, nFixed: 1},
		{name: "lint debt does not block a test fix", base: []validate.Result{failing("a"), lint("a.py", "F401", "unused")},
			cur: []validate.Result{failing(), lint("a.py", "F401", "unused")}, pass: true, nFixed: 1},
		// A file's findings of one rule and message are counted: one more than the base is
		// new, wherever the edit moved the old one; the lines of all of them are named.
		{name: "a second finding like the base's one is new", base: []validate.Result{lints("a.py", 19)},
			cur: []validate.Result{lints("a.py", 5, 25)}, pass: false, nNew: 1, wantTextSubstr: "(2 of this in a.py, at lines 5, 25)"},
		{name: "as many as the base, moved", base: []validate.Result{lints("a.py", 19, 39)},
			cur: []validate.Result{lints("a.py", 22, 42)}, pass: true},
		{name: "one fewer than the base", base: []validate.Result{lints("a.py", 19, 39)},
			cur: []validate.Result{lints("a.py", 19)}, pass: true, nFixed: 1},
		{name: "two new in a clean file, both listed", base: []validate.Result{{Name: "lint", Kind: validate.KindRuff, Passed: true}},
			cur: []validate.Result{lints("a.py", 19, 39)}, pass: false, nNew: 2, wantTextSubstr: "a.py:39: Loop control variable `i` not used within loop body (2 of this in a.py, at lines 19, 39)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := Compare(tt.base, tt.cur)
			if g.Passed != tt.pass || len(g.New) != tt.nNew || len(g.Fixed) != tt.nFixed {
				t.Errorf("Compare: passed %v new %d fixed %d; want %v %d %d\n%s", g.Passed, len(g.New), len(g.Fixed), tt.pass, tt.nNew, tt.nFixed, g.Text)
			}
			if tt.nNew == 0 && strings.Contains(g.Text, "you caused") {
				t.Errorf("text blames the change without a new failure:\n%s", g.Text)
			}
			if tt.wantTextSubstr != "" && !strings.Contains(g.Text, tt.wantTextSubstr) {
				t.Errorf("text lacks %q:\n%s", tt.wantTextSubstr, g.Text)
			}
		})
	}
}

func TestVerifyFindings(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.py"), []byte("def f(x):\n    # unchanged context far from the hunk\n    return x  +  2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "other.py"), []byte("secret = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	diff := "--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n def f(x):\n-    return x + 1\n+    return x  +  2\n"
	tests := []struct {
		f    Finding
		kept bool
	}{
		{Finding{Severity: "blocker", File: "x.py", Finding: "f", Evidence: "+    return x + 2"}, true},                       // whitespace differs
		{Finding{Severity: "blocker", File: "x.py", Finding: "f", Evidence: "return x * 3"}, false},                           // invented
		{Finding{Severity: "minor", File: "x.py", Finding: "f", Evidence: ""}, false},                                         // no evidence
		{Finding{Severity: "major", File: "x.py", Finding: "f", Evidence: "def f(x):\nreturn x + 1"}, true},                   // spans lines
		{Finding{Severity: "major", File: "x.py", Finding: "f", Evidence: "# unchanged context far from the hunk"}, true},     // in the changed file
		{Finding{Severity: "major", File: "other.py", Finding: "f", Evidence: "secret = 1"}, false},                           // file not changed
		{Finding{Severity: "major", File: "../x.py", Finding: "f", Evidence: "# unchanged context far from the hunk"}, false}, // escapes
		{Finding{Severity: "critical", File: "x.py", Finding: "f", Evidence: "return x + 2"}, false},                          // not in the schema
		{Finding{Severity: "Blocker", File: "x.py", Finding: "", Evidence: "return x + 2"}, false},                            // no finding text
	}
	for _, tt := range tests {
		kept, dropped := verifyFindings(dir, []Finding{tt.f}, diff)
		if got := len(kept) == 1; got != tt.kept || dropped != 1-len(kept) {
			t.Errorf("verifyFindings(%+v): kept=%v dropped=%d, want kept=%v", tt.f, got, dropped, tt.kept)
		}
	}
}

// A test module that fails to import is named by its path in the gate's text, not by the
// "file::dotted.module" id its JUnit case gives (read as a test function "test"); the key
// stays the id, so the base's failure is still carried, not new.
func TestCompareNamesAnUncollectedModuleByItsPath(t *testing.T) {
	for _, tc := range []struct{ file, id string }{
		{"test.py", "test.py::test"},
		{"tests/test_x.py", "tests/test_x.py::tests.test_x"},
	} {
		broken := []validate.Result{{Name: "tests", Kind: validate.KindPytest, Errored: 1, Findings: []validate.Finding{
			{File: tc.file, Line: 3, Test: tc.id, Message: "ModuleNotFoundError: No module named 'text_unidecode' (collection failure)"}}}}
		g := Compare(broken, broken)
		want := "- tests: " + tc.file + ": " + tc.file + ":3: ModuleNotFoundError"
		if !g.Passed || len(g.Remaining) != 1 || !strings.Contains(g.Text, want) || strings.Contains(g.Text, tc.id) {
			t.Errorf("%s: passed %v, remaining %q; want the base failure carried and shown as %q:\n%s", tc.id, g.Passed, g.Remaining, want, g.Text)
		}
	}
	kept := Compare(nil, []validate.Result{{Name: "tests", Kind: validate.KindPytest, Tests: 1, Findings: []validate.Finding{
		{File: "tests/test_x.py", Line: 5, Test: "tests/test_x.py::test_x", Message: "assert 1 == 2"}}}})
	if !strings.Contains(kept.Text, "tests: tests/test_x.py::test_x: ") {
		t.Errorf("a test function's id is rewritten:\n%s", kept.Text)
	}
}
