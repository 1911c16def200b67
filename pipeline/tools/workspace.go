// Package tools implements the file tools the maker model uses inside one worktree. Every
// path is confined to the worktree: no absolute paths, no "..", no symlink that leads out.
package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Limits keep tool results small enough for a model's context.
const (
	MaxReadBytes   = 200 << 10 // per file
	MaxResultBytes = 60 << 10  // per tool result
	MaxListEntries = 2000
	MaxGrepMatches = 200
)

// Workspace is one attempt's view of a worktree. It remembers which files were read, since
// write_file may only overwrite a file the model has seen in this attempt.
type Workspace struct {
	root string

	mu   sync.Mutex
	read map[string]bool
}

// NewWorkspace confines tools to root, which must be an existing directory.
func NewWorkspace(root string) (*Workspace, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", root, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", root, err)
	}
	return &Workspace{root: real, read: map[string]bool{}}, nil
}

// Root is the worktree's real path.
func (w *Workspace) Root() string { return w.root }

// ErrOutside is returned for a path that would leave the worktree.
var ErrOutside = errors.New("path is outside the worktree")

// Resolve maps a model-given relative path to a real path inside the worktree. The path need
// not exist, but every existing prefix of it must stay inside after following symlinks.
func (w *Workspace) Resolve(rel string) (string, error) {
	if rel == "" {
		return "", errors.New("empty path")
	}
	if strings.ContainsRune(rel, 0) {
		return "", errors.New("path contains a NUL byte")
	}
	if filepath.IsAbs(rel) || strings.HasPrefix(rel, "~") {
		return "", fmt.Errorf("%q: %w: give a path relative to the repository root", rel, ErrOutside)
	}
	clean := filepath.Clean(filepath.FromSlash(rel))
	if clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%q: %w", rel, ErrOutside)
	}
	for _, part := range strings.Split(clean, string(filepath.Separator)) {
		if part == ".git" {
			return "", fmt.Errorf("%q: the .git directory is not editable", rel)
		}
	}
	full := filepath.Join(w.root, clean)
	// Follow symlinks on the longest existing prefix.
	existing := full
	var rest []string
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			break
		}
		rest = append([]string{filepath.Base(existing)}, rest...)
		existing = parent
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", fmt.Errorf("%q: %w", rel, err)
	}
	if real != w.root && !strings.HasPrefix(real, w.root+string(filepath.Separator)) {
		return "", fmt.Errorf("%q: %w (a symlink leads out)", rel, ErrOutside)
	}
	return filepath.Join(append([]string{real}, rest...)...), nil
}

func (w *Workspace) rel(abs string) string {
	r, err := filepath.Rel(w.root, abs)
	if err != nil {
		return abs
	}
	return filepath.ToSlash(r)
}

func (w *Workspace) markRead(abs string) {
	w.mu.Lock()
	w.read[abs] = true
	w.mu.Unlock()
}

func (w *Workspace) wasRead(abs string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.read[abs]
}

// ReadFiles returns each file's content under a header line; a missing file is reported in
// place and does not fail the others.
func (w *Workspace) ReadFiles(paths []string) (string, error) {
	if len(paths) == 0 {
		return "", errors.New("read_files needs at least one path")
	}
	var b strings.Builder
	for _, p := range paths {
		abs, err := w.Resolve(p)
		if err != nil {
			fmt.Fprintf(&b, "=== %s: error: %v\n", p, err)
			continue
		}
		data, err := os.ReadFile(abs)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			fmt.Fprintf(&b, "=== %s: error: no such file\n", p)
			continue
		case err != nil:
			fmt.Fprintf(&b, "=== %s: error: %v\n", p, err)
			continue
		}
		w.markRead(abs)
		truncated := ""
		if len(data) > MaxReadBytes {
			data = data[:MaxReadBytes]
			truncated = fmt.Sprintf(" (first %d bytes only)", MaxReadBytes)
		}
		fmt.Fprintf(&b, "=== %s (%d lines)%s\n%s", w.rel(abs), lineCount(data), truncated, data)
		if len(data) > 0 && data[len(data)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	return capResult(b.String()), nil
}

// walkFiles calls fn for every file below a model-given directory, skipping .git and common
// caches; fn may return fs.SkipAll to stop.
func (w *Workspace) walkFiles(dir string, fn func(path string, d fs.DirEntry) error) error {
	if dir == "" {
		dir = "."
	}
	abs, err := w.Resolve(dir)
	if err != nil {
		return err
	}
	return filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return nil
		case d.IsDir() && skipDir(d.Name()) && p != abs:
			return filepath.SkipDir
		case d.IsDir():
			return nil
		}
		return fn(p, d)
	})
}

