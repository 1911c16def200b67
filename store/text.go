package store

import (
	"fmt"
	"sort"
	"strings"
)

// CleanText removes the control characters a ticket's text must not carry: NUL and the other
// C0 characters but tab and newline (a CR before a newline is a line ending, and goes too),
// and DEL. Git refuses a NUL in a commit message, PostgreSQL refuses it in text, and a
// terminal obeys the others; none of them is anything a reporter meant to write.
func CleanText(s string) string {
	if strings.IndexFunc(s, isControl) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if isControl(r) {
			return -1
		}
		return r
	}, s)
}

func isControl(r rune) bool {
	return (r < 0x20 && r != '\t' && r != '\n') || r == 0x7f
}

// controlChars counts the control characters CleanText removes, by name ("NUL", "0x1B"),
// nil when there are none. A CR that ends a line is not counted: it is a Windows line end,
// not a mistake worth a warning.
func controlChars(s string) map[string]int {
	var out map[string]int
	for i, r := range s {
		if !isControl(r) || (r == '\r' && i+1 < len(s) && s[i+1] == '\n') {
			continue
		}
		if out == nil {
			out = map[string]int{}
		}
		name := fmt.Sprintf("0x%02X", r)
		switch r {
		case 0:
			name = "NUL"
		case '\r':
			name = "CR"
		case 0x1b:
			name = "ESC"
		case 0x7f:
			name = "DEL"
		}
		out[name]++
	}
	return out
}

// cleanNote says what CleanText removed from a ticket's title and body, "" when nothing
// but line ends: the warning an operator sees on the ticket.
func cleanNote(title, body string) string {
	var parts []string
	for _, f := range []struct{ name, text string }{{"title", title}, {"body", body}} {
		cc := controlChars(f.text)
		if len(cc) == 0 {
			continue
		}
		var names []string
		for name, n := range cc {
			names = append(names, fmt.Sprintf("%d %s", n, name))
		}
		sort.Strings(names)
		parts = append(parts, fmt.Sprintf("its %s held control characters (%s)", f.name, strings.Join(names, ", ")))
	}
	if len(parts) == 0 {
		return ""
	}
	return "intake: " + strings.Join(parts, "; ") + "; they were removed (git cannot carry a NUL in a commit message, and none belongs in an issue): check the text is what the reporter meant"
}
