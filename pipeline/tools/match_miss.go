package tools

import (
	"fmt"
	"strings"
)

// Limits of the miss report: enough for the model to copy the real block and fix its call.
const (
	missShowLines = 60
	missNotes     = 6
)

// describeMiss explains a failed match: the real block closest to old_text, with its line
// numbers and content, and how it differs (indentation, spacing, a line missing or extra),
// so the next call can succeed without re-reading the whole file.
func (fl *fileLines) describeMiss(path string, old []string) string {
	head := fmt.Sprintf("old_text was not found in %s, not even ignoring line endings, trailing spaces, indentation, whitespace, escapes and blank lines; nothing was changed.", path)
	if len(fl.lines) == 0 {
		return head + " The file is empty; use write_file to give it content."
	}
	lo, hi := 0, len(old)
	for lo < hi && isBlank(old[lo]) {
		lo++
	}
	for hi > lo && isBlank(old[hi-1]) {
		hi--
	}
	core := old[lo:hi]
	core = core[:min(len(core), 300)] // bounds the alignment table
	if len(core) == 0 {
		return head + " old_text holds only whitespace; include the lines around the place you want to change."
	}
	from, to, score := fl.closestWindow(core)
	if score < 0.34 {
		return head + fmt.Sprintf(" No part of %s resembles old_text. Check the path, or use grep to find where this code lives.", path)
	}
	from, to, pairs := fl.align(core, from, to)
	var b strings.Builder
	b.WriteString(head)
	fmt.Fprintf(&b, " The closest block is lines %d-%d:\n", from+1, to)
	shown := fl.lines[from:to]
	if len(shown) > missShowLines {
		shown = shown[:missShowLines]
	}
	for _, l := range shown {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if to-from > missShowLines {
		fmt.Fprintf(&b, "(block continues to line %d: read_files with {\"path\": %q, \"start_line\": %d} shows the rest)\n", to, path, from+missShowLines+1)
	}
	notes := fl.differences(core, from, to, pairs)
	if len(notes) > 0 {
		b.WriteString("How your old_text differs from it:\n")
		for _, n := range notes {
			b.WriteString("- " + n + "\n")
		}
	}
	b.WriteString("Copy old_text from the lines above (they are the file as it is now) and send the edit again.")
	return b.String()
}

// closestWindow scores every window of len(core) file lines by how alike its lines are to
// core's (each old line may also match a neighbour, to survive one missing or extra line).
func (fl *fileLines) closestWindow(core []string) (from, to int, score float64) {
	// Bound the work on a huge file: about 20M line comparisons at most.
	k := min(len(core), 200, max(1, 20_000_000/(3*max(len(fl.lines), 1))))
	nf := make([]string, len(fl.lines))
	for i, l := range fl.lines {
		nf[i] = normQuotes(l)
	}
	no := make([]string, k)
	for j := range no {
		no[j] = normQuotes(core[j])
	}
	best, bestScore := 0, -1.0
	for i := range nf {
		s := 0.0
		for j := 0; j < k; j++ {
			m := 0.0
			for _, d := range [3]int{0, -1, 1} {
				if x := i + j + d; x >= 0 && x < len(nf) {
					m = max(m, quickSim(nf[x], no[j]))
				}
			}
			s += m
		}
		if s /= float64(k); s > bestScore {
			best, bestScore = i, s
		}
	}
	return best, min(best+len(core), len(fl.lines)), bestScore
}

// quickSim is a cheap 0..1 likeness of two normalised lines: shared prefix and suffix.
func quickSim(a, b string) float64 {
	if a == b {
		if a == "" {
			return 0.5
		}
		return 1
	}
	if a == "" || b == "" {
		return 0
	}
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	return float64(p+s) / float64(max(len(a), len(b)))
}

// align widens the window by a few lines, aligns core to it by longest common subsequence of
// normalised lines, and trims file lines at the edges that match nothing. pairs maps old
// line index to file line index (-1 when the old line has no equal).
func (fl *fileLines) align(core []string, from, to int) (int, int, []int) {
	lo, hi := max(from-2, 0), min(to+2, len(fl.lines))
	a := normQuotesAll(core)
	bs := normQuotesAll(fl.lines[lo:hi])
	pairs := lcsPairs(a, bs, lcsTable(a, bs))
	first, last := -1, -1
	for i, p := range pairs {
		if p < 0 {
			continue
		}
		pairs[i] = lo + p
		if first < 0 {
			first = pairs[i]
		}
		last = pairs[i]
	}
	if first < 0 {
		return from, to, pairs
	}
	// Unmatched old lines before the first or after the last match stand for file lines
	// next to them (a changed first or last line).
	lead, tail := 0, 0
	for lead < len(pairs) && pairs[lead] < 0 {
		lead++
	}
	for tail < len(pairs) && pairs[len(pairs)-1-tail] < 0 {
		tail++
	}
	return max(first-lead, 0), min(last+1+tail, len(fl.lines)), pairs
}

func normQuotesAll(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = normQuotes(l)
	}
	return out
}

