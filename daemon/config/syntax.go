package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// syntaxError turns a YAML syntax error into "file:line: what is wrong, in words, and what
// to do", at the line that is wrong. The parser says where it noticed, which is often not
// where the mistake is: a key that lost its colon is noticed at the next line ("mapping
// values are not allowed") or at the start of the scalar it became part of.
func syntaxError(name string, data []byte, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	m := lineRe.FindStringSubmatch(msg)
	if m == nil {
		return fmt.Errorf("%s: the YAML is not valid: %s", name, msg)
	}
	line, _ := strconv.Atoi(m[1])
	lines := yamlLines(strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n"))
	line, words := lines.explain(m[2], line)
	if t := strings.TrimSpace(lines.text(line)); t != "" {
		return fmt.Errorf("%s:%d: %s (the line reads %q)", name, line, words, clipLine(t))
	}
	return fmt.Errorf("%s:%d: %s", name, line, words)
}

// yamlLines are the lines of a config file, for pointing at the line that is wrong.
type yamlLines []string

// text is line n (counting from 1), or "" past either end.
func (l yamlLines) text(n int) string {
	if n < 1 || n > len(l) {
		return ""
	}
	return l[n-1]
}

// noColon says whether line n looks like a "key value" that lost its colon.
func (l yamlLines) noColon(n int) bool {
	t := strings.TrimSpace(l.text(n))
	if t == "" || strings.HasPrefix(t, "#") || strings.HasPrefix(t, "- ") || t == "-" || strings.HasPrefix(t, "[") || strings.HasPrefix(t, "{") {
		return false
	}
	return !strings.Contains(stripComment(t), ":")
}

const missingColon = `a key without its colon: write "key: value" (a space after the colon)`

// explain says in words what the parser's message what, noticed at line, means, and moves
// line to where the mistake most likely is.
func (l yamlLines) explain(what string, line int) (int, string) {
	switch {
	case strings.Contains(what, "could not find expected ':'"):
		for n := line; n <= len(l) && n < line+200; n++ {
			if l.noColon(n) {
				return n, missingColon
			}
		}
		return line, missingColon
	case strings.Contains(what, "mapping values are not allowed"):
		if l.noColon(line - 1) {
			return line - 1, missingColon
		}
		return line, `a colon where none may be: quote a value that holds ": " ('like: this'), or fix this line's indentation to match the keys beside it`
	case strings.Contains(what, "found character that cannot start any token"), strings.Contains(what, "tab character"):
		if strings.Contains(l.text(line), "\t") {
			return line, "a tab in the indentation: YAML indents with spaces only"
		}
		return line, "a value starts with a character YAML reserves (@, `, %): put the value in quotes"
	}
	for _, f := range yamlFixes {
		if slices.ContainsFunc(f.finds, func(s string) bool { return strings.Contains(what, s) }) {
			return line, f.words
		}
	}
	return line, "the YAML is not valid (" + what + ")"
}

// yamlFixes say in words what the parser's other messages mean (any of finds in it).
var yamlFixes = []struct {
	finds []string
	words string
}{
	{[]string{"found unexpected end of stream", "found unexpected end of file"}, "a quoted value is not closed: close its quote on the same line"},
	{[]string{"did not find expected ',' or ']'"}, "a list in [ ] is not closed, or two of its items lack a comma between them"},
	{[]string{"did not find expected ',' or '}'"}, "a mapping in { } is not closed, or two of its entries lack a comma between them"},
	{[]string{"did not find expected key", "did not find expected '-' indicator"}, "this line's indentation does not match the keys (or list items) above it: indent it like its siblings"},
	{[]string{"block sequence entries are not allowed"}, "a list item (- ...) where a value was expected: put the items on their own lines, indented under their key"},
}

// stripComment drops a trailing " # comment".
func stripComment(s string) string {
	if i := strings.Index(s, " #"); i >= 0 {
		return s[:i]
	}
	return s
}

func clipLine(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}