// ListFiles lists files below a directory, skipping .git and common caches.
func (w *Workspace) ListFiles(dir string) (string, error) {
	var out []string
	err := w.walkFiles(dir, func(p string, _ fs.DirEntry) error {
		out = append(out, w.rel(p))
		if len(out) >= MaxListEntries {
			return fs.SkipAll
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	sort.Strings(out)
	res := strings.Join(out, "\n")
	if len(out) >= MaxListEntries {
		res += fmt.Sprintf("\n(listing stopped at %d files; list a subdirectory)", MaxListEntries)
	}
	if res == "" {
		res = "(no files)"
	}
	return capResult(res), nil
}

func skipDir(name string) bool {
	switch name {
	case ".git", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", "node_modules", ".venv", "venv", ".tox":
		return true
	}
	return false
}

// Grep searches files below dir for a regular expression, "path:line: text" per match.
func (w *Workspace) Grep(pattern, dir string) (string, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return "", fmt.Errorf("pattern %q: %w", pattern, err)
	}
	var out []string
	err = w.walkFiles(dir, func(p string, d fs.DirEntry) error {
		info, err := d.Info()
		if err != nil || info.Size() > MaxReadBytes || !info.Mode().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil || strings.IndexByte(string(data), 0) >= 0 {
			return nil
		}
		for i, line := range strings.Split(string(data), "\n") {
			if re.MatchString(line) {
				if len(line) > 300 {
					line = line[:300] + "..."
				}
				out = append(out, fmt.Sprintf("%s:%d: %s", w.rel(p), i+1, line))
				if len(out) >= MaxGrepMatches {
					return fs.SkipAll
				}
			}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if len(out) == 0 {
		return "(no matches)", nil
	}
	res := strings.Join(out, "\n")
	if len(out) >= MaxGrepMatches {
		res += fmt.Sprintf("\n(stopped at %d matches; narrow the pattern or path)", MaxGrepMatches)
	}
	return capResult(res), nil
}

// WriteFile creates a file, or overwrites one that was read in this attempt.
func (w *Workspace) WriteFile(path, content string) (string, error) {
	abs, err := w.Resolve(path)
	if err != nil {
		return "", err
	}
	info, err := os.Stat(abs)
	switch {
	case err == nil && info.IsDir():
		return "", fmt.Errorf("%s is a directory", path)
	case err == nil && !w.wasRead(abs):
		return "", fmt.Errorf("%s exists and was not read in this attempt: read_files it first, or use edit_file", path)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return "", err
	}
	mode := os.FileMode(0o644)
	if info != nil {
		mode = info.Mode().Perm()
	}
	if err := os.WriteFile(abs, []byte(content), mode); err != nil {
		return "", err
	}
	w.markRead(abs)
	return fmt.Sprintf("wrote %s (%d bytes)", w.rel(abs), len(content)), nil
}

// EditFile replaces the one occurrence of oldText with newText. For now the match is exact;
// a missing or ambiguous match returns an error that tells the model what to do next.
func (w *Workspace) EditFile(path, oldText, newText string) (string, error) {
	abs, err := w.Resolve(path)
	if err != nil {
		return "", err
	}
	if oldText == "" {
		return "", errors.New("old_text is empty: to create a file use write_file")
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%s does not exist: use write_file to create it", path)
		}
		return "", err
	}
	content := string(data)
	n := strings.Count(content, oldText)
	switch {
	case n == 0:
		return "", fmt.Errorf("old_text not found in %s%s; re-read the file with read_files and copy the text exactly", path, nearest(content, oldText))
	case n > 1:
		return "", fmt.Errorf("old_text occurs %d times in %s; include more surrounding lines so it is unique", n, path)
	}
	info, err := os.Stat(abs)
	if err != nil {
		return "", err
	}
	updated := strings.Replace(content, oldText, newText, 1)
	if err := os.WriteFile(abs, []byte(updated), info.Mode().Perm()); err != nil {
		return "", err
	}
	w.markRead(abs)
	line := strings.Count(content[:strings.Index(content, oldText)], "\n") + 1
	return fmt.Sprintf("edited %s at line %d (-%d +%d lines)", w.rel(abs), line,
		strings.Count(oldText, "\n")+1, strings.Count(newText, "\n")+1), nil
}

// nearest shows the real line closest to the first line of the wanted text, so a model can
// see how its copy differs.
func nearest(content, want string) string {
	first := strings.TrimSpace(strings.SplitN(want, "\n", 2)[0])
	if first == "" {
		return ""
	}
	best, bestScore := -1, 0
	lines := strings.Split(content, "\n")
	for i, l := range lines {
		if s := commonPrefix(strings.TrimSpace(l), first); s > bestScore {
			best, bestScore = i, s
		}
	}
	if best < 0 || bestScore < 4 {
		return ""
	}
	return fmt.Sprintf(" (nearest line %d: %q)", best+1, lines[best])
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func lineCount(data []byte) int {
	n := strings.Count(string(data), "\n")
	if len(data) > 0 && data[len(data)-1] != '\n' {
		n++
	}
	return n
}

func capResult(s string) string {
	if len(s) <= MaxResultBytes {
		return s
	}
	return s[:MaxResultBytes] + fmt.Sprintf("\n(result cut at %d bytes)", MaxResultBytes)
}