// lcsTable returns dp[i][j], the length of the longest common subsequence of a[i:] and
// b[j:]. Blank lines never count as equal: they would anchor the alignment anywhere.
func lcsTable(a, b []string) [][]int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] && !(a[i] == "" && b[j] == "") {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return dp
}

// lcsPairs walks the table back: pairs[i] is the index in b that a[i] is aligned to, or -1.
func lcsPairs(a, b []string, dp [][]int) []int {
	pairs := make([]int, len(a))
	for i := range pairs {
		pairs[i] = -1
	}
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j] && a[i] != "" && dp[i][j] == dp[i+1][j+1]+1:
			pairs[i] = j
			i, j = i+1, j+1
		case dp[i+1][j] >= dp[i][j+1]:
			i++
		default:
			j++
		}
	}
	return pairs
}

// differences lists how core differs from file lines [from, to): per matched line the raw
// differences, and the lines only one side has.
func (fl *fileLines) differences(core []string, from, to int, pairs []int) []string {
	var notes noteList
	matched := matchedDifferences(&notes, fl.lines, core, pairs)
	unmatchedLines(&notes, fl.lines, core, from, to, pairs, matched)
	blankLineCounts(&notes, fl.lines, core, from, to)
	return notes.list
}

// noteList keeps the first missNotes notes and then says that more were left out, so a
// badly wrong old_text cannot flood the tool result.
type noteList struct{ list []string }

func (n *noteList) add(s string) {
	if len(n.list) < missNotes {
		n.list = append(n.list, s)
	} else if len(n.list) == missNotes {
		n.list = append(n.list, "(more differences not listed)")
	}
}

// matchedDifferences notes how each matched pair differs and returns the matched file
// lines. Indentation differences are summed into one note put first: it is the most common
// miss and one note explains all of them.
func matchedDifferences(notes *noteList, lines, core []string, pairs []int) map[int]bool {
	indentDiffs := 0
	var firstIndent string
	matched := map[int]bool{}
	for j, p := range pairs {
		if p < 0 {
			continue
		}
		matched[p] = true
		f, o := lines[p], core[j]
		if f == o {
			continue
		}
		if fi, oi := leadingWS(f), leadingWS(o); fi != oi {
			indentDiffs++
			if firstIndent == "" {
				firstIndent = fmt.Sprintf("line %d is indented with %s, your old_text line with %s", p+1, describeWS(fi), describeWS(oi))
			}
			continue
		}
		notes.add(inLineDifference(f, o, p))
	}
	if indentDiffs > 0 {
		s := firstIndent
		if indentDiffs > 1 {
			s = fmt.Sprintf("indentation differs on %d lines: %s", indentDiffs, firstIndent)
		}
		notes.list = append([]string{s}, notes.list...)
	}
	return matched
}

