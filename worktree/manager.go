// Package worktree gives each attempt at a ticket its own isolated working
// copy of a repository: a linked git worktree on a branch
// ticketd/<id>-<slug>, made at a base commit, that can be diffed, committed
// and removed without touching the user's checkout or another worker's copy.
package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
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
	// ErrCheckoutTooLarge: the commit's files add up to more than Manager.MaxCheckout. git's
	// checkout writes every file it is told to, however large, and a blob of gigabytes of
	// zeros takes a few megabytes in the repository.
	ErrCheckoutTooLarge = errors.New("the commit's files are larger than a worktree may be")
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
// for concurrent use. The steps that change a repository's worktree list or
// refs (registering a worktree, creating or deleting its branch, pruning)
// are serialized per repository, in-process and with a flock in the git dir,
// because concurrent `git worktree add` and `prune` on one repository corrupt
// each other; the slow parts (checking files out, deleting them) run outside
// that lock, so workers on one big repository do not wait for each other.
// Lock collisions with other git processes (a user's editor holding
// index.lock) are retried.
type Manager struct {
	root   string
	logger *slog.Logger

	// AuthorName and AuthorEmail are the identity of commits made in trees
	// prepared after they are set; empty means "ticketd <ticketd@localhost>".
	AuthorName  string
	AuthorEmail string

	// Ready, when set, is called with each new worktree's folder while it is still empty,
	// before anything is checked out into it: a daemon run as root makes the folder its
	// checks' group's there (sandbox.ReadyForChecks), so the checkout is born writable by
	// them. An error is logged once and the worktree prepared as it is.
	Ready     func(dir string) error
	readyWarn sync.Once

	// Keep, when above 0, is how many trees Remove keeps for later Prepares of their
	// repository to reuse (keep.go): a reused tree writes only the files that differ from
	// its new base, where a fresh one writes every file. Close removes the kept trees.
	Keep int

	// MaxCheckout, when above 0, is how many bytes the files of a commit Prepare checks out
	// may add up to: a larger one is refused with ErrCheckoutTooLarge before anything is
	// written (a daemon sets it to max_worktree_size, which no check of a larger tree could
	// pass anyway).
	MaxCheckout int64

	mu     sync.Mutex
	live   map[string]bool     // worktree dirs prepared and not yet removed (kept ones too)
	repos  map[string]repoDirs // repository path as given -> where git found it
	kept   []keptTree          // kept for reuse, the most recently kept last
	closed bool                // Close ran: nothing more is kept
	fits   map[string]bool     // commits whose files checkCheckoutSize found within MaxCheckout
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
		repos:  map[string]repoDirs{},
	}
}

// Root is the directory the worktrees live under.
func (m *Manager) Root() string { return m.root }

// repo returns where the repository at repoPath lives, found by git the
// first time and remembered: found again later, a commondir file or .git
// file written meanwhile by code under test could move it.
func (m *Manager) repo(ctx context.Context, repoPath string) (repoDirs, error) {
	abs, err := filepath.Abs(repoPath)
	if err != nil {
		return repoDirs{}, fmt.Errorf("open repository %q: %w", repoPath, err)
	}
	m.mu.Lock()
	r, ok := m.repos[abs]
	m.mu.Unlock()
	if ok {
		if _, err := os.Stat(filepath.Join(r.CommonDir, "HEAD")); err == nil {
			return r, nil
		}
	}
	r, err = openRepo(ctx, abs)
	if err != nil {
		return repoDirs{}, err
	}
	m.mu.Lock()
	m.repos[abs] = r
	m.mu.Unlock()
	return r, nil
}

// Prepare creates a fresh worktree of repoPath on branch, reset to baseRef,
// in a new directory under the Manager's root, or, with Keep set, brings a
// kept tree of repoPath to exactly that (keep.go). An existing branch of that
// name is reset to baseRef (a retried attempt starts clean). Missing
// repositories and unknown refs return ErrNotRepository and ErrUnknownRef.
func (m *Manager) Prepare(ctx context.Context, repoPath, baseRef, branch string) (*Tree, error) {
	return m.prepare(ctx, repoPath, baseRef, branch, "")
}

