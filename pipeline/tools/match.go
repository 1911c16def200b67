package tools

import (
	"fmt"
	"sort"
	"strings"
)

// Rung names one step of edit_file's matching ladder. The ladder is tried in order and the
// first rung with a unique match wins; a rung that finds several matches refuses (unless
// replace_all), since guessing between them would edit the wrong place.
type Rung string

// The rungs, most exact first.
const (
	RungExact       Rung = "exact"          // old_text occurs verbatim
	RungLineEndings Rung = "line_endings"   // CRLF vs LF ignored
	RungTrimmed     Rung = "trailing_space" // trailing whitespace of each line ignored
	RungIndent      Rung = "indent_shift"   // all lines indented by the same amount more or less (tabs or spaces)
	RungWhitespace  Rung = "whitespace"     // runs of whitespace collapsed, indentation ignored
	RungEscapes     Rung = "escapes"        // \n \t \" escapes undone, typographic quotes made plain
	RungBlankLines  Rung = "blank_lines"    // blank lines ignored (outer ones trimmed, inner ones missing or extra)
	RungAnchors     Rung = "anchors"        // first and last lines match, the middle is similar (3+ lines)
)

// Rungs lists the ladder in the order it is tried.
var Rungs = []Rung{RungExact, RungLineEndings, RungTrimmed, RungIndent, RungWhitespace, RungEscapes, RungBlankLines, RungAnchors}

// anchorSimilarity is how alike the middle of an anchored block must be (0..1, by edit
// distance). High enough that a block from a different function does not pass.
const anchorSimilarity = 0.8

// region is a part of the file to replace: bytes [start, end) of the original content.
type region struct {
	start, end int
	text       string
}

// edit is a successful match: the rung and the regions, in file order, not overlapping.
type edit struct {
	rung    Rung
	regions []region
}

// apply returns content with the regions replaced.
func (e edit) apply(content string) string {
	var b strings.Builder
	at := 0
	for _, r := range e.regions {
		b.WriteString(content[at:r.start])
		b.WriteString(r.text)
		at = r.end
	}
	b.WriteString(content[at:])
	return b.String()
}

// missError is a failed match; the text is for the model.
type missError struct{ msg string }

func (e *missError) Error() string { return e.msg }

// matchEdit finds where old applies in content and what to write there. new is converted to
// the file's line endings, and on the re-indenting rungs to its indentation. The rungs are
// tried from the strictest down, so the first that matches is the least guessing.
func matchEdit(content, old, new string, replaceAll bool, path string) (edit, error) {
	if old == "" {
		return edit{}, &missError{"old_text is empty: to create a file use write_file; to insert, include the lines next to the insertion point in old_text"}
	}
	if old == new {
		return edit{}, &missError{"old_text and new_text are the same, so there is nothing to change"}
	}
	m := editMatch{fl: splitFile(content), path: path, replaceAll: replaceAll}
	if e, ok, err := m.verbatim(content, old, m.fl.withEndings(new)); ok || err != nil {
		return e, err
	}
	o := splitOld(lf(old))
	n := splitOld(lf(new))
	if e, ok, err := m.lineWise(o, n); ok || err != nil {
		return e, err
	}
	if e, ok, err := m.escaped(old, new, o, n); ok || err != nil {
		return e, err
	}
	// Rung 7: blank lines ignored.
	if e, ok, err := m.resolve(RungBlankLines, m.fl.sparseBlocks(o.lines), o, trimBlankLike(n, o)); ok || err != nil {
		return e, err
	}
	// Rung 8: anchors.
	if e, ok, err := m.resolve(RungAnchors, m.fl.anchorBlocks(o.lines), o, trimBlankLike(n, o)); ok || err != nil {
		return e, err
	}
	return edit{}, &missError{m.fl.describeMiss(path, o.lines)}
}

// editMatch is one edit's search through the rungs: the file, and how the edit was asked.
type editMatch struct {
	fl         *fileLines
	path       string
	replaceAll bool
}

// resolve tries one line-wise rung's candidate blocks.
func (m editMatch) resolve(rung Rung, blocks []block, o, n oldText) (edit, bool, error) {
	return m.fl.resolveBlocks(rung, m.path, m.replaceAll, blocks, o, n)
}

