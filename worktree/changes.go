package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Change is one file as the maker's tools last wrote it. A fix is exactly its changes: the
// commit, the patch and the review's diff are built from them in git's object database,
// never from the working copy, where the checks (code ticketd did not write) may have left
// files of their own or edited tracked ones.
type Change struct {
	Path       string // relative to the tree, slash-separated
	Data       []byte
	Executable bool
}

// changesIndexName is the private index the changes are staged into, in the tree's git dir.
const changesIndexName = "ticketd-changes-index"

// validChange refuses a path that is not a plain relative path inside the tree, outside .git:
// the maker's tools never produce one, and git must never be handed one.
func validChange(c Change) error {
	p := c.Path
	if p == "" || strings.HasPrefix(p, "/") || path.Clean(p) != p || p == "." || strings.ContainsRune(p, 0) {
		return fmt.Errorf("change path %q is not a clean relative path", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." || strings.EqualFold(part, ".git") {
			return fmt.Errorf("change path %q leaves the tree or enters .git", p)
		}
	}
	return nil
}

// buildTree writes a tree object holding base's files with changes applied and returns its
// hash. Each blob is what `git add` of the file would store: the repository's end-of-line
// rules (an eol or text attribute, core.autocrlf) apply, so a file checked out with CRLF and
// written back with CRLF by the tools is stored with the LF the repository keeps, and the
// commit changes the lines the tools changed, not every line's ending. No filter driver
// runs: the repository's are switched off (filterOverrides), and none other is configured.
//
// The tree is kept on the Tree (builtMemo) under changesKey: a patch at a submit, the
// commit and the result's patch build the same tree from the same changes, five or more git
// processes each time.
func (t *Tree) buildTree(ctx context.Context, base string, changes []Change) (string, error) {
	key, keyed := t.changesKey("tree", base, changes)
	if keyed {
		if tree, ok := t.built.get(key); ok {
			return tree, nil
		}
	}
	tree, err := t.writeTree(ctx, base, changes)
	if err == nil && keyed {
		t.built.put(key, tree)
	}
	return tree, err
}

