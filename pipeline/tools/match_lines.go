package tools

import (
	"sort"
	"strings"
)

// fileLines is a file split into lines, with byte offsets into the original content so a
// line-level match maps back to an exact region.
type fileLines struct {
	content string
	lines   []string // without the line terminator (LF or CRLF)
	starts  []int    // offset of each line
	ends    []int    // offset of each line's end, before its terminator
	next    []int    // offset after the terminator (len(content) for a last line without one)
	eol     string   // the file's dominant line ending, used for what is written
	crs     []int    // offsets, in the LF-normalised text, of each '\n' that had a '\r' before it
}

func splitFile(content string) *fileLines {
	fl := &fileLines{content: content, eol: "\n"}
	crlf, lfs := 0, 0
	at, removed := 0, 0
	for at < len(content) {
		i := strings.IndexByte(content[at:], '\n')
		end, next := len(content), len(content)
		if i >= 0 {
			end, next = at+i, at+i+1
			lfs++
			if end > at && content[end-1] == '\r' {
				end--
				crlf++
				fl.crs = append(fl.crs, end-removed)
				removed++
			}
		}
		fl.lines = append(fl.lines, content[at:end])
		fl.starts = append(fl.starts, at)
		fl.ends = append(fl.ends, end)
		fl.next = append(fl.next, next)
		at = next
	}
	if crlf*2 > lfs {
		fl.eol = "\r\n"
	}
	return fl
}

// withEndings converts s to the file's dominant line ending.
func (fl *fileLines) withEndings(s string) string {
	s = lf(s)
	if fl.eol == "\r\n" {
		s = strings.ReplaceAll(s, "\n", "\r\n")
	}
	return s
}

// rawOffset maps an offset in the LF-normalised content back to the original content.
func (fl *fileLines) rawOffset(k int) int {
	return k + sort.SearchInts(fl.crs, k)
}

// lineOf is the 1-based line number holding byte offset off.
func (fl *fileLines) lineOf(off int) int {
	return strings.Count(fl.content[:off], "\n") + 1
}

func trimRight(s string) string { return strings.TrimRight(s, " \t\r") }

func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

func normQuotes(s string) string { return collapse(plainQuotes(s)) }

func isBlank(s string) bool { return strings.TrimSpace(s) == "" }

// maxCandidates bounds how many matches a rung collects; more is ambiguous anyway, except
// for replace_all, which this many covers.
const maxCandidates = 1000

// lineBlocks finds every run of file lines equal to old line by line once both are
// normalised by norm (KMP over lines, so a file of repeated lines stays linear).
func (fl *fileLines) lineBlocks(old []string, norm func(string) string) []block {
	k := len(old)
	var out []block
	for _, i := range kmpAll(mapLines(fl.lines, norm), mapLines(old, norm)) {
		out = append(out, block{from: i, to: i + k, pairs: pairsFrom(i, k), tab: 4})
	}
	return out
}

// kmpAll returns the start of every (possibly overlapping) occurrence of pat in text, at
// most maxCandidates.
func kmpAll(text, pat []string) []int {
	if len(pat) == 0 || len(pat) > len(text) {
		return nil
	}
	fail := make([]int, len(pat))
	for i, k := 1, 0; i < len(pat); i++ {
		for k > 0 && pat[i] != pat[k] {
			k = fail[k-1]
		}
		if pat[i] == pat[k] {
			k++
		}
		fail[i] = k
	}
	var out []int
	for i, k := 0, 0; i < len(text); i++ {
		for k > 0 && text[i] != pat[k] {
			k = fail[k-1]
		}
		if text[i] == pat[k] {
			k++
		}
		if k == len(pat) {
			out = append(out, i-len(pat)+1)
			if len(out) >= maxCandidates {
				break
			}
			k = fail[k-1]
		}
	}
	return out
}

func pairsFrom(i, k int) [][2]int {
	p := make([][2]int, k)
	for j := range p {
		p[j] = [2]int{i + j, j}
	}
	return p
}

