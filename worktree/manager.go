// Package worktree gives each attempt at a ticket its own isolated working
// copy of a repository: a linked git worktree on a branch
// ticketd/<id>-<slug>, made at a base commit, that can be diffed, committed
// and removed without touching the user's checkout or another worker's copy.
package worktree

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Sentinel errors; match them with errors.Is.
var (
	ErrNotRepository   = errors.New("not a git repository")
	ErrUnknownRef      = errors.New("unknown git ref")
	ErrNothingToCommit = errors.New("nothing to commit")
	ErrBranchInUse     = errors.New("branch is checked out in another worktree")
)

// Default commit identity, used unless Manager.AuthorName/AuthorEmail are set.
const (
	DefaultAuthorName  = "ticketd"
	DefaultAuthorEmail = "ticketd@localhost"
)

// maxSlug bounds the slug part of a branch name so branch names stay readable
// in `git branch` output and in PR titles.
const maxSlug = 40

// BranchName returns "ticketd/<id>-<slug>" where slug is the title reduced to
// lowercase ASCII letters, digits and single dashes, at most 40 characters,
// cut at a word boundary when possible, and "ticket" when nothing is left.
// The result is always a valid git ref name.
func BranchName(ticketID int64, title string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(title) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
		default:
			dash = true
		}
	}
	slug := b.String()
	if len(slug) > maxSlug {
		slug = slug[:maxSlug]
		if i := strings.LastIndexByte(slug, '-'); i >= maxSlug/2 {
			slug = slug[:i]
		}
		slug = strings.TrimRight(slug, "-")
	}
	if slug == "" {
		slug = "ticket"
	}
	return "ticketd/" + strconv.FormatInt(ticketID, 10) + "-" + slug
}

// Manager creates and removes worktrees under one root directory. It is safe
// for concurrent use: operations that change a repository's worktree list or
// refs are serialized per repository (in-process mutex plus a flock in the
// git dir), because concurrent `git worktree add` and `prune` calls on one
// repository corrupt each other; lock collisions with other git processes
// (a user's editor holding index.lock) are retried.
type Manager struct {
	root   string
	logger *slog.Logger

	// AuthorName and AuthorEmail are the identity of commits made in trees
	// prepared after they are set; empty means "ticketd <ticketd@localhost>".
	AuthorName  string
	AuthorEmail string

	mu   sync.Mutex
	live map[string]bool // worktree dirs prepared and not yet removed
}

