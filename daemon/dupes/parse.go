// Package dupes tells whether two tickets of one repository report the same failure: the
// same failing test, the same innermost traceback frame of the project's code, or a title
// and body close enough. Issue text is untrusted: parsing is bounded and never fails.
package dupes

import (
	"regexp"
	"slices"
	"strings"
)

// maxText bounds how much of an issue is read (a pasted log can be megabytes).
const maxText = 64 << 10

// Frame is one traceback frame, normalized: File is the file's base name, Func its function.
type Frame struct {
	File string
	Func string
}

// String is file:func, as reasons show it.
func (f Frame) String() string { return f.File + ":" + f.Func }

// Signature is what an issue says about its failure.
type Signature struct {
	// Frame is the innermost frame of the last traceback in the project's own code (the
	// innermost frame at all when every frame is in the standard library or site-packages);
	// zero when the issue has no traceback.
	Frame Frame
	// Tests are the failing test ids it names (path::name, parameters dropped), sorted.
	Tests []string
	// Words are the title's and body's words, for similarity.
	Words map[string]bool
}

var (
	// File "src/app/calc.py", line 12, in divide
	frameRE = regexp.MustCompile(`File "([^"\n]{1,400})", line \d{1,9}, in ([^\s]{1,200})`)
	// tests/test_calc.py::TestCalc::test_divide[0-1]
	testRE = regexp.MustCompile(`(?:^|[\s"'(=])((?:[\w.-]+/)*[\w.-]+\.py)((?:::[A-Za-z_]\w*){1,4})`)
	wordRE = regexp.MustCompile(`[\p{L}\p{N}_]{2,40}`)
)

// Parse reads title and body (each cut to 64 KiB).
func Parse(title, body string) Signature {
	title, body = cut(title), cut(body)
	text := title + "\n" + body
	return Signature{Frame: innermost(body), Tests: testIDs(text), Words: words(text)}
}

func cut(s string) string {
	if len(s) > maxText {
		s = s[:maxText]
	}
	return s
}

// innermost is the innermost frame of the last traceback, preferring the project's code.
func innermost(body string) Frame {
	lines := strings.Split(body, "\n")
	// The last traceback: frames after the last "Traceback" line when there is one.
	start := 0
	for i, l := range lines {
		if strings.Contains(l, "Traceback (most recent call last)") {
			start = i
		}
	}
	var own, last Frame
	for _, l := range lines[start:] {
		m := frameRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		f := Frame{File: baseName(m[1]), Func: m[2]}
		if f.File == "" {
			continue
		}
		last = f
		if !library(m[1]) {
			own = f
		}
	}
	if own != (Frame{}) {
		return own
	}
	return last
}

// library reports whether a frame's path is outside the project (the interpreter's).
func library(path string) bool {
	p := strings.ToLower(strings.ReplaceAll(path, `\`, "/"))
	return strings.Contains(p, "site-packages/") || strings.Contains(p, "dist-packages/") ||
		strings.HasPrefix(p, "<") || libPython.MatchString(p)
}

var libPython = regexp.MustCompile(`/lib/python\d[\d.]*/`)

// baseName is a path's last element: the same file reported from two checkouts matches.
func baseName(path string) string {
	p := strings.ReplaceAll(path, `\`, "/")
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		p = p[i+1:]
	}
	return strings.ToLower(strings.TrimSpace(p))
}

// testIDs are the test ids in text, sorted and unique, each path::name with "./" dropped.
func testIDs(text string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range testRE.FindAllStringSubmatch(text, 200) {
		id := strings.TrimPrefix(m[1], "./") + m[2]
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// stop are words too common in bug reports to say which bug it is.
var stop = map[string]bool{
	"the": true, "and": true, "is": true, "in": true, "of": true, "to": true, "it": true, "when": true,
	"on": true, "with": true, "for": true, "an": true, "this": true, "that": true, "be": true, "was": true,
	"are": true, "not": true, "error": true, "bug": true, "fails": true, "failed": true, "line": true,
	"file": true, "py": true, "traceback": true, "most": true, "recent": true, "call": true, "last": true,
}

func words(text string) map[string]bool {
	w := map[string]bool{}
	for _, m := range wordRE.FindAllString(strings.ToLower(text), 5000) {
		if !stop[m] {
			w[m] = true
		}
	}
	return w
}
