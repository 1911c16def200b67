package validate

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func findingsText(fs []Finding) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "%s:%d [%s] %q\n", f.File, f.Line, f.Test, f.Message)
	}
	return b.String()
}

func TestParseJUnit(t *testing.T) {
	tests := []struct {
		file    string
		summary string
		want    []Finding
	}{
		{"junit/failures.xml", "4 failed, 1 passed", []Finding{
			{File: "stats.py", Line: 2, Test: "tests/test_stats.py::TestMean::test_empty", Message: "ZeroDivisionError: division by zero"},
			{File: "tests/test_stats.py", Line: 8, Test: "tests/test_stats.py::TestMean::test_one", Message: "AssertionError: 2.0 != 3"},
			{File: "tests/test_stats.py", Line: 14, Test: "tests/test_stats.py::TestMean::test_sub", Message: "AssertionError: 1 != 0"},
			{File: "tests/test_stats.py", Line: 17, Test: "tests/test_stats.py::test_plain", Message: "assert 1.5 == 2\n +  where 1.5 = mean([1, 2])"},
		}},
		{"junit/errors.xml", "1 error, 0 passed", []Finding{
			{File: "tests/test_broken.py", Line: 1, Test: "tests/test_broken.py::tests.test_broken", Message: "ModuleNotFoundError: No module named 'nosuchmod' (collection failure)"},
		}},
		// A root conftest.py whose collection hook fails (docopt's, written for an older
		// pytest): the session itself errors, with no node id and no "E " line.
		{"junit/session_error.xml", "1 error, 0 passed", []Finding{
			{Message: "Direct construction of conftest.DocoptTestFile has been deprecated, please use conftest.DocoptTestFile.from_parent. (collection failure)"},
		}},
		{"junit/setup_error_skip.xml", "1 error, 0 passed, 1 skipped", []Finding{
			{File: "tests/test_fix.py", Line: 4, Test: "tests/test_fix.py::test_a", Message: `failed on setup with "RuntimeError: fixture broke"`},
		}},
	}
	for _, tt := range tests {
		r, err := parseJUnit(readTestdata(t, tt.file), "/tmp/vt")
		if err != nil {
			t.Errorf("%s: %v", tt.file, err)
			continue
		}
		if got, want := findingsText(r.findings), findingsText(tt.want); got != want || r.summary() != tt.summary {
			t.Errorf("%s:\n got summary %q findings\n%s\nwant summary %q findings\n%s", tt.file, r.summary(), got, tt.summary, want)
		}
	}
	for _, bad := range []string{"", "<html>", "<testsuite><testcase name='x'><failure>", "not xml at all"} {
		if _, err := parseJUnit([]byte(bad), ""); err == nil {
			t.Errorf("parseJUnit(%q): no error", bad)
		}
	}
	// A bare <testsuite> root and absolute paths, as other JUnit writers make.
	r, err := parseJUnit([]byte(`<testsuite><testcase classname="a.b" name="t" file="/w/a/b.py" line="0"><failure message="boom"/></testcase></testsuite>`), "/w")
	if err != nil || findingsText(r.findings) != "a/b.py:1 [a.b::t] \"boom\"\n" {
		t.Errorf("bare testsuite: %v %s", err, findingsText(r.findings))
	}
}

func TestParseUnittest(t *testing.T) {
	tests := []struct {
		file   string
		dir    string
		ran    int
		status string
		want   []Finding
	}{
		{"unittest/failures.txt", "/tmp/vt", 4, "FAILED (failures=2, errors=1)", []Finding{
			{File: "stats.py", Line: 2, Test: "tests.test_stats.TestMean.test_empty", Message: "ZeroDivisionError: division by zero"},
			{File: "tests/test_stats.py", Line: 8, Test: "tests.test_stats.TestMean.test_one", Message: "AssertionError: 2.0 != 3"},
			{File: "tests/test_stats.py", Line: 14, Test: "tests.test_stats.TestMean.test_sub (i=1)", Message: "AssertionError: 1 != 0"},
		}},
		{"unittest/import_error.txt", "/tmp/vt2", 2, "FAILED (errors=2)", []Finding{
			{File: "tests/test_broken.py", Line: 1, Test: "unittest.loader._FailedTest.test_broken", Message: "ModuleNotFoundError: No module named 'nosuchmod'"},
			{File: "tests/test_fix.py", Line: 1, Test: "unittest.loader._FailedTest.test_fix", Message: "ModuleNotFoundError: No module named 'pytest'"},
		}},
	}
	for _, tt := range tests {
		r := parseUnittest(string(readTestdata(t, tt.file)), tt.dir)
		if got, want := findingsText(r.findings), findingsText(tt.want); got != want || r.ran != tt.ran || r.status != tt.status {
			t.Errorf("%s:\n got ran=%d status=%q\n%s\nwant ran=%d status=%q\n%s", tt.file, r.ran, r.status, got, tt.ran, tt.status, want)
		}
	}
	// Python before 3.11 names only the class in the parenthesis; a
	// multi-line assertion message is kept.
	old := strings.Join([]string{
		strings.Repeat("=", 70),
		"FAIL: test_list (test_m.T)",
		strings.Repeat("-", 70),
		"Traceback (most recent call last):",
		`  File "test_m.py", line 5, in test_list`,
		"    self.assertEqual([1], [2])",
		"AssertionError: Lists differ: [1] != [2]",
		"",
		"First differing element 0:",
		"",
		strings.Repeat("-", 70),
		"Ran 1 test in 0.000s",
		"",
		"FAILED (failures=1)",
	}, "\n")
	r := parseUnittest(old, "")
	want := "test_m.py:5 [test_m.T.test_list] \"AssertionError: Lists differ: [1] != [2]\\nFirst differing element 0:\"\n"
	if got := findingsText(r.findings); got != want || r.ran != 1 {
		t.Errorf("pre-3.11 output:\n got %s ran=%d\nwant %s", got, r.ran, want)
	}
}