// prepare is Prepare with the branch reset to start instead of the base when start is set
// (PrepareFrom); the tree's BaseCommit is baseRef's commit either way.
func (m *Manager) prepare(ctx context.Context, repoPath, baseRef, branch, start string) (*Tree, error) {
	repo, err := m.repo(ctx, repoPath)
	if err != nil {
		return nil, err
	}
	top := repo.WorkTree
	base, from, err := baseAndStart(ctx, repo, baseRef, start)
	if err != nil {
		return nil, err
	}
	if out, err := repo.git(ctx, nil, "check-ref-format", "--branch", branch); err != nil || strings.TrimSpace(out) == "" {
		return nil, fmt.Errorf("prepare worktree of %s: invalid branch name %q: %w", top, branch, err)
	}
	if err := m.checkCheckoutSize(ctx, repo, from); err != nil {
		return nil, err
	}
	if tree := m.reuse(ctx, repo, base, from, branch); tree != nil {
		return tree, nil
	}

	if err := os.MkdirAll(m.root, 0o755); err != nil {
		return nil, fmt.Errorf("prepare worktree: create root %s: %w", m.root, err)
	}
	// MkdirTemp makes the directory name unique atomically; git accepts an
	// existing empty directory as the target of `worktree add`.
	dir, err := os.MkdirTemp(m.root, treePrefix(top, branch))
	if err != nil {
		return nil, fmt.Errorf("prepare worktree: create directory under %s: %w", m.root, err)
	}
	m.setLive(dir, true)
	m.ready(dir)

	// Only the registration and the branch need the lock; the checkout,
	// which is most of the time on a big repository, runs outside it.
	unlock, err := lockRepo(repo.CommonDir)
	if err == nil {
		err = m.register(ctx, repo, dir, branch, from)
		unlock()
	}
	if err != nil {
		m.setLive(dir, false)
		_ = os.RemoveAll(dir)
		return nil, err
	}
	tree := &Tree{
		Dir:         dir,
		Branch:      branch,
		BaseCommit:  base,
		RepoPath:    top,
		commonDir:   repo.CommonDir,
		authorName:  cmpOr(m.AuthorName, DefaultAuthorName),
		authorEmail: cmpOr(m.AuthorEmail, DefaultAuthorEmail),
		forms:       &formMemo{},
		built:       &builtMemo{},
	}
	if err := m.checkOut(ctx, repo, tree, from); err != nil {
		return nil, err
	}
	m.logger.Debug("worktree prepared", "repo", top, "dir", dir, "branch", branch, "base_commit", base)
	return tree, nil
}

// checkOut fills the newly registered tree t with from's files. A tree that cannot be made
// is removed, never kept.
func (m *Manager) checkOut(ctx context.Context, repo repoDirs, t *Tree, from string) error {
	// The .git file is read once, now, before anything untrusted ran in the
	// directory; later commands name the git dir it pointed at explicitly.
	var err error
	t.gitDir, err = linkedGitDir(repo.CommonDir, t.Dir)
	if err == nil && m.Ready != nil {
		err = os.Chmod(filepath.Join(t.Dir, ".git"), 0o644) // born group-writable in a ready folder
	}
	if err == nil {
		_, err = t.dirs().git(ctx, nil, "reset", "--hard", "--quiet", "--no-recurse-submodules")
		if err != nil {
			err = fmt.Errorf("prepare worktree for branch %s: check out %s: %w", t.Branch, short(from), err)
		}
	}
	if err != nil {
		if rmErr := m.remove(context.WithoutCancel(ctx), t, true); rmErr != nil {
			err = errors.Join(err, rmErr)
		}
		return err
	}
	return nil
}

// treePrefix is the start of the folder name of a tree of the repository at top on branch:
// <repository>-<branch without ticketd/>-, then a unique suffix.
func treePrefix(top, branch string) string {
	return filepath.Base(top) + "-" + strings.ReplaceAll(strings.TrimPrefix(branch, "ticketd/"), "/", "-") + "-"
}

// ready calls m.Ready on the new worktree folder dir. The .git file git writes there next is
// then made 0644 again (prepare): git metadata is never the checks' to write.
func (m *Manager) ready(dir string) {
	if m.Ready == nil {
		return
	}
	if err := m.Ready(dir); err != nil {
		m.readyWarn.Do(func() {
			m.logger.Warn("new worktrees are not made ready for the checks; each check grants its worktree file by file instead", "dir", dir, "err", err)
		})
	}
}

