package scriptedmodel

import (
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
)

// ErrInvalidPatch wraps every error ParsePatch returns, so callers can tell a bad
// scenario patch from a server fault.
var ErrInvalidPatch = errors.New("invalid patch")

// FileEdit is one file's part of a unified diff.
type FileEdit struct {
	// Path is the file's path relative to the repository root, without the a/ or b/ prefix.
	Path string
	// New is set for a file created by the patch (old side /dev/null).
	New bool
	// Deleted is set for a file removed by the patch (new side /dev/null).
	Deleted bool
	// Hunks in patch order.
	Hunks []Hunk
}

// Hunk is one @@ block. OldText is the context plus removed lines, NewText the context
// plus added lines, each line ending in "\n" unless the patch marks it
// "\ No newline at end of file": exactly what an edit_file call replaces.
type Hunk struct {
	OldStart, OldLines int
	NewStart, NewLines int
	OldText, NewText   string
}

// Content is the whole text of a new file: the concatenated new sides of its hunks.
func (f FileEdit) Content() string {
	var b strings.Builder
	for _, h := range f.Hunks {
		b.WriteString(h.NewText)
	}
	return b.String()
}

// ParsePatch parses a unified diff in git's format (a/ and b/ prefixes, new files from
// /dev/null, "\ No newline at end of file") or plain `diff -u` output. Text outside file
// sections (a commit message, a format-patch signature) is ignored, as git apply does.
// Renames, copies and binary patches are refused: the maker's tools cannot express them.
// Paths must be relative and stay inside the repository.
func ParsePatch(patch string) ([]FileEdit, error) {
	p := &patchParser{lines: splitLines(patch)}
	edits, err := p.parse()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidPatch, err)
	}
	if len(edits) == 0 {
		return nil, fmt.Errorf("%w: no file changes found (expected \"--- a/path\" and \"+++ b/path\" lines)", ErrInvalidPatch)
	}
	return edits, nil
}

type patchParser struct {
	lines []string
	i     int
}

// splitLines splits on "\n" and drops one trailing "\r" per line, so CRLF patches parse.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

func (p *patchParser) parse() ([]FileEdit, error) {
	var edits []FileEdit
	seen := map[string]bool{}
	for p.i < len(p.lines) {
		line := p.lines[p.i]
		var (
			fe  FileEdit
			err error
		)
		switch {
		case strings.HasPrefix(line, "diff --git "):
			fe, err = p.gitFile()
		case strings.HasPrefix(line, "--- ") && p.i+1 < len(p.lines) && strings.HasPrefix(p.lines[p.i+1], "+++ "):
			fe, err = p.plainFile()
		case strings.HasPrefix(line, "@@ "):
			return nil, fmt.Errorf("line %d: hunk %q outside a file section (missing --- / +++ lines)", p.i+1, line)
		default:
			p.i++
			continue
		}
		if err != nil {
			return nil, err
		}
		if seen[fe.Path] {
			return nil, fmt.Errorf("file %q appears twice in the patch", fe.Path)
		}
		seen[fe.Path] = true
		edits = append(edits, fe)
	}
	return edits, nil
}

// gitFile parses from a "diff --git" line through its extended headers and hunks.
func (p *patchParser) gitFile() (FileEdit, error) {
	start := p.i
	header := p.lines[p.i]
	p.i++
	var fe FileEdit
	for p.i < len(p.lines) {
		line := p.lines[p.i]
		switch {
		case strings.HasPrefix(line, "new file mode "):
			fe.New = true
		case strings.HasPrefix(line, "deleted file mode "):
			fe.Deleted = true
		case strings.HasPrefix(line, "rename from "), strings.HasPrefix(line, "rename to "),
			strings.HasPrefix(line, "copy from "), strings.HasPrefix(line, "copy to "):
			return fe, fmt.Errorf("line %d: renames and copies are not supported (%q)", p.i+1, line)
		case strings.HasPrefix(line, "Binary files "), line == "GIT binary patch":
			return fe, fmt.Errorf("line %d: binary patches are not supported", p.i+1)
		case strings.HasPrefix(line, "index "), strings.HasPrefix(line, "old mode "),
			strings.HasPrefix(line, "new mode "), strings.HasPrefix(line, "similarity index "),
			strings.HasPrefix(line, "dissimilarity index "):
		case strings.HasPrefix(line, "--- "):
			if p.i+1 >= len(p.lines) || !strings.HasPrefix(p.lines[p.i+1], "+++ ") {
				return fe, fmt.Errorf("line %d: %q is not followed by a +++ line", p.i+1, line)
			}
			return p.plainFileInto(fe)
		default:
			// A git section without ---/+++ lines: an empty new file, a deleted empty file
			// or a mode change. Only the first two are expressible.
			return p.headerOnly(fe, header, start)
		}
		p.i++
	}
	return p.headerOnly(fe, header, start)
}

