package validate

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// DefaultFeedbackBytes bounds Feedback when maxBytes is not positive: enough
// for a handful of failures with their messages, small next to a prompt.
const DefaultFeedbackBytes = 4000

// maxFindingsPerCheck keeps one noisy linter from crowding out the test
// failures in the feedback.
const maxFindingsPerCheck = 10

// Feedback renders results as short text for the maker model: each failed
// check with its summary, then its findings as "file:line test" and the
// message, indented; a failed check without findings shows the tail of its
// output instead. Passed checks get one line at the end. The text is cut at
// a line boundary to at most maxBytes (DefaultFeedbackBytes when <= 0).
func Feedback(results []Result, maxBytes int) string {
	if maxBytes <= 0 {
		maxBytes = DefaultFeedbackBytes
	}
	var b strings.Builder
	var passed []string
	failed := 0
	for _, r := range results {
		if r.Passed {
			passed = append(passed, fmt.Sprintf("%s (%s)", r.Name, r.Kind))
			continue
		}
		failed++
		fmt.Fprintf(&b, "check %q (%s) failed: %s\n", r.Name, r.Kind, r.Summary)
		for i, f := range r.Findings {
			if i == maxFindingsPerCheck {
				fmt.Fprintf(&b, "  ... and %d more\n", len(r.Findings)-i)
				break
			}
			b.WriteString("- ")
			b.WriteString(findingHead(f))
			b.WriteByte('\n')
			for _, line := range strings.Split(f.Message, "\n") {
				b.WriteString("    ")
				b.WriteString(line)
				b.WriteByte('\n')
			}
		}
		if len(r.Findings) == 0 && r.Output != "" {
			b.WriteString("  output (last lines):\n")
			for _, line := range lastLines(r.Output, 15) {
				b.WriteString("    ")
				b.WriteString(clip(line, 300))
				b.WriteByte('\n')
			}
		}
	}
	switch {
	case failed == 0 && len(passed) == 0:
		b.WriteString("no checks configured\n")
	case failed == 0:
		fmt.Fprintf(&b, "all %d checks passed: %s\n", len(passed), strings.Join(passed, ", "))
	case len(passed) > 0:
		fmt.Fprintf(&b, "passed: %s\n", strings.Join(passed, ", "))
	}
	return cutLines(b.String(), maxBytes)
}

// findingHead is "file:line test", with whatever parts are known.
func findingHead(f Finding) string {
	loc := f.File
	if loc != "" && f.Line > 0 {
		loc = fmt.Sprintf("%s:%d", f.File, f.Line)
	}
	switch {
	case loc != "" && f.Test != "":
		return loc + " " + f.Test
	case loc != "":
		return loc
	case f.Test != "":
		return f.Test
	}
	return "(no location)"
}

// cutLines shortens s to at most n bytes, at a line boundary when there is
// one, and says that it was cut.
func cutLines(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const marker = "[feedback truncated]\n"
	limit := max(n-len(marker), 0)
	cut := strings.LastIndexByte(s[:limit], '\n') + 1
	if cut == 0 {
		cut = limit
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
	}
	out := s[:cut] + marker
	if len(out) > n {
		return out[:0]
	}
	return out
}
