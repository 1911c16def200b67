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
	if err := checkPathText(p); err != nil {
		return target{given: p}, err
	}
	pw := &pathWalk{w: w, p: p, t: target{given: p}, queue: strings.Split(p, "/")}
	for len(pw.queue) > 0 {
		c := pw.queue[0]
		pw.queue = pw.queue[1:]
		if err := pw.step(c); err != nil {
			return pw.t, err
		}
	}
	err := pw.finish() // before reading pw.t: a return's operand order is unspecified
	return pw.t, err
}

// pathWalk is the state of one resolve: the components still to walk and the real ones
// walked so far.
type pathWalk struct {
	w       *Workspace
	p       string   // the path as given, for errors
	t       target   // the result; link and linkTo are set on the first symlink
	queue   []string // components still to walk; a symlink's target is pushed in front
	cur     []string // real components below the root
	missing bool     // a component did not exist: the rest is plain names
	hops    int      // symlinks followed, bounded by maxSymlinkHops
}

// step walks one component: "." and "" stay, ".." climbs (never above the root), a .git
// name is refused wherever it appears, and a real name is looked up on disk.
func (pw *pathWalk) step(c string) error {
	switch c {
	case "", ".":
		return nil
	case "..":
		return pw.up()
	}
	if isGitName(c) {
		via := ""
		if pw.t.link != "" {
			via = fmt.Sprintf(" (through the symlink %s -> %s)", pw.t.link, pw.t.linkTo)
		}
		return fmt.Errorf("%q%s: %w", pw.p, via, ErrGitDir)
	}
	if pw.missing {
		pw.cur = append(pw.cur, c)
		return nil
	}
	return pw.enter(c)
}

// up handles "..": it climbs one real component, and refuses to climb above the root.
func (pw *pathWalk) up() error {
	if len(pw.cur) > 0 {
		pw.cur = pw.cur[:len(pw.cur)-1]
		return nil
	}
	if pw.t.link != "" {
		return fmt.Errorf("%q: %w: the symlink %s -> %s leads above the repository root", pw.p, ErrOutside, pw.t.link, pw.t.linkTo)
	}
	return fmt.Errorf("%q: %w: \"..\" would climb above the repository root; paths are relative to the root", pw.p, ErrOutside)
}

// enter looks c up below the current real directory (Lstat: a symlink is not followed by
// the kernel but by follow).
func (pw *pathWalk) enter(c string) error {
	full := filepath.Join(pw.w.root, filepath.Join(pw.cur...), c)
	info, err := os.Lstat(full)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		pw.missing = true
		pw.cur = append(pw.cur, c)
		return nil
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("%q: %s is a file, not a directory", pw.p, slashJoin(pw.cur))
	case err != nil:
		return fmt.Errorf("%q: %w", pw.p, err)
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		return pw.follow(c, full)
	}
	if len(pw.queue) > 0 && !info.IsDir() && hasName(pw.queue) {
		return fmt.Errorf("%q: %s is a file, not a directory", pw.p, slashJoin(append(pw.cur, c)))
	}
	pw.cur = append(pw.cur, c)
	return nil
}

// follow pushes the symlink c's target in front of the queue, so it is walked (and
// judged) like the rest of the path. An absolute target must be inside the root and
// restarts the walk there.
func (pw *pathWalk) follow(c, full string) error {
	pw.hops++
	if pw.hops > maxSymlinkHops {
		return fmt.Errorf("%q: more than %d symlinks on the way (a symlink loop?); use the real path", pw.p, maxSymlinkHops)
	}
	dest, err := os.Readlink(full)
	if err != nil {
		return fmt.Errorf("%q: read symlink %s: %w", pw.p, slashJoin(append(pw.cur, c)), err)
	}
	if pw.t.link == "" {
		pw.t.link, pw.t.linkTo = slashJoin(append(pw.cur, c)), dest
	}
	if !filepath.IsAbs(dest) {
		pw.queue = append(strings.Split(filepath.ToSlash(dest), "/"), pw.queue...)
		return nil
	}
	inside, ok := pw.w.within(dest)
	if !ok {
		return fmt.Errorf("%q: %w: the symlink %s points to %s", pw.p, ErrOutside, slashJoin(append(pw.cur, c)), dest)
	}
	pw.cur = nil
	pw.queue = append(strings.Split(inside, "/"), pw.queue...)
	return nil
}

// finish sets the real paths and, if every component existed, the final Lstat.
func (pw *pathWalk) finish() error {
	pw.t.rel = slashJoin(pw.cur)
	pw.t.abs = filepath.Join(pw.w.root, filepath.FromSlash(pw.t.rel))
	if pw.missing {
		return nil
	}
	info, err := os.Lstat(pw.t.abs)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%q: %w", pw.p, err)
	}
	if err == nil {
		pw.t.info = info
	}
	return nil
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
	return checkPathChars(p)
}

// checkPathChars refuses control characters and over-long names anywhere in the path.
func checkPathChars(p string) error {
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