// register runs `git worktree add --no-checkout -B`; the caller holds the
// repository lock. A worktree whose directory vanished (a crash, a manual
// rm) still claims its branch until pruned: then it prunes and tries again.
func (m *Manager) register(ctx context.Context, repo repoDirs, dir, branch, base string) error {
	add := func() error {
		_, err := repo.gitRetry(ctx, nil, "worktree", "add", "--quiet", "--no-checkout", "--no-track", "-B", branch, dir, base)
		return err
	}
	err := add()
	if branchInUse(err) {
		if _, pruneErr := repo.gitRetry(ctx, nil, "worktree", "prune"); pruneErr != nil {
			return fmt.Errorf("prepare worktree: %w", pruneErr)
		}
		err = add()
	}
	switch {
	case err == nil:
		return nil
	case branchInUse(err):
		return fmt.Errorf("prepare worktree for branch %s: %w (%v); remove that worktree or run CollectLeftovers", branch, ErrBranchInUse, err)
	default:
		return fmt.Errorf("prepare worktree for branch %s at %s: %w", branch, base, err)
	}
}

func branchInUse(err error) bool {
	var ge *gitError
	return errors.As(err, &ge) && (strings.Contains(ge.Stderr, "already checked out") || strings.Contains(ge.Stderr, "is already used by worktree"))
}

// Remove deletes the worktree directory (even with uncommitted changes) and
// unregisters it, then deletes its branch unless keepBranch. Removing a tree
// whose directory is already gone is not an error. Pass a context that is not
// cancelled by shutdown (context.WithoutCancel) so clean-up still runs. With
// Keep set, the tree may be kept for reuse instead, detached from its branch;
// either way t is not to be used again.
func (m *Manager) Remove(ctx context.Context, t *Tree, keepBranch bool) error {
	if m.keep(ctx, t, keepBranch) {
		return nil
	}
	return m.remove(ctx, t, keepBranch)
}