// verbatim is rungs 1 and 2: old as written, then with line endings normalised.
func (m editMatch) verbatim(content, old, newText string) (edit, bool, error) {
	fl := m.fl
	if idx := allIndex(content, old); len(idx) > 0 {
		e, err := fl.pick(RungExact, m.path, m.replaceAll, idx, func(i int) region {
			return region{idx[i], idx[i] + len(old), newText}
		})
		return e, true, err
	}
	normContent, normOld := lf(content), lf(old)
	if normOld == old && normContent == content {
		return edit{}, false, nil
	}
	idx := allIndex(normContent, normOld)
	if len(idx) == 0 {
		return edit{}, false, nil
	}
	e, err := fl.pick(RungLineEndings, m.path, m.replaceAll, idx, func(i int) region {
		s, e := fl.rawOffset(idx[i]), fl.rawOffset(idx[i]+len(normOld))
		return region{s, e, newText}
	})
	return e, true, err
}

// lineWise is rungs 3 to 5: line by line with trailing whitespace trimmed, then with
// the indentation shifted, then with runs of whitespace collapsed.
func (m editMatch) lineWise(o, n oldText) (edit, bool, error) {
	fl := m.fl
	ladder := []struct {
		rung Rung
		try  func() []block
	}{
		{RungTrimmed, func() []block { return fl.lineBlocks(o.lines, trimRight) }},
		{RungIndent, func() []block { return fl.indentBlocks(o.lines) }},
		{RungWhitespace, func() []block { return fl.lineBlocks(o.lines, collapse) }},
	}
	for _, step := range ladder {
		if e, ok, err := m.resolve(step.rung, step.try(), o, n); ok || err != nil {
			return e, ok, err
		}
	}
	return edit{}, false, nil
}

// escaped is rung 6: escapes undone (a model that JSON-escaped its text twice), then
// typographic quotes made plain on both sides.
func (m editMatch) escaped(old, new string, o, n oldText) (edit, bool, error) {
	fl := m.fl
	if u, ok := unescape(lf(old)); ok {
		uo, un := splitOld(u), n
		if v, ok := unescape(lf(new)); ok {
			un = splitOld(v)
		}
		if e, ok, err := m.resolve(RungEscapes, fl.lineBlocks(uo.lines, normQuotes), uo, fl.quotesLike(un, uo)); ok || err != nil {
			return e, ok, err
		}
	}
	return m.resolve(RungEscapes, fl.lineBlocks(o.lines, normQuotes), o, fl.quotesLike(n, o))
}

// pick turns n candidate matches into an edit, refusing ambiguity unless replaceAll.
func (fl *fileLines) pick(rung Rung, path string, replaceAll bool, idx []int, at func(i int) region) (edit, error) {
	if len(idx) > 1 && !replaceAll {
		lines := make([]int, len(idx))
		for i := range idx {
			lines[i] = fl.lineOf(at(i).start)
		}
		return edit{}, ambiguous(rung, path, lines)
	}
	e := edit{rung: rung}
	for i := range idx {
		e.regions = append(e.regions, at(i))
	}
	return e, nil
}

func ambiguous(rung Rung, path string, lines []int) error {
	how := ""
	if rung != RungExact {
		how = " (" + rungHow(rung) + ")"
	}
	return &missError{fmt.Sprintf("old_text matches %d places in %s%s, at lines %s; nothing was changed. Include more surrounding lines in old_text so it matches one place, or set \"replace_all\": true to change every one",
		len(lines), path, how, joinInts(lines, 10))}
}

// rungHow says in words what a rung tolerated, for results and errors.
func rungHow(r Rung) string {
	switch r {
	case RungExact:
		return "exact match"
	case RungLineEndings:
		return "matched after ignoring line endings (CRLF/LF)"
	case RungTrimmed:
		return "matched after ignoring trailing whitespace"
	case RungIndent:
		return "matched after shifting the indentation; new_text was re-indented the same way"
	case RungWhitespace:
		return "matched after ignoring whitespace differences; new_text was re-indented to the file"
	case RungEscapes:
		return "matched after undoing escapes (\\n, \\t, \\\") and typographic quotes"
	case RungBlankLines:
		return "matched after ignoring blank lines"
	case RungAnchors:
		return "matched on the first and last lines, with a similar middle"
	}
	return string(r)
}