func (p *patchParser) headerOnly(fe FileEdit, header string, start int) (FileEdit, error) {
	if !fe.New && !fe.Deleted {
		return fe, fmt.Errorf("line %d: %q has no content change (mode-only changes are not supported)", start+1, header)
	}
	rest := strings.TrimPrefix(header, "diff --git ")
	// "a/X b/X": with no hunks the only reliable split is the symmetric one.
	if len(rest)%2 == 1 {
		half := (len(rest) - 1) / 2
		a, b := rest[:half], rest[half+1:]
		if strings.HasPrefix(a, "a/") && strings.HasPrefix(b, "b/") && a[2:] == b[2:] {
			clean, err := cleanPath(b[2:])
			if err != nil {
				return fe, fmt.Errorf("line %d: %w", start+1, err)
			}
			fe.Path = clean
			return fe, nil
		}
	}
	return fe, fmt.Errorf("line %d: cannot read the file name from %q", start+1, header)
}

func (p *patchParser) plainFile() (FileEdit, error) { return p.plainFileInto(FileEdit{}) }

// plainFileInto parses the ---/+++ pair at p.i and the hunks that follow.
func (p *patchParser) plainFileInto(fe FileEdit) (FileEdit, error) {
	oldName, err := headerPath(p.lines[p.i], "--- ")
	if err != nil {
		return fe, fmt.Errorf("line %d: %w", p.i+1, err)
	}
	newName, err := headerPath(p.lines[p.i+1], "+++ ")
	if err != nil {
		return fe, fmt.Errorf("line %d: %w", p.i+2, err)
	}
	p.i += 2
	switch {
	case oldName == "/dev/null" && newName == "/dev/null":
		return fe, fmt.Errorf("line %d: both sides are /dev/null", p.i)
	case oldName == "/dev/null":
		fe.New = true
	case newName == "/dev/null":
		fe.Deleted = true
	}
	name := newName
	if fe.Deleted {
		name = oldName
	}
	if !fe.New && !fe.Deleted && stripPrefix(oldName) != stripPrefix(newName) {
		return fe, fmt.Errorf("line %d: old name %q and new name %q differ; renames are not supported", p.i-1, oldName, newName)
	}
	if fe.Path, err = cleanPath(stripPrefix(name)); err != nil {
		return fe, fmt.Errorf("line %d: %w", p.i, err)
	}
	for p.i < len(p.lines) && strings.HasPrefix(p.lines[p.i], "@@ ") {
		h, err := p.hunk()
		if err != nil {
			return fe, fmt.Errorf("%s: %w", fe.Path, err)
		}
		fe.Hunks = append(fe.Hunks, h)
	}
	if len(fe.Hunks) == 0 && !fe.New && !fe.Deleted {
		return fe, fmt.Errorf("%s: no hunks after the +++ line", fe.Path)
	}
	if fe.New && (len(fe.Hunks) > 1 || len(fe.Hunks) == 1 && fe.Hunks[0].OldLines != 0) {
		return fe, fmt.Errorf("%s: a new file must have a single hunk starting at -0,0", fe.Path)
	}
	return fe, nil
}

