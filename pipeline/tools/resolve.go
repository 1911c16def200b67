package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"
)

// Path limits. Real repository paths are far shorter; a longer one is a model mistake or an
// attack, and answering it early keeps the error readable.
const (
	maxPathBytes      = 1024
	maxComponentBytes = 255
	// maxSymlinkHops bounds symlink following, so a loop (a -> b -> a) ends with an error.
	maxSymlinkHops = 40
)

// ErrOutside is returned for a path that would leave the worktree.
var ErrOutside = errors.New("path is outside the worktree")

// ErrGitDir is returned for a path that reaches a git directory (.git in any letter case, a
// submodule's .git file, or a symlink leading to either). The daemon's git state is off limits.
var ErrGitDir = errors.New("path reaches a .git directory, which the tools may not touch")

// target is a model-given path after resolution.
type target struct {
	given string      // as the model wrote it
	abs   string      // real absolute path, every symlink resolved
	rel   string      // abs relative to the root, slash-separated ("." for the root)
	info  fs.FileInfo // Lstat of abs; nil when it does not exist
	// link names the first symlink followed on the way ("" if none), for write refusals.
	link, linkTo string
}

func (t target) exists() bool { return t.info != nil }

// Resolve maps a model-given relative path to a real path inside the worktree. The path need
// not exist, but the existing part, with every symlink followed, must stay inside the
// worktree and outside any .git.
func (w *Workspace) Resolve(rel string) (string, error) {
	t, err := w.resolve(rel)
	if err != nil {
		return "", err
	}
	return t.abs, nil
}

// resolve walks the path one component at a time from the root, following symlinks itself,
// so that ".." and symlink targets are judged on the real location, not on the text.
func (w *Workspace) resolve(p string) (target, error) {
	t := target{given: p}
	if err := checkPathText(p); err != nil {
		return t, err
	}
	queue := strings.Split(p, "/")
	var cur []string // real components below the root
	missing := false // a component did not exist: the rest is plain names
	hops := 0
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				if t.link != "" {
					return t, fmt.Errorf("%q: %w: the symlink %s -> %s leads above the repository root", p, ErrOutside, t.link, t.linkTo)
				}
				return t, fmt.Errorf("%q: %w: \"..\" would climb above the repository root; paths are relative to the root", p, ErrOutside)
			}
			cur = cur[:len(cur)-1]
			continue
		}
		if isGitName(c) {
			via := ""
			if t.link != "" {
				via = fmt.Sprintf(" (through the symlink %s -> %s)", t.link, t.linkTo)
			}
			return t, fmt.Errorf("%q%s: %w", p, via, ErrGitDir)
		}
		if missing {
			cur = append(cur, c)
			continue
		}
		full := filepath.Join(w.root, filepath.Join(cur...), c)
		info, err := os.Lstat(full)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			missing = true
			cur = append(cur, c)
			continue
		case errors.Is(err, syscall.ENOTDIR):
			return t, fmt.Errorf("%q: %s is a file, not a directory", p, slashJoin(cur))
		case err != nil:
			return t, fmt.Errorf("%q: %w", p, err)
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			if len(queue) > 0 && !info.IsDir() && hasName(queue) {
				return t, fmt.Errorf("%q: %s is a file, not a directory", p, slashJoin(append(cur, c)))
			}
			cur = append(cur, c)
			continue
		}
		hops++
		if hops > maxSymlinkHops {
			return t, fmt.Errorf("%q: more than %d symlinks on the way (a symlink loop?); use the real path", p, maxSymlinkHops)
		}
		dest, err := os.Readlink(full)
		if err != nil {
			return t, fmt.Errorf("%q: read symlink %s: %w", p, slashJoin(append(cur, c)), err)
		}
		if t.link == "" {
			t.link, t.linkTo = slashJoin(append(cur, c)), dest
		}
		if filepath.IsAbs(dest) {
			inside, ok := w.within(dest)
			if !ok {
				return t, fmt.Errorf("%q: %w: the symlink %s points to %s", p, ErrOutside, slashJoin(append(cur, c)), dest)
			}
			cur = nil
			queue = append(strings.Split(inside, "/"), queue...)
			continue
		}
		queue = append(strings.Split(filepath.ToSlash(dest), "/"), queue...)
	}
	t.rel = slashJoin(cur)
	t.abs = filepath.Join(w.root, filepath.FromSlash(t.rel))
	if !missing {
		info, err := os.Lstat(t.abs)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return t, fmt.Errorf("%q: %w", p, err)
		}
		if err == nil {
			t.info = info
		}
	}
	return t, nil
}

// checkPathText refuses paths whose text alone is wrong, with a hint for each mistake.
func checkPathText(p string) error {
	switch {
	case p == "":
		return errors.New("empty path: give a path relative to the repository root, e.g. \"src/app.py\"")
	case strings.IndexByte(p, 0) >= 0:
		return fmt.Errorf("path %q contains a NUL byte; give a plain relative path", p)
	case len(p) > maxPathBytes:
		return fmt.Errorf("path is %d bytes long (limit %d); give a real path relative to the repository root", len(p), maxPathBytes)
	case !utf8.ValidString(p):
		return fmt.Errorf("path %q is not valid UTF-8", p)
	case strings.HasPrefix(p, "~"):
		return fmt.Errorf("%q: %w: \"~\" is not expanded; give a path relative to the repository root", p, ErrOutside)
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("%q: %w: absolute paths are refused; give a path relative to the repository root", p, ErrOutside)
	case strings.ContainsRune(p, '\\'):
		return fmt.Errorf("path %q contains a backslash; use forward slashes, relative to the repository root (e.g. \"src/app.py\")", p)
	case len(p) >= 2 && p[1] == ':' && (p[0]|0x20 >= 'a' && p[0]|0x20 <= 'z'):
		return fmt.Errorf("%q: %w: a drive letter is an absolute path; give a path relative to the repository root", p, ErrOutside)
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("path %q contains a control character; give a plain relative path", p)
		}
	}
	for _, c := range strings.Split(p, "/") {
		if len(c) > maxComponentBytes {
			return fmt.Errorf("path %q has a name of %d bytes (limit %d)", clipPath(p), len(c), maxComponentBytes)
		}
	}
	return nil
}

// isGitName reports whether a path component names a git directory or a submodule's .git
// file: ".git" in any letter case, and the spellings Windows file systems treat as the same
// name (trailing dots or spaces, the 8.3 short name GIT~1). A lookalike with other
// characters (a Cyrillic "і", say) is a different file to git and the kernel, so it is allowed.
func isGitName(c string) bool {
	t := strings.TrimRight(c, ". ")
	return strings.EqualFold(t, ".git") || strings.EqualFold(c, "git~1")
}

// within maps an absolute symlink target to a path relative to the root, if it is inside.
func (w *Workspace) within(dest string) (string, bool) {
	dest = filepath.Clean(dest)
	for _, root := range []string{w.root, w.given} {
		if root == "" {
			continue
		}
		if dest == root {
			return ".", true
		}
		if strings.HasPrefix(dest, root+string(filepath.Separator)) {
			return filepath.ToSlash(dest[len(root)+1:]), true
		}
	}
	return "", false
}

// hasName reports whether the queue still holds a real name (not only "" or ".").
func hasName(queue []string) bool {
	for _, c := range queue {
		if c != "" && c != "." {
			return true
		}
	}
	return false
}

func slashJoin(parts []string) string {
	if len(parts) == 0 {
		return "."
	}
	return strings.Join(parts, "/")
}

func clipPath(p string) string {
	if len(p) <= 80 {
		return p
	}
	return p[:80] + "..."
}