// remove is Remove without keeping the tree.
func (m *Manager) remove(ctx context.Context, t *Tree, keepBranch bool) error {
	m.setLive(t.Dir, false) // before the directory goes, so its resolved name is found
	// Deleting the files is the slow part and needs no lock: until the
	// registration goes too, git sees a worktree whose directory vanished.
	rmErr := removeTree(t.Dir)
	if _, err := os.Stat(filepath.Join(t.commonDir, "HEAD")); err != nil {
		// The repository is gone: nothing to unregister.
		if rmErr != nil {
			return fmt.Errorf("remove worktree %s: %w (%v), and the repository is gone: %w", t.Dir, rmErr, err, ErrNotRepository)
		}
		return fmt.Errorf("remove worktree %s: directory removed, but the repository is gone: %w (%v)", t.Dir, ErrNotRepository, err)
	}
	repo := repoDirs{GitDir: t.commonDir, CommonDir: t.commonDir, WorkTree: t.RepoPath}
	unlock, err := lockRepo(t.commonDir)
	if err != nil {
		return fmt.Errorf("remove worktree %s: %w", t.Dir, err)
	}
	defer unlock()

	errs := []error{rmErr}
	if t.gitDir != "" {
		// Verified at Prepare to be <common>/worktrees/<name>: removing it is
		// what `git worktree remove` does after deleting the files.
		errs = append(errs, os.RemoveAll(t.gitDir))
	} else if _, err := repo.gitRetry(ctx, nil, "worktree", "prune"); err != nil {
		errs = append(errs, err)
	}
	if !keepBranch {
		if _, err := repo.gitRetry(ctx, nil, "branch", "-D", "--", t.Branch); err != nil {
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
	repo, err := m.repo(ctx, repoPath)
	if err != nil {
		return nil, fmt.Errorf("collect leftover worktrees: %w", err)
	}
	top := repo.WorkTree
	unlock, err := lockRepo(repo.CommonDir)
	if err != nil {
		return nil, fmt.Errorf("collect leftover worktrees: %w", err)
	}
	registered, err := pruneRecords(ctx, repo)
	unlock()
	if err != nil {
		return nil, fmt.Errorf("collect leftover worktrees of %s: %w", top, err)
	}
	root := m.root
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	sw := sweep{m: m, repo: repo, registered: registered, root: root}
	sw.registeredTrees()
	sw.unregisteredTrees()
	sw.emptyDirs()
	if err := errors.Join(sw.errs...); err != nil {
		return sw.removed, fmt.Errorf("collect leftover worktrees of %s: %w", top, err)
	}
	return sw.removed, nil
}

// pruneRecords prunes the repository's stale worktree records and returns those left, by
// worktree path (see registeredWorktrees). The caller holds the repository's lock.
func pruneRecords(ctx context.Context, repo repoDirs) (map[string]string, error) {
	if _, err := repo.gitRetry(ctx, nil, "worktree", "prune"); err != nil {
		return nil, err
	}
	return registeredWorktrees(repo.CommonDir)
}

// sweep is one CollectLeftovers pass over a repository's trees under the Manager's root:
// what it removed and what failed, so that one stuck tree does not stop the others.
type sweep struct {
	m          *Manager
	repo       repoDirs
	registered map[string]string // worktree path -> its record in the repository
	root       string            // m.root with symlinks resolved, as git reports paths
	removed    []string
	errs       []error
}

// registeredTrees removes the registered worktrees under the root that are not live, and
// then their records.
func (sw *sweep) registeredTrees() {
	var admins []string
	for _, path := range slices.Sorted(maps.Keys(sw.registered)) {
		// Prepare makes trees as direct children of the root; a record naming
		// anything deeper (the records are writable from a worktree) could
		// otherwise point into a live tree.
		if parent := filepath.Dir(path); parent != sw.root && parent != sw.m.root || sw.m.isLive(path) {
			continue
		}
		if err := removeTree(path); err != nil {
			sw.errs = append(sw.errs, err)
			continue
		}
		sw.removed = append(sw.removed, path)
		admins = append(admins, sw.registered[path])
		sw.m.logger.Info("leftover worktree removed", "repo", sw.repo.WorkTree, "dir", path)
	}
	if len(admins) == 0 {
		return
	}
	unlock, err := lockRepo(sw.repo.CommonDir)
	if err != nil {
		sw.errs = append(sw.errs, err)
		return
	}
	for _, a := range admins {
		sw.errs = append(sw.errs, os.RemoveAll(a))
	}
	unlock()
}

// unregisteredTrees removes the trees `worktree prune` no longer lists. A crash inside
// Remove (its files half deleted, the .git file among them) leaves a directory that
// `worktree prune` no longer lists; a crash inside `worktree add` leaves one never
// registered. Prepare names this repository's trees <base>-...: those that are not live,
// not registered, and hold no .git or one naming a record of this repository that does
// not exist, are leftovers.
func (sw *sweep) unregisteredTrees() {
	entries, err := os.ReadDir(sw.m.root)
	if err != nil {
		return
	}
	prefix := filepath.Base(sw.repo.WorkTree) + "-"
	for _, e := range entries {
		p := filepath.Join(sw.m.root, e.Name())
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) || sw.m.isLive(p) || sw.registered[p] != "" || sw.registered[filepath.Join(sw.root, e.Name())] != "" {
			continue
		}
		if !unregisteredTree(sw.repo.CommonDir, p) {
			continue
		}
		if err := removeTree(p); err != nil {
			sw.errs = append(sw.errs, err)
			continue
		}
		sw.removed = append(sw.removed, p)
		sw.m.logger.Info("leftover worktree removed", "repo", sw.repo.WorkTree, "dir", p, "registered", false)
	}
}

// emptyDirs removes the empty directories under the root, which come from a crash between
// MkdirTemp and worktree add.
func (sw *sweep) emptyDirs() {
	entries, err := os.ReadDir(sw.m.root)
	if err != nil {
		return
	}
	for _, e := range entries {
		p := filepath.Join(sw.m.root, e.Name())
		if sub, err := os.ReadDir(p); e.IsDir() && err == nil && len(sub) == 0 {
			if !sw.m.isLive(p) && os.Remove(p) == nil {
				sw.removed = append(sw.removed, p)
			}
		}
	}
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

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// unregisteredTree says whether dir, under the root and not registered, is a leftover of
// this repository: it has no .git (half removed, or never registered), or its .git file
// names a record under commonDir/worktrees that no longer exists.
func unregisteredTree(commonDir, dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, ".git"))
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	if err != nil {
		return false
	}
	target, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir: ")
	if !ok {
		return false
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(dir, target)
	}
	if filepath.Dir(filepath.Clean(target)) != filepath.Join(commonDir, "worktrees") {
		return false // another repository's tree
	}
	_, err = os.Stat(target)
	return errors.Is(err, os.ErrNotExist)
}

// removeTree is os.RemoveAll that first makes the directories a check left unreadable or
// unwritable (chmod 0300, 0500) accessible again, so no test can keep its files on disk past
// the attempt, nor past the next start's clean-up. Symlinks are not followed.
func removeTree(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			if os.Chmod(p, 0o700) == nil && err != nil {
				// Unreadable when first met: now readable, walk it again.
				_ = removeTree(p)
			}
		}
		return nil
	})
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	return nil
}