// indentBlocks finds runs of file lines that equal old except for one indentation shift
// shared by every non-blank line. Indentation is measured in columns, tabs expanded at 4
// and, if that finds nothing and tabs occur, at 8.
func (fl *fileLines) indentBlocks(old []string) []block {
	widths := []int{4}
	if strings.Contains(fl.content, "\t") || strings.Contains(strings.Join(old, "\n"), "\t") {
		widths = append(widths, 8)
	}
	k := len(old)
	cands := kmpAll(mapLines(fl.lines, strings.TrimSpace), mapLines(old, strings.TrimSpace))
	for _, tab := range widths {
		var out []block
		for _, i := range cands {
			delta, set, ok := 0, false, true
			for j := 0; j < k && ok; j++ {
				f, o := fl.lines[i+j], old[j]
				if isBlank(f) {
					continue // both blank: the candidate search compared trimmed lines
				}
				d := indentCols(f, tab) - indentCols(o, tab)
				if !set {
					delta, set = d, true
				}
				ok = d == delta
			}
			if ok && set {
				out = append(out, block{from: i, to: i + k, pairs: pairsFrom(i, k), tab: tab})
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

// sparseBlocks matches old's non-blank lines to consecutive non-blank file lines, ignoring
// blank lines on both sides (a missing, extra or trimmed blank line).
func (fl *fileLines) sparseBlocks(old []string) []block {
	var on []int
	var ov []string
	for j, l := range old {
		if !isBlank(l) {
			on = append(on, j)
			ov = append(ov, normQuotes(l))
		}
	}
	if len(on) == 0 {
		return nil
	}
	var fn []int
	var fv []string
	for i, l := range fl.lines {
		if !isBlank(l) {
			fn = append(fn, i)
			fv = append(fv, normQuotes(l))
		}
	}
	var out []block
	for _, s := range kmpAll(fv, ov) {
		b := block{from: fn[s], to: fn[s+len(on)-1] + 1, tab: 4}
		for j := range on {
			b.pairs = append(b.pairs, [2]int{fn[s+j], on[j]})
		}
		out = append(out, b)
	}
	return out
}

// Anchor limits bound the similarity work one edit can cause: blocks up to this many lines,
// and this many (first, last) pairs compared.
const (
	maxAnchorLines = 400
	maxAnchorTries = 100
)

// anchorBlocks matches a block of 3+ non-blank lines by its first and last lines, with the
// lines between alike (edit-distance similarity at least anchorSimilarity) and about as many.
func (fl *fileLines) anchorBlocks(old []string) []block {
	lo, hi := blankTrimmed(old)
	core := old[lo:hi]
	k := len(core)
	if countNonBlank(core) < 3 || k > maxAnchorLines {
		return nil
	}
	a := anchorSearch{
		first: normQuotes(core[0]), last: normQuotes(core[k-1]),
		mid: joinNonBlank(core[1 : k-1]), k: k, slack: max(1, k/4),
		lines: fl.lines, nf: mapLines(fl.lines, normQuotes), budget: maxAnchorTries,
	}
	var out []block
	for i := range a.nf {
		if a.nf[i] != a.first {
			continue
		}
		best := a.bestEnd(i)
		if best >= 0 && !fl.borrowsElsewhere(core[1:k-1], i, best) {
			out = append(out, block{from: i, to: best + 1, tab: 4,
				pairs: [][2]int{{i, lo}, {best, lo + k - 1}}})
		}
	}
	return out
}

// anchorSearch is what anchorBlocks looks for, and the comparisons it may still spend.
type anchorSearch struct {
	first, last string   // old block's first and last line, quotes normalised
	mid         string   // its non-blank middle lines
	k, slack    int      // its length, and how far a match's length may differ
	lines, nf   []string // the file's lines, as they are and quotes normalised
	budget      int      // (first, last) pairs left to compare, across all starts
}

// bestEnd returns the line that best closes a block opened at file line i (the most
// similar middle, at least anchorSimilarity), or -1.
func (a *anchorSearch) bestEnd(i int) int {
	best, bestSim := -1, 0.0
	for j := max(i+2, i+a.k-1-a.slack); j <= i+a.k-1+a.slack && j < len(a.nf) && a.budget > 0; j++ {
		if a.nf[j] != a.last {
			continue
		}
		a.budget--
		if s := similarity(joinNonBlank(a.lines[i+1:j]), a.mid); s >= anchorSimilarity && s > bestSim {
			best, bestSim = j, s
		}
	}
	return best
}

// blankTrimmed returns the bounds of lines without its leading and trailing blank lines.
func blankTrimmed(lines []string) (lo, hi int) {
	lo, hi = 0, len(lines)
	for lo < hi && isBlank(lines[lo]) {
		lo++
	}
	for hi > lo && isBlank(lines[hi-1]) {
		hi--
	}
	return lo, hi
}

func countNonBlank(lines []string) int {
	n := 0
	for _, l := range lines {
		if !isBlank(l) {
			n++
		}
	}
	return n
}

// borrowsElsewhere reports whether an old middle line that is not in the anchored block is
// a real line elsewhere in the file: old_text then mixes two places (the signature of one
// function with the body of its twin), and editing either would be a guess.
func (fl *fileLines) borrowsElsewhere(mid []string, from, to int) bool {
	inBlock := map[string]bool{}
	for _, l := range fl.lines[from : to+1] {
		inBlock[normQuotes(l)] = true
	}
	var missing []string
	for _, l := range mid {
		if n := normQuotes(l); len(n) >= 8 && !inBlock[n] {
			missing = append(missing, n)
		}
	}
	if len(missing) == 0 {
		return false
	}
	for x, l := range fl.lines {
		if x >= from && x <= to {
			continue
		}
		n := normQuotes(l)
		for _, m := range missing {
			if n == m {
				return true
			}
		}
	}
	return false
}

func joinNonBlank(ls []string) string {
	var parts []string
	for _, l := range ls {
		if !isBlank(l) {
			parts = append(parts, normQuotes(l))
		}
	}
	return strings.Join(parts, "\n")
}

// similarity is 1 - editDistance/longerLength over runes; long texts are compared by lines.
func similarity(a, b string) float64 {
	if a == b {
		return 1
	}
	ra, rb := []rune(a), []rune(b)
	if len(ra)*len(rb) > 1<<21 { // bound the quadratic work a huge old_text could cause
		return lineSimilarity(strings.Split(a, "\n"), strings.Split(b, "\n"))
	}
	n := max(len(ra), len(rb))
	return 1 - float64(levenshtein(ra, rb))/float64(n)
}

func levenshtein(a, b []rune) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c = 1 + min(prev[j-1], prev[j], cur[j-1])
			} else {
				c = min(c, 1+prev[j], 1+cur[j-1])
			}
			cur[j] = c
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// lineSimilarity is the share of lines in the longest common subsequence.
func lineSimilarity(a, b []string) float64 {
	n := max(len(a), len(b))
	if n == 0 {
		return 1
	}
	return float64(lcsLen(a, b)) / float64(n)
}

func lcsLen(a, b []string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			switch {
			case a[i-1] == b[j-1]:
				cur[j] = prev[j-1] + 1
			default:
				cur[j] = max(prev[j], cur[j-1])
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// indentCols is a line's indentation width in columns, tabs advancing to the next stop.
func indentCols(s string, tab int) int {
	c := 0
	for _, r := range s {
		switch r {
		case ' ':
			c++
		case '\t':
			c += tab - c%tab
		default:
			return c
		}
	}
	return c
}

// reindent shifts new_text's lines by the indentation difference between the matched file
// lines and old_text, and writes indentation in the file's style (tabs or spaces). The first
// line has its own shift when old_text's first line was indented differently from the rest
// (a partial first line copied without its indentation).
func (fl *fileLines) reindent(b block, old, newLines []string) []string {
	tab := max(b.tab, 1)
	s := indentShifts(fl.lines, b, old, tab)
	// A uniform factor instead of a shift: two-space old_text for a tab-indented file.
	s.up, s.down = fl.indentRatio(b, old, tab, s.mixed)
	if oldFirst := firstNonBlank(old); oldFirst >= 0 && s.hasFirst {
		s.oldFirstCols = indentCols(old[oldFirst], tab)
	}
	useTabs := fl.tabStyle(b)
	out := make([]string, len(newLines))
	firstDone := false
	for k, l := range newLines {
		if isBlank(l) {
			out[k] = ""
			continue
		}
		cols := s.cols(indentCols(l, tab), !firstDone)
		firstDone = true
		out[k] = renderIndent(max(cols, 0), tab, useTabs) + strings.TrimLeft(l, " \t")
	}
	return out
}

// indentShift is how reindent moves new_text's lines.
type indentShift struct {
	body         int  // the most common shift of old_text's lines after the first
	first        int  // the shift of old_text's first non-blank line, if hasFirst
	hasFirst     bool // old_text's first non-blank line was matched to a non-blank file line
	mixed        bool // the body lines were shifted by more than one amount
	up, down     int  // a whole factor (file = old*up or old = file*down) replacing the shift
	oldFirstCols int  // indentation of old_text's first non-blank line, when hasFirst
}

// cols returns the new indentation of a line indented c columns in new_text. The first
// non-blank line takes the first line's own shift if it is indented like old_text's first.
func (s indentShift) cols(c int, isFirst bool) int {
	if isFirst && s.hasFirst && c == s.oldFirstCols {
		return c + s.first
	}
	if s.up > 1 || s.down > 1 {
		return c * max(s.up, 1) / max(s.down, 1)
	}
	return c + s.body
}

// indentShifts measures, per matched non-blank pair, how far the file line is indented
// from its old_text line: the first line apart, the rest by majority (ties to the earliest).
func indentShifts(lines []string, b block, old []string, tab int) indentShift {
	var s indentShift
	counts := map[int]int{}
	order := []int{}
	oldFirst := firstNonBlank(old)
	for _, p := range b.pairs {
		f, o := lines[p[0]], old[p[1]]
		if isBlank(f) || isBlank(o) {
			continue
		}
		d := indentCols(f, tab) - indentCols(o, tab)
		if p[1] == oldFirst {
			s.first, s.hasFirst = d, true
			continue
		}
		if counts[d] == 0 {
			order = append(order, d)
		}
		counts[d]++
	}
	s.mixed = len(order) > 1
	switch {
	case len(order) > 0:
		s.body = order[0]
		for _, d := range order {
			if counts[d] > counts[s.body] {
				s.body = d
			}
		}
	case s.hasFirst:
		s.body = s.first
	}
	return s
}

// indentRatio finds a whole factor between the file's and old_text's indentation of the
// block's lines (file = old*up, or old = file*down), when the shifts are not uniform.
func (fl *fileLines) indentRatio(b block, old []string, tab int, mixed bool) (up, down int) {
	if !mixed {
		return 0, 0
	}
	up, down = -1, -1
	first := firstNonBlank(old)
	for _, p := range b.pairs {
		f, o := fl.lines[p[0]], old[p[1]]
		if isBlank(f) || isBlank(o) || p[1] == first {
			continue
		}
		fc, oc := indentCols(f, tab), indentCols(o, tab)
		switch {
		case fc == 0 && oc == 0:
			continue
		case fc == 0 || oc == 0:
			return 0, 0
		}
		up, down = keepFactor(up, fc, oc), keepFactor(down, oc, fc)
	}
	return max(up, 0), max(down, 0)
}

// keepFactor returns a/b if it is whole and agrees with the factor so far (-1: none yet),
// else 0 (no common factor).
func keepFactor(cur, a, b int) int {
	if a%b == 0 && (cur == -1 || cur == a/b) {
		return a / b
	}
	return 0
}

func firstNonBlank(ls []string) int {
	for i, l := range ls {
		if !isBlank(l) {
			return i
		}
	}
	return -1
}

// tabStyle reports whether the file indents with tabs: the matched block's first indented
// line decides, else the file's.
func (fl *fileLines) tabStyle(b block) bool {
	for _, ls := range [][]string{fl.lines[b.from:b.to], fl.lines} {
		for _, l := range ls {
			if len(l) > 0 && (l[0] == '\t' || l[0] == ' ') && !isBlank(l) {
				return l[0] == '\t'
			}
		}
	}
	return false
}

func renderIndent(cols, tab int, tabs bool) string {
	if !tabs {
		return strings.Repeat(" ", cols)
	}
	return strings.Repeat("\t", cols/tab) + strings.Repeat(" ", cols%tab)
}

// unescape undoes one level of string escaping (\n, \t, \", \', \\) in text a model escaped
// twice. It only applies when the text looks escaped: literal \n with no real newline, or \".
func unescape(s string) (string, bool) {
	looksEscaped := (strings.Contains(s, `\n`) && !strings.Contains(s, "\n")) || strings.Contains(s, `\"`)
	if !looksEscaped {
		return s, false
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
		case '"', '\'', '\\':
			b.WriteByte(s[i+1])
		default:
			b.WriteByte(s[i])
			continue
		}
		i++
	}
	out := b.String()
	return out, out != s
}

var quoteReplacer = strings.NewReplacer("\u201c", `"`, "\u201d", `"`, "\u201e", `"`, "\u201f", `"`, "\u2033", `"`,
	"\u2018", "'", "\u2019", "'", "\u201a", "'", "\u201b", "'", "\u2032", "'")

func plainQuotes(s string) string { return quoteReplacer.Replace(s) }

func hasTypographic(s string) bool { return plainQuotes(s) != s }

// quotesLike makes new_text's typographic quotes plain when old_text had them but the file
// does not: the model's copy turned the file's quotes typographic, and its new text with it.
func (fl *fileLines) quotesLike(n, o oldText) oldText {
	if hasTypographic(strings.Join(o.lines, "\n")) && !hasTypographic(fl.content) {
		return oldText{lines: mapLines(n.lines, plainQuotes), trail: n.trail, empty: n.empty}
	}
	return n
}
