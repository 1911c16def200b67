package config

import (
	"fmt"
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
	what := m[2]
	lines := strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
	text := func(n int) string {
		if n < 1 || n > len(lines) {
			return ""
		}
		return lines[n-1]
	}
	// noColon says whether line n looks like a "key value" that lost its colon.
	noColon := func(n int) bool {
		t := strings.TrimSpace(text(n))
		if t == "" || strings.HasPrefix(t, "#") || strings.HasPrefix(t, "- ") || t == "-" || strings.HasPrefix(t, "[") || strings.HasPrefix(t, "{") {
			return false
		}
		return !strings.Contains(stripComment(t), ":")
	}
	words := ""
	switch {
	case strings.Contains(what, "could not find expected ':'"):
		for n := line; n <= len(lines) && n < line+200; n++ {
			if noColon(n) {
				line = n
				break
			}
		}
		words = `a key without its colon: write "key: value" (a space after the colon)`
	case strings.Contains(what, "mapping values are not allowed"):
		if noColon(line - 1) {
			line--
			words = `a key without its colon: write "key: value" (a space after the colon)`
		} else {
			words = `a colon where none may be: quote a value that holds ": " ('like: this'), or fix this line's indentation to match the keys beside it`
		}
	case strings.Contains(what, "found character that cannot start any token"), strings.Contains(what, "tab character"):
		if strings.Contains(text(line), "\t") {
			words = "a tab in the indentation: YAML indents with spaces only"
		} else {
			words = "a value starts with a character YAML reserves (@, `, %): put the value in quotes"
		}
	case strings.Contains(what, "found unexpected end of stream"), strings.Contains(what, "found unexpected end of file"):
		words = "a quoted value is not closed: close its quote on the same line"
	case strings.Contains(what, "did not find expected ',' or ']'"):
		words = "a list in [ ] is not closed, or two of its items lack a comma between them"
	case strings.Contains(what, "did not find expected ',' or '}'"):
		words = "a mapping in { } is not closed, or two of its entries lack a comma between them"
	case strings.Contains(what, "did not find expected key"), strings.Contains(what, "did not find expected '-' indicator"):
		words = "this line's indentation does not match the keys (or list items) above it: indent it like its siblings"
	case strings.Contains(what, "block sequence entries are not allowed"):
		words = "a list item (- ...) where a value was expected: put the items on their own lines, indented under their key"
	default:
		words = "the YAML is not valid (" + what + ")"
	}
	if t := strings.TrimSpace(text(line)); t != "" {
		return fmt.Errorf("%s:%d: %s (the line reads %q)", name, line, words, clipLine(t))
	}
	return fmt.Errorf("%s:%d: %s", name, line, words)
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