// writeTree is buildTree from git.
func (t *Tree) writeTree(ctx context.Context, base string, changes []Change) (string, error) {
	g := t.dirs()
	idx := filepath.Join(t.gitDir, changesIndexName)
	_ = os.Remove(idx)
	defer os.Remove(idx)
	env := []string{"GIT_INDEX_FILE=" + idx}
	if _, err := g.git(ctx, env, "read-tree", base); err != nil {
		return "", err
	}
	for _, c := range changes {
		if err := validChange(c); err != nil {
			return "", err
		}
	}
	if err := t.refuseSubmodulePaths(ctx, base, changes); err != nil {
		return "", err
	}
	var records bytes.Buffer
	for _, c := range changes {
		out, err := g.gitInput(ctx, nil, c.Data, "hash-object", "-w", "--stdin", "--path="+c.Path)
		if err != nil {
			return "", fmt.Errorf("store %s: %w", c.Path, err)
		}
		mode := "100644"
		if c.Executable {
			mode = "100755"
		}
		fmt.Fprintf(&records, "%s %s\t%s\x00", mode, strings.TrimSpace(out), c.Path)
	}
	if records.Len() > 0 {
		if _, err := g.gitInput(ctx, env, records.Bytes(), "update-index", "-z", "--index-info"); err != nil {
			return "", err
		}
	}
	out, err := g.git(ctx, env, "write-tree")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// refuseSubmodulePaths refuses a change at or under a submodule of base. A submodule's
// folder is empty in a worktree (ticketd initialises none), so the tools can write there,
// and a file staged at or under a gitlink replaces it: the commit would drop the submodule.
// One ls-tree lists the base's entries at every folder the changes go through.
func (t *Tree) refuseSubmodulePaths(ctx context.Context, base string, changes []Change) error {
	var paths []string
	for _, c := range changes {
		for p := c.Path; p != "."; p = path.Dir(p) {
			if !slices.Contains(paths, p) {
				paths = append(paths, p)
			}
		}
	}
	if len(paths) == 0 {
		return nil
	}
	args := append([]string{"ls-tree", "-z", "--full-tree", base, "--"}, paths...)
	out, err := t.dirs().git(ctx, literalPathspecs, args...)
	if err != nil {
		return fmt.Errorf("look up the changed paths at %s: %w", short(base), err)
	}
	for _, entry := range strings.Split(out, "\x00") {
		meta, name, _ := strings.Cut(entry, "\t")
		if f := strings.Fields(meta); len(f) == 3 && f[1] == "commit" {
			for _, c := range changes {
				if c.Path == name || strings.HasPrefix(c.Path, name+"/") {
					return fmt.Errorf("change %s: it is the submodule %s or inside it, which ticketd does not check out (committed, it would replace the submodule); fix it in the submodule's own repository", c.Path, name)
				}
			}
		}
	}
	return nil
}

// DiffChanges returns the unified diff (git format, binary-safe, no renames) from BaseCommit
// to BaseCommit with changes applied: what a commit of them would change. It is empty when
// the changes change nothing.
//
// The patch is kept on the Tree under changesKey, as the tree is: the result's patch is the
// last submit's.
func (t *Tree) DiffChanges(ctx context.Context, changes []Change) (string, error) {
	key, keyed := t.changesKey("patch", t.BaseCommit, changes)
	if keyed {
		if patch, ok := t.built.get(key); ok {
			return patch, nil
		}
	}
	patch, err := t.diffChanges(ctx, changes)
	if err == nil && keyed {
		t.built.put(key, patch)
	}
	return patch, err
}

// diffChanges is DiffChanges from git.
func (t *Tree) diffChanges(ctx context.Context, changes []Change) (string, error) {
	tree, err := t.buildTree(ctx, t.BaseCommit, changes)
	if err != nil {
		return "", fmt.Errorf("diff the changes in worktree %s: %w", t.Dir, err)
	}
	out, err := t.diffTrees(ctx, tree, "--binary", nil)
	if err != nil || !strings.Contains(out, "\nGIT binary patch\n") {
		return out, err
	}
	// A file diffed as binary may be text that the repository's attributes call binary
	// (`*.json -diff`, `*.py binary`): its diff would be base85 that no reviewer, judge or
	// human reads, and a change hidden in it would ship unread. Text by its content (as git
	// itself tells, before attributes) is diffed as text; only real binaries stay binary.
	var text, other []string
	for _, c := range changes {
		if t.textOnBothSides(ctx, c) {
			text = append(text, c.Path)
		} else {
			other = append(other, c.Path)
		}
	}
	if len(text) == 0 {
		return out, nil
	}
	asText, err := t.diffTrees(ctx, tree, "--text", text)
	if err != nil || len(other) == 0 {
		return asText, err
	}
	binary, err := t.diffTrees(ctx, tree, "--binary", other)
	return asText + binary, err
}

// diffTrees is git diff-tree from BaseCommit to tree, mode (--binary or --text), in the form
// DiffChanges returns; paths (literal) limit it when not nil.
func (t *Tree) diffTrees(ctx context.Context, tree, mode string, paths []string) (string, error) {
	args := append([]string{"diff-tree", "-r", "-p", mode, "--no-renames", "--no-color", "--no-ext-diff", "--no-textconv", t.BaseCommit, tree, "--"}, paths...)
	out, err := t.dirs().git(ctx, literalPathspecs, args...)
	if err != nil {
		return "", fmt.Errorf("diff the changes in worktree %s against %s: %w", t.Dir, short(t.BaseCommit), err)
	}
	return out, nil
}

// textOnBothSides reports whether c's new content and its base version (when it has one)
// are text as git's own test tells it (no NUL in the first 8,000 bytes), whatever the
// attributes say.
func (t *Tree) textOnBothSides(ctx context.Context, c Change) bool {
	if looksBinary(c.Data) {
		return false
	}
	base, found, err := t.FileAtBase(ctx, c.Path)
	if errors.Is(err, ErrNotRegularAtBase) {
		return true // a folder or a link at the base: nothing binary on that side
	}
	return err == nil && (!found || !looksBinary(base))
}

// looksBinary is git's buffer_is_binary: a NUL in the first 8,000 bytes.
func looksBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0
}

