package status

import (
	"strings"
	"unicode/utf8"
)

// clipDiffering shortens each of texts to about n characters so that texts which differ
// still read differently: where a text shares its beginning with another of the list (three
// failures that all start "budget: budget exhausted: loop: ..."), the shared part is left
// out ("…" marks it) and what is shown starts at the first word that differs. A text is
// never clipped to a prefix it has in common with another. Whitespace runs become one space.
func clipDiffering(texts []string, n int) []string {
	flat := make([]string, len(texts))
	for i, t := range texts {
		flat[i] = strings.Join(strings.Fields(t), " ")
	}
	out := make([]string, len(flat))
	for i, t := range flat {
		shared := 0
		for j, u := range flat {
			if j != i && u != "" {
				shared = max(shared, commonPrefix(t, u))
			}
		}
		out[i] = clipFrom(t, withContext(t, shared, n), n)
	}
	return out
}

// commonPrefix is the length in bytes of the longest common prefix of a and b, on a rune
// boundary.
func commonPrefix(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	for i > 0 && i < len(a) && !utf8.RuneStart(a[i]) {
		i--
	}
	return i
}

// wordStart moves back from byte offset at to the start of the word it falls in; a text
// that shares all of itself with another starts at 0 (nothing of it differs).
func wordStart(t string, at int) int {
	if at >= len(t) {
		return 0
	}
	if k := strings.LastIndexByte(t[:at], ' '); k >= 0 {
		return k + 1
	}
	return 0
}

// withContext is where to show t from when it differs from another text at byte offset at:
// the start of the word the difference falls in, or of the word before it when that costs
// at most a third of n ("…(case 14)" rather than "…14)").
func withContext(t string, at, n int) int {
	start := wordStart(t, at)
	if start == 0 {
		return 0
	}
	prev := wordStart(t, start-1)
	if utf8.RuneCountInString(t[prev:at]) <= n/3 {
		return prev
	}
	return start
}

// clipFrom is t from byte offset start, at most n runes of it, with "…" where text was
// left out at either end.
func clipFrom(t string, start, n int) string {
	head := ""
	if start > 0 {
		head = "…"
	}
	r := []rune(t[start:])
	if len(r) <= n {
		return head + string(r)
	}
	return head + string(r[:max(n-1, 1)]) + "…"
}