func TestParseRuff(t *testing.T) {
	got, err := parseRuff(readTestdata(t, "ruff/violations.json"), "/work/tree")
	want := []Finding{
		{File: "pkg/a.py", Line: 1, Test: "F401", Message: "`os` imported but unused"},
		{File: "b.py", Line: 3, Message: "SyntaxError: Expected an expression"},
		{File: "/elsewhere/c.py", Line: 10, Test: "E711", Message: "Comparison to `None` should be `cond is None`"},
	}
	if err != nil || findingsText(got) != findingsText(want) {
		t.Errorf("violations.json: %v\n got\n%s\nwant\n%s", err, findingsText(got), findingsText(want))
	}
	if got, err := parseRuff(readTestdata(t, "ruff/clean.json"), ""); err != nil || len(got) != 0 {
		t.Errorf("clean.json: %v %v", got, err)
	}
	tests := []struct {
		code   int
		stdout string
		passed bool
		sum    string
	}{
		{0, "[]", true, "no findings"},
		{1, string(readTestdata(t, "ruff/violations.json")), false, "3 findings"},
		{2, "", false, "exit status 2: ruff failed: bad config"},
	}
	for _, tt := range tests {
		p := interpretRuff("/work/tree", tt.code, tt.stdout, "ruff failed: bad config\n")
		if p.passed != tt.passed || p.summary != tt.sum {
			t.Errorf("interpretRuff(exit %d, %.20q) = passed %v summary %q, want %v %q", tt.code, tt.stdout, p.passed, p.summary, tt.passed, tt.sum)
		}
	}
}

func TestParseMypy(t *testing.T) {
	tests := []struct {
		file    string
		summary string
		want    []Finding
	}{
		{"mypy/errors.txt", "Found 3 errors in 1 file (checked 2 source files)", []Finding{
			{File: "typed.py", Line: 2, Test: "return-value", Message: `Incompatible return value type (got "int", expected "str")`},
			{File: "typed.py", Line: 5, Test: "arg-type", Message: `Argument 1 to "f" has incompatible type "str"; expected "int"`},
			{File: "typed.py", Line: 6, Test: "name-defined", Message: `Name "undefined_name" is not defined`},
		}},
		{"mypy/columns.txt", "Found 3 errors in 1 file (checked 1 source file)", []Finding{
			{File: "typed.py", Line: 2, Test: "return-value", Message: `Incompatible return value type (got "int", expected "str")`},
			{File: "typed.py", Line: 5, Test: "arg-type", Message: `Argument 1 to "f" has incompatible type "str"; expected "int"`},
			{File: "typed.py", Line: 6, Test: "name-defined", Message: `Name "undefined_name" is not defined`},
		}},
		{"mypy/notes.txt", "Found 3 errors in 3 files (checked 7 source files)", []Finding{
			{File: "pkg/models.py", Line: 10, Test: "union-attr", Message: "Item \"None\" of \"Optional[str]\" has no attribute \"upper\"\nLeft operand is of type \"Optional[str]\""},
			{File: "pkg/models.py", Message: "Duplicate module named \"models\" (also at \"other/models.py\")\nSee https://mypy.readthedocs.io/en/stable/running_mypy.html#mapping-file-paths-to-modules for more info"},
			{File: "pkg/util.py", Line: 3, Message: `unused "type: ignore" comment`},
			{File: "stubs/x.pyi", Line: 1, Test: "syntax", Message: "Invalid syntax"},
		}},
		{"mypy/success.txt", "Success: no issues found in 4 source files", nil},
	}
	for _, tt := range tests {
		got, summary := parseMypy(string(readTestdata(t, tt.file)), "/work/tree")
		if findingsText(got) != findingsText(tt.want) || summary != tt.summary {
			t.Errorf("%s:\n got %q\n%s\nwant %q\n%s", tt.file, summary, findingsText(got), tt.summary, findingsText(tt.want))
		}
	}
}

func TestOutputFindingMasksTimes(t *testing.T) {
	tests := []struct{ a, b string }{
		{"ERROR: file or directory not found: x\n\nno tests ran in 0.01s\n", "ERROR: file or directory not found: x\n\nno tests ran in 0.37s\n"},
		{"Ran 2 tests in 0.000s\n\nFAILED (errors=1)\n", "Ran 2 tests in 1.250s\n\nFAILED (errors=1)\n"},
	}
	for _, tt := range tests {
		fa, fb := outputFinding(tt.a), outputFinding(tt.b)
		if fa != fb || !strings.Contains(fa.Message, "<time>") {
			t.Errorf("outputFinding(%q) = %q\noutputFinding(%q) = %q\nwant equal, times masked", tt.a, fa.Message, tt.b, fb.Message)
		}
	}
	if f := outputFinding("\n\n"); f.Message != "" {
		t.Errorf("empty output gave %+v", f)
	}
}
