package discover

import (
	"regexp"
	"strings"
)

// GlobRegexp compiles a recursive path glob to a regular expression that matches a whole
// slash-separated path: "**/" any folders (none included), "**" anything, "*" and "?" within
// one name, and [seq] / [!seq] one character of (not of) seq by Python's fnmatch rules (a
// "]" first in seq is part of it, a backslash is itself, a leading "^" is literal, a "["
// never closed is literal). It is the glob of pytest's testpaths (glob.iglob(recursive=True))
// and of a reviewer's paths, which adds its own rule for a pattern without "/" (any depth).
// The error says what does not compile (a reversed range such as [z-a]).
func GlobRegexp(pattern string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; {
		case strings.HasPrefix(pattern[i:], "**/"):
			b.WriteString("(?:.*/)?")
			i += 2
		case strings.HasPrefix(pattern[i:], "**"):
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		case c == '[':
			class, next := fnmatchClass(pattern, i)
			b.WriteString(class)
			i = next
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}

// fnmatchClass translates the class of Python's fnmatch that opens at pattern[i] ("["): its
// regular expression and the index of its last byte. A "]" first in it (after a "!") is part
// of it, a backslash is itself, a leading "^" is literal, "!" negates; a "[" that nothing
// closes is itself.
func fnmatchClass(pattern string, i int) (string, int) {
	j := i + 1
	if j < len(pattern) && pattern[j] == '!' {
		j++
	}
	if j < len(pattern) && pattern[j] == ']' {
		j++
	}
	for j < len(pattern) && pattern[j] != ']' {
		j++
	}
	if j >= len(pattern) {
		return `\[`, i
	}
	// Inside RE2's class a backslash escapes and "[:" opens a named class; in Python's, both
	// are themselves.
	set := strings.NewReplacer(`\`, `\\`, "[", `\[`).Replace(pattern[i+1 : j])
	switch {
	case strings.HasPrefix(set, "!"):
		set = "^" + set[1:]
	case strings.HasPrefix(set, "^"):
		set = `\` + set
	}
	return "[" + set + "]", j
}