// NewManager returns a Manager keeping worktrees under root, which is created
// on first use. A nil logger discards logs.
func NewManager(root string, logger *slog.Logger) *Manager {
	if abs, err := filepath.Abs(root); err == nil {
		root = abs
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Manager{
		root:   filepath.Clean(root),
		logger: logger.With("component", "worktree"),
		live:   map[string]bool{},
	}
}

// Root is the directory the worktrees live under.
func (m *Manager) Root() string { return m.root }

// repoLocks serializes changes to one repository's worktree list and refs
// within this process, whichever Manager makes them: concurrent `git
// worktree add` and `git worktree prune` on one repository corrupt each
// other's metadata (prune deletes a half-made worktree's record). It is a
// registry of locks for an outside resource, not state tests change.
var repoLocks sync.Map // common git dir -> *sync.Mutex

// lockRepo takes the in-process lock and the cross-process file lock of the
// repository whose common git dir is given, and returns the release func.
func lockRepo(commonDir string) (func(), error) {
	l, _ := repoLocks.LoadOrStore(commonDir, &sync.Mutex{})
	mu := l.(*sync.Mutex)
	mu.Lock()
	unlockFile, err := lockRepoFile(commonDir)
	if err != nil {
		mu.Unlock()
		return nil, err
	}
	return func() { unlockFile(); mu.Unlock() }, nil
}

// openRepo checks that repoPath is a git repository and returns its top
// level and its common git dir (shared by all its worktrees), both absolute.
func openRepo(ctx context.Context, repoPath string) (top, commonDir string, err error) {
	abs, err := filepath.Abs(repoPath)
	if err != nil {
		return "", "", fmt.Errorf("open repository %q: %w", repoPath, err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return "", "", fmt.Errorf("open repository %q: %w: the directory does not exist; check the repo path in the config", repoPath, ErrNotRepository)
	}
	out, err := runGit(ctx, abs, nil, "rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir")
	if err != nil {
		if ctx.Err() != nil {
			return "", "", err
		}
		return "", "", fmt.Errorf("open repository %q: %w (%v); run `git init` there or fix the repo path in the config", repoPath, ErrNotRepository, err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		return "", "", fmt.Errorf("open repository %q: %w: unexpected rev-parse output %q (bare repository?)", repoPath, ErrNotRepository, out)
	}
	return lines[0], filepath.Clean(lines[1]), nil
}

// Prepare creates a fresh worktree of repoPath on branch, reset to baseRef,
// in a new directory under the Manager's root. An existing branch of that
// name is reset to baseRef (a retried attempt starts clean). Missing
// repositories and unknown refs return ErrNotRepository and ErrUnknownRef.
func (m *Manager) Prepare(ctx context.Context, repoPath, baseRef, branch string) (*Tree, error) {
	top, commonDir, err := openRepo(ctx, repoPath)
	if err != nil {
		return nil, err
	}
	if baseRef == "" {
		baseRef = "HEAD"
	}
	base, err := runGit(ctx, top, nil, "rev-parse", "--verify", "--quiet", "--end-of-options", baseRef+"^{commit}")
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, fmt.Errorf("prepare worktree of %s at %q: %w; check base_ref in the config (a branch, tag or commit that exists)", top, baseRef, ErrUnknownRef)
	}
	base = strings.TrimSpace(base)
	if out, err := runGit(ctx, top, nil, "check-ref-format", "--branch", branch); err != nil || strings.TrimSpace(out) == "" {
		return nil, fmt.Errorf("prepare worktree of %s: invalid branch name %q: %w", top, branch, err)
	}

	if err := os.MkdirAll(m.root, 0o755); err != nil {
		return nil, fmt.Errorf("prepare worktree: create root %s: %w", m.root, err)
	}
	// MkdirTemp makes the directory name unique atomically; git accepts an
	// existing empty directory as the target of `worktree add`.
	prefix := filepath.Base(top) + "-" + strings.ReplaceAll(strings.TrimPrefix(branch, "ticketd/"), "/", "-") + "-"
	dir, err := os.MkdirTemp(m.root, prefix)
	if err != nil {
		return nil, fmt.Errorf("prepare worktree: create directory under %s: %w", m.root, err)
	}

	m.setLive(dir, true)

	unlock, err := lockRepo(commonDir)
	if err == nil {
		err = m.add(ctx, top, dir, branch, base)
		unlock()
	}
	if err != nil {
		m.setLive(dir, false)
		_ = os.RemoveAll(dir)
		return nil, err
	}
	m.logger.Debug("worktree prepared", "repo", top, "dir", dir, "branch", branch, "base_commit", base)
	return &Tree{
		Dir:         dir,
		Branch:      branch,
		BaseCommit:  base,
		RepoPath:    top,
		authorName:  cmpOr(m.AuthorName, DefaultAuthorName),
		authorEmail: cmpOr(m.AuthorEmail, DefaultAuthorEmail),
	}, nil
}

// add runs `git worktree add -B`; the caller holds the repository lock.
func (m *Manager) add(ctx context.Context, top, dir, branch, base string) error {
	// A worktree whose directory vanished (a crash, a manual rm) still
	// claims its branch until pruned; prune first so -B can take it.
	if _, err := runGitRetry(ctx, top, nil, "worktree", "prune"); err != nil {
		return fmt.Errorf("prepare worktree: %w", err)
	}
	_, err := runGitRetry(ctx, top, nil, "worktree", "add", "--quiet", "--no-track", "-B", branch, dir, base)
	if err == nil {
		return nil
	}
	var ge *gitError
	if errors.As(err, &ge) && strings.Contains(ge.Stderr, "already checked out") ||
		errors.As(err, &ge) && strings.Contains(ge.Stderr, "is already used by worktree") {
		return fmt.Errorf("prepare worktree for branch %s: %w (%v); remove that worktree or run CollectLeftovers", branch, ErrBranchInUse, err)
	}
	return fmt.Errorf("prepare worktree for branch %s at %s: %w", branch, base, err)
}

// Remove deletes the worktree directory (even with uncommitted changes) and
// unregisters it, then deletes its branch unless keepBranch. Removing a tree
// whose directory is already gone is not an error. Pass a context that is not
// cancelled by shutdown (context.WithoutCancel) so clean-up still runs.
func (m *Manager) Remove(ctx context.Context, t *Tree, keepBranch bool) error {
	_, commonDir, err := openRepo(ctx, t.RepoPath)
	if err != nil {
		// The repository is gone: nothing to unregister, but the copy
		// must not stay behind on disk.
		m.setLive(t.Dir, false)
		if rmErr := os.RemoveAll(t.Dir); rmErr != nil {
			return fmt.Errorf("remove worktree %s: %w", t.Dir, errors.Join(err, rmErr))
		}
		return fmt.Errorf("remove worktree %s: directory removed, but: %w", t.Dir, err)
	}
	unlock, err := lockRepo(commonDir)
	if err != nil {
		return fmt.Errorf("remove worktree %s: %w", t.Dir, err)
	}
	defer unlock()

	m.setLive(t.Dir, false) // before the directory goes, so its resolved name is found
	var errs []error
	if _, err := os.Stat(t.Dir); err == nil {
		if _, err := runGitRetry(ctx, t.RepoPath, nil, "worktree", "remove", "--force", "--force", t.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.RemoveAll(t.Dir); err != nil {
		errs = append(errs, err)
	}
	if _, err := runGitRetry(ctx, t.RepoPath, nil, "worktree", "prune"); err != nil {
		errs = append(errs, err)
	}
	if !keepBranch {
		if _, err := runGitRetry(ctx, t.RepoPath, nil, "branch", "-D", "--", t.Branch); err != nil {
			var ge *gitError
			if !errors.As(err, &ge) || !strings.Contains(ge.Stderr, "not found") {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove worktree %s (branch %s): %w", t.Dir, t.Branch, err)
	}
	m.logger.Debug("worktree removed", "dir", t.Dir, "branch", t.Branch, "keep_branch", keepBranch)
	return nil
}

// CollectLeftovers removes worktrees of repoPath that live under the root
// but were not prepared by this Manager (left by a crashed run), prunes the
// repository's stale worktree records and deletes empty directories under
// the root. Branches are kept: a retry resets them with -B, and one may hold
// work a human wants to see. It returns the directories removed. Trees this
// Manager prepared and has not removed are never touched, so it is safe to
// call while workers run, though its intended place is daemon start-up.
func (m *Manager) CollectLeftovers(ctx context.Context, repoPath string) ([]string, error) {
	top, commonDir, err := openRepo(ctx, repoPath)
	if err != nil {
		return nil, fmt.Errorf("collect leftover worktrees: %w", err)
	}
	unlock, err := lockRepo(commonDir)
	if err != nil {
		return nil, fmt.Errorf("collect leftover worktrees: %w", err)
	}
	defer unlock()

	if _, err := runGitRetry(ctx, top, nil, "worktree", "prune"); err != nil {
		return nil, fmt.Errorf("collect leftover worktrees of %s: %w", top, err)
	}
	out, err := runGit(ctx, top, nil, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return nil, fmt.Errorf("collect leftover worktrees of %s: %w", top, err)
	}
	root := m.root
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	var removed []string
	var errs []error
	for _, field := range strings.Split(out, "\x00") {
		path, ok := strings.CutPrefix(field, "worktree ")
		if !ok {
			continue
		}
		path = filepath.Clean(path)
		if !under(root, path) && !under(m.root, path) {
			continue
		}
		if m.isLive(path) {
			continue
		}
		if _, err := runGitRetry(ctx, top, nil, "worktree", "remove", "--force", "--force", path); err != nil {
			errs = append(errs, err)
		}
		if err := os.RemoveAll(path); err != nil {
			errs = append(errs, err)
		}
		removed = append(removed, path)
		m.logger.Info("leftover worktree removed", "repo", top, "dir", path)
	}
	if _, err := runGitRetry(ctx, top, nil, "worktree", "prune"); err != nil {
		errs = append(errs, err)
	}
	// Empty directories come from a crash between MkdirTemp and worktree add.
	if entries, err := os.ReadDir(m.root); err == nil {
		for _, e := range entries {
			p := filepath.Join(m.root, e.Name())
			if sub, err := os.ReadDir(p); e.IsDir() && err == nil && len(sub) == 0 {
				if !m.isLive(p) && os.Remove(p) == nil {
					removed = append(removed, p)
				}
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("collect leftover worktrees of %s: %w", top, err)
	}
	return removed, nil
}

// setLive marks dir (under its given and its symlink-resolved name, since
// git may report either) as in use by this Manager, or no longer.
func (m *Manager) setLive(dir string, live bool) {
	names := []string{filepath.Clean(dir)}
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		names = append(names, r)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, n := range names {
		if live {
			m.live[n] = true
		} else {
			delete(m.live, n)
		}
	}
}

func (m *Manager) isLive(dir string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.live[filepath.Clean(dir)]
}

// under reports whether path lies strictly inside dir.
func under(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