// block is a candidate line-block match: file lines [from, to) and, for re-indentation,
// pairs of (file line, old line) that correspond.
type block struct {
	from, to int
	pairs    [][2]int
	tab      int // tab width the indentation was compared with
}

// resolveBlocks turns line-block candidates into an edit. ok is false when there are none.
func (fl *fileLines) resolveBlocks(rung Rung, path string, replaceAll bool, blocks []block, o, n oldText) (edit, bool, error) {
	if len(blocks) == 0 {
		return edit{}, false, nil
	}
	blocks = nonOverlapping(blocks)
	if len(blocks) > 1 && !replaceAll {
		lines := make([]int, len(blocks))
		for i, b := range blocks {
			lines[i] = b.from + 1
		}
		return edit{}, true, ambiguous(rung, path, lines)
	}
	e := edit{rung: rung}
	for _, b := range blocks {
		newLines := n.lines
		if rung != RungTrimmed {
			newLines = fl.reindent(b, o.lines, n.lines)
		}
		// The region mirrors what an exact old_text would have covered: whole lines, and the
		// last line's newline if old_text ended with one; new_text is written the same way.
		start, end := fl.starts[b.from], fl.ends[b.to-1]
		if o.trail {
			end = fl.next[b.to-1]
		}
		text := strings.Join(newLines, fl.eol)
		if n.trail {
			text += fl.eol
		}
		if n.empty {
			text = ""
		}
		e.regions = append(e.regions, region{start, end, text})
	}
	return e, true, nil
}

// nonOverlapping keeps the first of overlapping blocks, in file order.
func nonOverlapping(bs []block) []block {
	sort.SliceStable(bs, func(i, j int) bool { return bs[i].from < bs[j].from })
	var out []block
	last := -1
	for _, b := range bs {
		if b.from >= last {
			out = append(out, b)
			last = b.to
		}
	}
	return out
}

// oldText is old_text or new_text split into lines (LF), trail telling whether it ended with
// a newline; empty is new_text "" (delete).
type oldText struct {
	lines []string
	trail bool
	empty bool
}

func splitOld(s string) oldText {
	if s == "" {
		return oldText{empty: true}
	}
	t := oldText{trail: strings.HasSuffix(s, "\n")}
	t.lines = strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	return t
}

// trimBlankLike drops as many outer blank lines from new as the blank-line rungs ignore in
// old, so that a model's extra blank line around the block is not added to the file.
func trimBlankLike(n, o oldText) oldText {
	lead, tail := 0, 0
	for lead < len(o.lines) && isBlank(o.lines[lead]) {
		lead++
	}
	for tail < len(o.lines)-lead && isBlank(o.lines[len(o.lines)-1-tail]) {
		tail++
	}
	lines := n.lines
	for lead > 0 && len(lines) > 0 && isBlank(lines[0]) {
		lines, lead = lines[1:], lead-1
	}
	for tail > 0 && len(lines) > 0 && isBlank(lines[len(lines)-1]) {
		lines, tail = lines[:len(lines)-1], tail-1
	}
	return oldText{lines: lines, trail: n.trail, empty: n.empty}
}

func allIndex(s, sub string) []int {
	var out []int
	for at := 0; at <= len(s)-len(sub); {
		i := strings.Index(s[at:], sub)
		if i < 0 {
			break
		}
		out = append(out, at+i)
		at += i + max(len(sub), 1)
	}
	return out
}

func lf(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }

func mapLines(ls []string, f func(string) string) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = f(l)
	}
	return out
}

func joinInts(xs []int, n int) string {
	parts := make([]string, 0, n+1)
	for i, x := range xs {
		if i == n {
			parts = append(parts, fmt.Sprintf("and %d more", len(xs)-n))
			break
		}
		parts = append(parts, fmt.Sprint(x))
	}
	return strings.Join(parts, ", ")
}
