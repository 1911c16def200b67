package dupes

import (
	"path"
	"regexp"
	"slices"
	"strings"
)

// maxFiles bounds the files an issue's text predicts.
const maxFiles = 20

// pyPathRE is a Python file's path as issue text names it: in a traceback's File "...", a
// test id, or prose ("the bug is in src/app/calc.py").
var pyPathRE = regexp.MustCompile(`(?:[A-Za-z]:|/)?(?:[\w.~-]+[/\\])*[\w.-]+\.py\b`)

// Files are the project's source files an issue's text names (at most 20, in the order
// first named): the files a fix will probably touch, before triage has read the code.
// Library and interpreter paths and test files are left out: a fix touches neither, and
// every traceback of one suite runs through the same tests.
func Files(title, body string) []string {
	text := cut(title) + "\n" + cut(body)
	var out []string
	for _, p := range pyPathRE.FindAllString(text, 2000) {
		p = strings.ReplaceAll(p, `\`, "/")
		if library(p) || testFile(p) || slices.Contains(out, p) {
			continue
		}
		out = append(out, p)
		if len(out) == maxFiles {
			break
		}
	}
	return out
}

// testFile says whether p is a test module or lives under a tests folder.
func testFile(p string) bool {
	base := path.Base(p)
	if strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py") || base == "conftest.py" || base == "tests.py" {
		return true
	}
	for _, dir := range strings.Split(path.Dir(p), "/") {
		if dir == "tests" || dir == "test" {
			return true
		}
	}
	return false
}