// inLineDifference describes how file line p (f) differs from its equally indented old
// line o.
func inLineDifference(f, o string, p int) string {
	switch {
	case strings.TrimRight(f, " \t") == strings.TrimRight(o, " \t"):
		return fmt.Sprintf("line %d: trailing whitespace differs", p+1)
	case plainQuotes(f) == plainQuotes(o):
		return fmt.Sprintf("line %d: the quotes differ (the file has %q)", p+1, strings.TrimSpace(f))
	default:
		return fmt.Sprintf("line %d: spacing inside the line differs (the file has %q)", p+1, strings.TrimSpace(f))
	}
}

// unmatchedLines notes the lines only one side has, walking both between matched pairs: a
// changed line shows as one of each in the same gap.
func unmatchedLines(notes *noteList, lines, core []string, from, to int, pairs []int, matched map[int]bool) {
	fi, oj := from, 0
	for oj <= len(core) {
		nextOld := oj
		for nextOld < len(core) && pairs[nextOld] < 0 {
			nextOld++
		}
		nextFile := to
		if nextOld < len(core) {
			nextFile = pairs[nextOld]
		}
		noteGap(notes, lines, core, unmatchedInGap(lines, fi, nextFile, matched), nonBlankIn(core, oj, nextOld))
		if nextOld >= len(core) {
			break
		}
		fi, oj = nextFile+1, nextOld+1
	}
}

// unmatchedInGap returns the non-blank file lines in [from, to) no old line matched.
func unmatchedInGap(lines []string, from, to int, matched map[int]bool) []int {
	var fx []int
	for x := from; x < to; x++ {
		if !matched[x] && !isBlank(lines[x]) {
			fx = append(fx, x)
		}
	}
	return fx
}

// nonBlankIn returns the indexes of the non-blank lines in [from, to).
func nonBlankIn(lines []string, from, to int) []int {
	var ox []int
	for y := from; y < to; y++ {
		if !isBlank(lines[y]) {
			ox = append(ox, y)
		}
	}
	return ox
}

// noteGap pairs the file-only lines fx with the old-only lines ox of one gap as changed
// lines, and notes the rest as missing on one side.
func noteGap(notes *noteList, lines, core []string, fx, ox []int) {
	for len(fx) > 0 && len(ox) > 0 {
		notes.add(fmt.Sprintf("line %d differs: the file has %q, your old_text has %q", fx[0]+1, clipLine(lines[fx[0]]), clipLine(core[ox[0]])))
		fx, ox = fx[1:], ox[1:]
	}
	for _, x := range fx {
		notes.add(fmt.Sprintf("line %d %q is missing from your old_text", x+1, clipLine(lines[x])))
	}
	for _, y := range ox {
		notes.add(fmt.Sprintf("your old_text has %q, which is not in the file here", clipLine(core[y])))
	}
}

// blankLineCounts notes a different number of blank lines, which the other notes skip.
func blankLineCounts(notes *noteList, lines, core []string, from, to int) {
	blankF := len(lines[from:to]) - len(nonBlankIn(lines, from, to))
	blankO := len(core) - len(nonBlankIn(core, 0, len(core)))
	if blankF != blankO {
		notes.add(fmt.Sprintf("the file has %s in this block, your old_text %d", plural(blankF, "blank line"), blankO))
	}
}

func leadingWS(s string) string { return s[:len(s)-len(strings.TrimLeft(s, " \t"))] }

func describeWS(ws string) string {
	if ws == "" {
		return "nothing"
	}
	tabs, spaces := strings.Count(ws, "\t"), strings.Count(ws, " ")
	var parts []string
	if tabs > 0 {
		parts = append(parts, plural(tabs, "tab"))
	}
	if spaces > 0 {
		parts = append(parts, plural(spaces, "space"))
	}
	return strings.Join(parts, " and ")
}

func plural(n int, w string) string {
	if n == 1 {
		return "1 " + w
	}
	return fmt.Sprintf("%d %ss", n, w)
}

func clipLine(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 120 {
		return string(validUTF8Prefix([]byte(s), 120)) + "..."
	}
	return s
}