// CommitChanges commits changes on the tree's branch, on top of its HEAD, with the Manager's
// identity as author and committer, and returns the new commit's hash. Only the changes'
// paths differ from HEAD in the commit, whatever the working copy holds; the working copy
// and the tree's own index are not touched. No hook runs (it is plumbing: hash-object,
// write-tree, commit-tree, update-ref). ErrNothingToCommit when the changes change nothing.
func (t *Tree) CommitChanges(ctx context.Context, message string, changes []Change) (string, error) {
	if strings.TrimSpace(message) == "" {
		return "", fmt.Errorf("commit in worktree %s: empty commit message", t.Dir)
	}
	g := t.dirs()
	head, err := g.git(ctx, nil, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return "", fmt.Errorf("commit in worktree %s: read HEAD: %w", t.Dir, err)
	}
	head = strings.TrimSpace(head)
	tree, err := t.buildTree(ctx, head, changes)
	if err != nil {
		return "", fmt.Errorf("commit in worktree %s: %w", t.Dir, err)
	}
	headTree, err := g.git(ctx, nil, "rev-parse", "--verify", head+"^{tree}")
	if err != nil {
		return "", fmt.Errorf("commit in worktree %s: read HEAD's tree: %w", t.Dir, err)
	}
	if strings.TrimSpace(headTree) == tree {
		return "", fmt.Errorf("commit in worktree %s on %s: %w", t.Dir, t.Branch, ErrNothingToCommit)
	}
	name := cmpOr(t.authorName, DefaultAuthorName)
	email := cmpOr(t.authorEmail, DefaultAuthorEmail)
	env := []string{
		"GIT_AUTHOR_NAME=" + name, "GIT_AUTHOR_EMAIL=" + email,
		"GIT_COMMITTER_NAME=" + name, "GIT_COMMITTER_EMAIL=" + email,
	}
	msg := cleanMessage(message)
	commit, err := g.gitInput(ctx, env, []byte(msg), "commit-tree", tree, "-p", head, "-F", "-")
	if err != nil {
		return "", fmt.Errorf("commit in worktree %s on %s: %w", t.Dir, t.Branch, err)
	}
	commit = strings.TrimSpace(commit)
	// The old value makes the update refuse a branch that moved meanwhile.
	if _, err := g.gitRetry(ctx, nil, "update-ref", "-m", "ticketd: commit", "refs/heads/"+t.Branch, commit, head); err != nil {
		return "", fmt.Errorf("commit in worktree %s: move %s to the new commit: %w", t.Dir, t.Branch, err)
	}
	return commit, nil
}

