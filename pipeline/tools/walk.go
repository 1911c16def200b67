package tools

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// walkFiles calls fn for every non-directory entry below a model-given directory (or for the
// file itself), skipping .git in any letter case and common caches. Symlinks are reported,
// not followed, so a symlinked directory (or a loop of them) is never entered. The walk stops
// when ctx is done; fn may return fs.SkipAll to stop early.
func (w *Workspace) walkFiles(ctx context.Context, dir string, fn func(rel string, d fs.DirEntry) error) error {
	if dir == "" {
		dir = "."
	}
	t, err := w.resolve(dir)
	if err != nil {
		return err
	}
	if !t.exists() {
		return fmt.Errorf("%s does not exist (list_files on the root shows the layout)", dir)
	}
	err = filepath.WalkDir(t.abs, func(p string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		switch {
		case err != nil:
			return nil // unreadable entry: leave it out
		case d.IsDir() && p != t.abs && skipDir(d.Name()):
			return filepath.SkipDir
		case d.IsDir():
			return nil
		case isGitName(d.Name()):
			return nil // a submodule's .git file
		}
		return fn(w.rel(p), d)
	})
	if errors.Is(err, fs.SkipAll) {
		return nil
	}
	return err
}

// shownName is rel as list_files shows it: as it is, or, when it holds a control
// character (a newline) or bytes that are not UTF-8, quoted and marked. A repository's file
// name shown raw could read as several entries of the listing, none of which exists,
// and the tools can open neither kind of name.
func shownName(rel string) string {
	if !utf8.ValidString(rel) || strings.ContainsFunc(rel, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return strconv.Quote(rel) + " (a name the tools cannot open)"
	}
	return rel
}

func (w *Workspace) rel(abs string) string {
	r, err := filepath.Rel(w.root, abs)
	if err != nil {
		return abs
	}
	return filepath.ToSlash(r)
}

func skipDir(name string) bool {
	if isGitName(name) {
		return true
	}
	switch name {
	case "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", "node_modules", ".venv", "venv", ".tox":
		return true
	}
	return false
}

// ListFiles lists files below a directory, skipping .git and common caches. Symlinks are
// listed with their target; entries that are not regular files say what they are.
func (w *Workspace) ListFiles(ctx context.Context, dir string) (string, error) {
	var out []string
	full := false
	err := w.walkFiles(ctx, dir, func(rel string, d fs.DirEntry) error {
		if len(out) >= MaxListEntries {
			full = true
			return fs.SkipAll
		}
		name := shownName(rel)
		switch m := d.Type(); {
		case m&fs.ModeSymlink != 0:
			out = append(out, name+" (symlink)")
		case !m.IsRegular():
			out = append(out, name+" ("+kindOf(m)+")")
		default:
			out = append(out, name)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	sort.Strings(out)
	res := strings.Join(out, "\n")
	if full {
		res += fmt.Sprintf("\n(listing stopped at %d files; list a subdirectory)", MaxListEntries)
	}
	if res == "" {
		res = "(no files)"
	}
	return capResult(res), nil
}

// Grep searches the regular text files below dir for a regular expression, "path:line: text"
// per match. Binary files are left out; files over MaxGrepFileBytes are named as skipped.
func (w *Workspace) Grep(ctx context.Context, pattern, dir string) (string, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return "", fmt.Errorf("pattern %q is not a valid Go (RE2) regular expression: %w", pattern, err)
	}
	g := &grepRun{w: w, re: re}
	if err := w.walkFiles(ctx, dir, g.file); err != nil {
		return "", err
	}
	return g.result(), nil
}

// grepRun collects one Grep's matches and the files it left out.
type grepRun struct {
	w        *Workspace
	re       *regexp.Regexp
	out, big []string
	full     bool  // MaxGrepMatches reached
	scanned  int64 // bytes of the files searched so far
	spent    bool  // MaxGrepScanBytes reached: the walk stopped
}

// file searches one walked file. Only regular files are opened, through resolve, so a
// symlink, FIFO or device never is; binaries and unreadable files are skipped quietly.
func (g *grepRun) file(rel string, d fs.DirEntry) error {
	if !d.Type().IsRegular() {
		return nil // symlinks, FIFOs, sockets, devices: never opened
	}
	t, err := g.w.resolve(rel)
	if err != nil || !t.exists() {
		return nil
	}
	if t.info.Size() > MaxGrepFileBytes {
		g.big = append(g.big, rel)
		return nil
	}
	if g.scanned+t.info.Size() > MaxGrepScanBytes {
		g.spent = true
		return fs.SkipAll
	}
	g.scanned += t.info.Size()
	data, _, err := g.w.readWhole(t, MaxGrepFileBytes, "grep")
	if err != nil || strings.IndexByte(string(data[:min(len(data), sniffBytes)]), 0) >= 0 {
		return nil
	}
	return g.lines(rel, string(data))
}

// lines adds the matching lines of one file, stopping the walk at MaxGrepMatches.
func (g *grepRun) lines(rel, data string) error {
	for i, line := range strings.Split(data, "\n") {
		if !g.re.MatchString(line) {
			continue
		}
		if len(g.out) >= MaxGrepMatches {
			g.full = true
			return fs.SkipAll
		}
		line = strings.TrimSuffix(line, "\r")
		if len(line) > 300 {
			line = string(validUTF8Prefix([]byte(line), 300)) + "..."
		}
		g.out = append(g.out, fmt.Sprintf("%s:%d: %s", rel, i+1, line))
	}
	return nil
}

// result is the tool result: the matches, then what was left out.
func (g *grepRun) result() string {
	res := strings.Join(g.out, "\n")
	if len(g.out) == 0 {
		res = "(no matches)"
	}
	if g.full {
		res += fmt.Sprintf("\n(stopped at %d matches; narrow the pattern or path)", MaxGrepMatches)
	}
	if g.spent {
		res += fmt.Sprintf("\n(stopped after searching %s of files, as much as one grep reads; files after these were not searched: narrow the path)", humanBytes(MaxGrepScanBytes))
	}
	if len(g.big) > 0 {
		res += fmt.Sprintf("\n(not searched, larger than %s: %s)", humanBytes(MaxGrepFileBytes), strings.Join(clipList(g.big, 10), ", "))
	}
	return capResult(res)
}

func clipList(xs []string, n int) []string {
	if len(xs) <= n {
		return xs
	}
	return append(xs[:n:n], fmt.Sprintf("and %d more", len(xs)-n))
}

func capResult(s string) string {
	if len(s) <= MaxResultBytes {
		return s
	}
	return string(validUTF8Prefix([]byte(s), MaxResultBytes)) + fmt.Sprintf("\n(result cut at %s)", humanBytes(MaxResultBytes))
}
