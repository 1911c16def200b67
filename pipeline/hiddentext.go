package pipeline

import (
	"context"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A line the maker adds can read one way to a reviewer and another to Python (Trojan Source,
// CVE-2021-42574): a bidirectional control reorders what a diff shows ("return a - b" shown,
// a comment's end moved over the code), a zero-width character makes two names that look the
// same differ, and a Cyrillic "а" in "vаlidate" calls another function than the one the judge
// reads. The checker and the judge read the diff as text, and a human the report: neither
// sees them. A fix never needs one written literally (Python writes "\u202e"), so an added
// line holding one is refused at submit like a suppression, unless the file's base version
// already holds the same character (a project that tests right-to-left text).

// hiddenRune says what r is when it is a character a reader of the diff does not see as
// it acts: a bidirectional control, or an invisible one. inPython adds the zero-width
// joiners, which text in a data file uses (Persian, Indic scripts, emoji sequences).
func hiddenRune(r rune, inPython bool) string {
	switch {
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return "a bidirectional control character"
	case r == 0x200b, r >= 0x2060 && r <= 0x2064, r == 0xfeff, r == 0x00ad, r == 0x180e, r == 0x115f, r == 0x1160, r == 0x3164:
		return "an invisible character"
	case inPython && (r == 0x200c || r == 0x200d):
		return "an invisible character"
	}
	return ""
}

// confusableWord reports whether word mixes ASCII letters with Cyrillic or Greek ones, whose
// letters look like Latin ones ("vаlidate" with a Cyrillic а): a name that reads as another.
func confusableWord(word string) bool {
	var ascii, other bool
	for _, r := range word {
		switch {
		case r < utf8.RuneSelf && unicode.IsLetter(r):
			ascii = true
		case unicode.In(r, unicode.Cyrillic, unicode.Greek):
			other = true
		}
	}
	return ascii && other
}

// hiddenTextFindings lists "path:line: adds <what>" for each line diff adds that holds a
// character a reader of the diff cannot see as it acts (hiddenRune), or, in Python, a word
// mixing Latin with Cyrillic or Greek letters; a character (or such a word) the file's base
// version already holds is the project's. A changed path holding such a character is refused
// too.
func hiddenTextFindings(ctx context.Context, tree *testTree, diff string, changed []string) []string {
	var out []string
	for _, p := range changed {
		// A name the diff shows reordered ("test_\u202eyp.clac" reads as test_calc.py) or
		// that differs from another only unseen is a file a reader takes for another.
		for _, r := range p {
			if what := hiddenRune(r, true); what != "" {
				out = append(out, fmt.Sprintf("%s: its name holds %s (U+%04X), so a reader of the diff takes it for another file; choose a plain name", visible(p), what, r))
				break
			}
		}
	}
	for _, fd := range splitDiff(diff) {
		inPython := strings.HasSuffix(fd.path, ".py") || strings.HasSuffix(fd.path, ".pyi")
		var base *string
		baseHas := func(s string) bool {
			if base == nil {
				b := ""
				if tree != nil && tree.baseFile != nil {
					if data, found, err := tree.baseFile(ctx, fd.path); err == nil && found {
						b = string(data)
					}
				}
				base = &b
			}
			return strings.Contains(*base, s)
		}
		for _, l := range addedLines(fd) {
			text := l.text
			if l.n == 1 {
				text = strings.TrimPrefix(text, "\ufeff") // a byte order mark opening a file
			}
			if what := hiddenLine(text, inPython, baseHas); what != "" {
				out = append(out, fmt.Sprintf("%s:%d: adds %s, which the diff a reviewer reads does not show as it acts (write it as an escape, such as \"\\u202e\", if the code needs it): %s", fd.path, l.n, what, clip(visible(strings.TrimSpace(l.text)), 120)))
			}
		}
	}
	return out
}

// hiddenLine says what the first hidden character or confusable word of line is, "" when
// none (or the base already holds it).
func hiddenLine(line string, inPython bool, baseHas func(string) bool) string {
	for _, r := range line {
		if what := hiddenRune(r, inPython); what != "" && !baseHas(string(r)) {
			return fmt.Sprintf("%s (U+%04X)", what, r)
		}
	}
	if !inPython {
		return ""
	}
	for _, w := range strings.FieldsFunc(line, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' }) {
		if confusableWord(w) && !baseHas(w) {
			return fmt.Sprintf("a name mixing Latin with Cyrillic or Greek letters, which reads as another (%s)", visible(w))
		}
	}
	return ""
}

// visible spells the characters hiddenRune names, and the Cyrillic and Greek letters, as
// <U+XXXX>, so that a message (to the maker, in the report) shows them.
func visible(s string) string {
	var b strings.Builder
	for _, r := range s {
		if hiddenRune(r, true) != "" || unicode.In(r, unicode.Cyrillic, unicode.Greek) {
			fmt.Fprintf(&b, "<U+%04X>", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