// cleanMessage is git commit --cleanup=whitespace: trailing spaces and leading and trailing
// blank lines removed, runs of blank lines collapsed, one final newline.
func cleanMessage(msg string) string {
	var out []string
	blank := false
	for _, line := range strings.Split(strings.ReplaceAll(msg, "\r\n", "\n"), "\n") {
		line = strings.TrimRight(line, " \t")
		if line == "" {
			blank = len(out) > 0
			continue
		}
		if blank {
			out = append(out, "")
			blank = false
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n") + "\n"
}

// Leftovers lists the paths of the working copy that differ from BaseCommit with changes
// applied, sorted: what the checks wrote (new files, edited or deleted tracked files, a
// changed file edited again) that no tool wrote. Ignored files are not listed. It reads the
// working copy with git status, which opens no FIFO and follows no symlink, and compares the
// changed files through a non-blocking, no-follow open.
func (t *Tree) Leftovers(ctx context.Context, changes []Change) ([]string, error) {
	paths, err := t.status(ctx)
	if err != nil {
		return nil, fmt.Errorf("list what the checks left in worktree %s: %w", t.Dir, err)
	}
	byPath := map[string]Change{}
	for _, c := range changes {
		byPath[c.Path] = c
	}
	var left []string
	for _, p := range paths {
		if _, ok := byPath[p]; !ok {
			left = append(left, p)
		}
	}
	root, err := os.OpenRoot(t.Dir)
	if err != nil {
		return nil, fmt.Errorf("list what the checks left in worktree %s: %w", t.Dir, err)
	}
	defer root.Close()
	for _, c := range changes {
		if !sameContent(root, c.Path, c.Data) {
			left = append(left, c.Path)
		}
	}
	slices.Sort(left)
	return slices.Compact(left), nil
}

// sameContent reports whether the regular file at rel (resolved inside root) holds exactly
// data.
func sameContent(root *os.Root, rel string, data []byte) bool {
	f, err := root.OpenFile(filepath.FromSlash(rel), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Size() != int64(len(data)) {
		return false
	}
	got, err := io.ReadAll(io.LimitReader(f, int64(len(data))+1))
	return err == nil && bytes.Equal(got, data)
}

// Snapshot is the state of a working copy's changed paths at one moment: what git status
// lists (new files, edited and deleted tracked files; ignored files are not), with their
// contents. Tree.Undo puts a working copy back to it.
type Snapshot struct {
	files map[string]snapFile
}

type snapFile struct {
	data    []byte
	mode    os.FileMode
	present bool
}

// maxSnapshotFile bounds a changed file a snapshot keeps; a larger one (a check's output
// left from an earlier run) is kept as absent, so Undo removes it.
const maxSnapshotFile = 16 << 20

// status lists the paths git status reports as changed, untracked ones included. It may
// write the tree's own index with the stat data it refreshed (optional locks on, unlike
// ticketd's other git calls): a fresh checkout's entries are all "racily clean", and
// without that write every status would hash every file again (0.76 s instead of 0.04 s
// per run of checks on a 5,000-file repository).
func (t *Tree) status(ctx context.Context) ([]string, error) {
	out, err := t.dirs().gitRetry(ctx, []string{"GIT_OPTIONAL_LOCKS=1"}, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--ignore-submodules=all", "--ignored=no")
	if err != nil {
		return nil, err
	}
	// A check can leave tens of thousands of files: every step here is linear in them.
	var paths []string
	seen := map[string]bool{}
	for _, entry := range strings.Split(out, "\x00") {
		if len(entry) >= 4 && !seen[entry[3:]] {
			seen[entry[3:]] = true
			paths = append(paths, entry[3:])
		}
	}
	return paths, nil
}

// Snapshot records the working copy's changed paths and their contents, read without
// following a symlink or waiting on a FIFO.
func (t *Tree) Snapshot(ctx context.Context) (*Snapshot, error) {
	paths, err := t.status(ctx)
	if err != nil {
		return nil, fmt.Errorf("snapshot worktree %s: %w", t.Dir, err)
	}
	root, err := os.OpenRoot(t.Dir)
	if err != nil {
		return nil, fmt.Errorf("snapshot worktree %s: %w", t.Dir, err)
	}
	defer root.Close()
	s := &Snapshot{files: map[string]snapFile{}}
	for _, p := range paths {
		s.files[p] = readSnap(root, p)
	}
	return s, nil
}

// readSnap reads one path as a snapshot keeps it: a regular file's content and mode, or
// absent.
func readSnap(root *os.Root, rel string) snapFile {
	f, err := root.OpenFile(filepath.FromSlash(rel), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return snapFile{}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxSnapshotFile {
		return snapFile{}
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSnapshotFile+1))
	if err != nil || len(data) > maxSnapshotFile {
		return snapFile{}
	}
	return snapFile{data: data, mode: fi.Mode().Perm(), present: true}
}

// Undo puts the working copy back to s, undoing what ran since (the checks): a path the
// snapshot holds gets its recorded content back (or is removed again), any other changed path
// its content in the tree's index (tracked: the base's, or in a round the earlier fix's; a
// symlink comes back as a symlink) or is removed (untracked). Its cost is a few git
// processes, however many files the checks left. Ignored files stay: they are the
// checks' own caches and state between runs, which git never commits. It returns the paths
// it put back, sorted. No hook or filter runs, and every write stays inside the tree.
func (t *Tree) Undo(ctx context.Context, s *Snapshot) ([]string, error) {
	if err := reopenTop(t.Dir); err != nil {
		return nil, fmt.Errorf("undo the checks in worktree %s: %w", t.Dir, err)
	}
	root, err := os.OpenRoot(t.Dir)
	if err != nil {
		return nil, fmt.Errorf("undo the checks in worktree %s: %w", t.Dir, err)
	}
	defer root.Close()
	u := undo{t: t, root: root, snap: s}
	if os.Geteuid() != 0 {
		// A tracked file a check edited in a folder it then closed is invisible to git
		// status and unwritable: it would stay edited for the next check (see reopenDirs).
		if err := reopenDirs(ctx, root); err != nil {
			u.errs = append(u.errs, err)
		}
	}
	now, err := t.status(ctx)
	if err != nil {
		return nil, fmt.Errorf("undo the checks in worktree %s: %w", t.Dir, err)
	}
	for _, p := range undoCandidates(now, s) {
		if want, recorded := s.files[p]; recorded {
			u.restore(p, want)
		} else {
			u.toBase = append(u.toBase, p)
		}
	}
	tracked := u.checkoutBase(ctx)
	if len(u.toBase) > len(tracked) {
		u.removeUntracked(ctx, tracked)
	}
	slices.Sort(u.put)
	if err := errors.Join(u.errs...); err != nil {
		return u.put, fmt.Errorf("undo the checks in worktree %s: %w", t.Dir, err)
	}
	return u.put, nil
}

// undoCandidates are the paths Undo looks at, sorted: those changed now and those the
// snapshot recorded.
func undoCandidates(now []string, s *Snapshot) []string {
	candidates := slices.Clone(now)
	for p := range s.files {
		candidates = append(candidates, p)
	}
	slices.Sort(candidates)
	return slices.Compact(candidates)
}

// undo is one Undo in progress: the paths put back, those that go back to the base, and
// the errors met, so that one unwritable path does not stop the others.
type undo struct {
	t      *Tree
	root   *os.Root
	snap   *Snapshot
	put    []string
	toBase []string
	errs   []error
}

// restore gives p its recorded content and mode back, or removes it again, unless it is
// already so.
func (u *undo) restore(p string, want snapFile) {
	cur := readSnap(u.root, p)
	if cur.present == want.present && (!want.present || cur.mode == want.mode && bytes.Equal(cur.data, want.data)) {
		return
	}
	u.put = append(u.put, p)
	rel := filepath.FromSlash(p)
	if err := u.root.RemoveAll(rel); err != nil {
		u.errs = append(u.errs, err)
		return
	}
	if !want.present {
		return
	}
	if dir := filepath.Dir(rel); dir != "." {
		// 0777 less the umask, as git makes folders (group-writable in a worktree made
		// ready for the checks: sandbox.ReadyForChecks).
		if err := u.root.MkdirAll(dir, 0o777); err != nil {
			u.errs = append(u.errs, err)
			return
		}
	}
	if err := u.root.WriteFile(rel, want.data, want.mode); err != nil {
		u.errs = append(u.errs, err)
	}
}

// checkoutBase checks out, from the tree's own index, the paths to put back that the index
// holds, and returns them. The index is the tree's HEAD (the base commit, or in a round the
// fix it goes on from): what a path not in the snapshot held before the checks. One
// ls-files lists it and one checkout-index writes every path, read from stdin (a check may
// have left more paths than fit on a command line); git writes no entry through a symlink
// a check put in its way.
func (u *undo) checkoutBase(ctx context.Context) []string {
	if len(u.toBase) == 0 {
		return nil
	}
	g := u.t.dirs()
	out, err := g.git(ctx, nil, "ls-files", "-z", "--cached", "--full-name")
	if err != nil {
		u.errs = append(u.errs, fmt.Errorf("list the tree's tracked files: %w", err))
		return nil
	}
	inIndex := map[string]bool{}
	for _, p := range strings.Split(out, "\x00") {
		inIndex[p] = true
	}
	var tracked []string
	var stdin bytes.Buffer
	for _, p := range u.toBase {
		if inIndex[p] {
			tracked = append(tracked, p)
			stdin.WriteString(p)
			stdin.WriteByte(0)
		}
	}
	if len(tracked) == 0 {
		return nil
	}
	u.put = append(u.put, tracked...)
	if _, err := g.gitInput(ctx, nil, stdin.Bytes(), "checkout-index", "--force", "-z", "--stdin"); err != nil {
		u.errs = append(u.errs, err)
	}
	return tracked
}

// removeUntracked removes the paths to put back that the base lacks. They are listed again
// now that the tracked ones are back: a restored .gitignore makes the checks' ignored
// files ignored again, and those stay.
func (u *undo) removeUntracked(ctx context.Context, tracked []string) {
	again, err := u.t.status(ctx)
	if err != nil {
		u.errs = append(u.errs, err)
	}
	still := map[string]bool{}
	for _, p := range again {
		still[p] = true
	}
	for _, p := range tracked {
		still[p] = false
	}
	for _, p := range u.toBase {
		if !still[p] {
			continue
		}
		if _, recorded := u.snap.files[p]; recorded {
			continue
		}
		u.put = append(u.put, p)
		if err := u.root.RemoveAll(filepath.FromSlash(p)); err != nil {
			u.errs = append(u.errs, err)
		}
	}
}