// hunk parses one "@@ -a,b +c,d @@" block; the declared counts decide where it ends.
func (p *patchParser) hunk() (Hunk, error) {
	var h Hunk
	header := p.lines[p.i]
	if err := parseHunkHeader(header, &h); err != nil {
		return h, fmt.Errorf("line %d: %w", p.i+1, err)
	}
	p.i++
	var oldB, newB strings.Builder
	oldN, newN := 0, 0
	lastSide, lastText := byte(0), ""
	oldEnded, newEnded := false, false // a side ended by "\ No newline at end of file"
	for oldN < h.OldLines || newN < h.NewLines {
		if p.i >= len(p.lines) {
			return h, fmt.Errorf("line %d: hunk %q ends early: found %d of %d old and %d of %d new lines",
				p.i, header, oldN, h.OldLines, newN, h.NewLines)
		}
		line := p.lines[p.i]
		kind, text := byte(' '), ""
		if line != "" { // an empty line is an empty context line whose space was stripped
			kind, text = line[0], line[1:]
		}
		switch kind {
		case ' ':
			oldB.WriteString(text + "\n")
			newB.WriteString(text + "\n")
			oldN++
			newN++
		case '-':
			oldB.WriteString(text + "\n")
			oldN++
		case '+':
			newB.WriteString(text + "\n")
			newN++
		case '\\':
			if err := noNewline(&oldB, &newB, lastSide, lastText); err != nil {
				return h, fmt.Errorf("line %d: %w", p.i+1, err)
			}
			oldEnded = oldEnded || lastSide != '+'
			newEnded = newEnded || lastSide != '-'
			lastSide = 0
			p.i++
			continue
		default:
			return h, fmt.Errorf("line %d: unexpected %q inside hunk %q (want a line starting with ' ', '-' or '+')", p.i+1, line, header)
		}
		if (kind != '+' && oldEnded) || (kind != '-' && newEnded) {
			return h, fmt.Errorf("line %d: a line follows \"\\ No newline at end of file\" on the same side", p.i+1)
		}
		if oldN > h.OldLines || newN > h.NewLines {
			return h, fmt.Errorf("line %d: hunk %q has more lines than its header declares", p.i+1, header)
		}
		lastSide, lastText = kind, text
		p.i++
	}
	if p.i < len(p.lines) && strings.HasPrefix(p.lines[p.i], `\`) {
		if err := noNewline(&oldB, &newB, lastSide, lastText); err != nil {
			return h, fmt.Errorf("line %d: %w", p.i+1, err)
		}
		p.i++
	}
	h.OldText, h.NewText = oldB.String(), newB.String()
	return h, nil
}

// noNewline applies "\ No newline at end of file" to the side(s) of the line before it.
func noNewline(oldB, newB *strings.Builder, side byte, text string) error {
	if side != 0 && text == "" {
		// An empty last line without a newline is no line at all: git never writes this.
		return errors.New(`"\ No newline at end of file" after an empty line`)
	}
	trim := func(b *strings.Builder) {
		s := strings.TrimSuffix(b.String(), "\n")
		b.Reset()
		b.WriteString(s)
	}
	switch side {
	case ' ':
		trim(oldB)
		trim(newB)
	case '-':
		trim(oldB)
	case '+':
		trim(newB)
	default:
		return errors.New(`"\ No newline at end of file" with no line before it`)
	}
	return nil
}

func parseHunkHeader(line string, h *Hunk) error {
	rest, ok := strings.CutPrefix(line, "@@ -")
	if !ok {
		return fmt.Errorf("bad hunk header %q", line)
	}
	ranges, _, ok := strings.Cut(rest, " @@")
	if !ok {
		return fmt.Errorf("bad hunk header %q: missing closing @@", line)
	}
	oldR, newR, ok := strings.Cut(ranges, " +")
	if !ok {
		return fmt.Errorf("bad hunk header %q: missing +range", line)
	}
	var err error
	if h.OldStart, h.OldLines, err = parseRange(oldR); err != nil {
		return fmt.Errorf("bad hunk header %q: %w", line, err)
	}
	if h.NewStart, h.NewLines, err = parseRange(newR); err != nil {
		return fmt.Errorf("bad hunk header %q: %w", line, err)
	}
	if h.OldLines == 0 && h.NewLines == 0 {
		return fmt.Errorf("bad hunk header %q: empty hunk", line)
	}
	return nil
}

// maxHunkLines bounds declared counts so a hostile header cannot make the parser promise
// billions of lines; real hunks are tiny.
const maxHunkLines = 1 << 20

func parseRange(s string) (start, n int, err error) {
	a, b, hasCount := strings.Cut(s, ",")
	if start, err = strconv.Atoi(a); err != nil || start < 0 {
		return 0, 0, fmt.Errorf("range start %q is not a line number", a)
	}
	n = 1
	if hasCount {
		if n, err = strconv.Atoi(b); err != nil || n < 0 || n > maxHunkLines {
			return 0, 0, fmt.Errorf("range count %q is not a line count", b)
		}
	}
	return start, n, nil
}

// headerPath reads the name from a "--- " or "+++ " line: quoted C-style names are
// unquoted, and a tab-separated timestamp (diff -u) is dropped.
func headerPath(line, prefix string) (string, error) {
	name := strings.TrimPrefix(line, prefix)
	if strings.HasPrefix(name, `"`) {
		end := strings.LastIndex(name, `"`)
		if end <= 0 {
			return "", fmt.Errorf("unterminated quoted file name in %q", line)
		}
		unq, err := strconv.Unquote(name[:end+1])
		if err != nil {
			return "", fmt.Errorf("bad quoted file name in %q: %w", line, err)
		}
		return unq, nil
	}
	if before, _, ok := strings.Cut(name, "\t"); ok {
		name = before
	}
	name = strings.TrimRight(name, " ")
	if name == "" {
		return "", fmt.Errorf("missing file name in %q", line)
	}
	return name, nil
}

func stripPrefix(name string) string {
	if strings.HasPrefix(name, "a/") || strings.HasPrefix(name, "b/") {
		return name[2:]
	}
	return name
}

// cleanPath refuses names that could escape the worktree the patch is meant for.
func cleanPath(name string) (string, error) {
	if name == "" || strings.HasPrefix(name, "/") || strings.ContainsRune(name, 0) || strings.Contains(name, `\`) {
		return "", fmt.Errorf("file name %q must be a relative slash-separated path", name)
	}
	clean := path.Clean(name)
	if clean == "." || clean == ".." || strings.HasPrefix(clean, "../") || strings.HasPrefix(clean, ".git/") || clean == ".git" {
		return "", fmt.Errorf("file name %q leaves the repository or touches .git", name)
	}
	return clean, nil
}
