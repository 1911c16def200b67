// Package spell suggests which known word a mistyped one meant, for error messages that end
// in "did you mean ...?": a config key, an enum value, a role or an endpoint's name.
package spell

import "strings"

// Closest returns the candidate nearest to word (case-insensitive edit distance), or ""
// when none is near enough to be a plausible typo: at most 1 edit for words of up to 4
// letters, 2 up to 8, 3 beyond. A candidate equal to word is not a suggestion.
func Closest(word string, candidates []string) string {
	w := strings.ToLower(word)
	limit := 1
	switch {
	case len(w) > 8:
		limit = 3
	case len(w) > 4:
		limit = 2
	}
	best, bestD := "", limit+1
	for _, c := range candidates {
		lc := strings.ToLower(c)
		if lc == w {
			continue
		}
		d := distance(w, lc)
		if strings.HasPrefix(lc, w) && len(w) >= 3 {
			d = min(d, 1) // a word cut short
		}
		if d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// Hint is " (did you mean X?)" for the closest candidate, or "".
func Hint(word string, candidates []string) string {
	if c := Closest(word, candidates); c != "" {
		return " (did you mean " + c + "?)"
	}
	return ""
}

// distance is the optimal string alignment distance: insertions, deletions, substitutions
// and transpositions of neighbours ("wokers", "wrokers") each count one.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
