package worktree

import (
	"context"
	"fmt"
	"strings"
)

// PrepareFrom is Prepare for work that goes on from an earlier fix (a review round): the
// tree's branch starts at start's commit (the fix branch's head) instead of the base, while
// BaseCommit stays baseRef's commit, so checks, diffs and the gate still judge the whole fix
// against the base. start must descend from the base: a fix branch rebased or rewritten
// elsewhere is refused rather than worked on blindly.
func (m *Manager) PrepareFrom(ctx context.Context, repoPath, baseRef, branch, start string) (*Tree, error) {
	if start == "" {
		return nil, fmt.Errorf("prepare worktree of %s from a branch head: no start named", repoPath)
	}
	return m.prepare(ctx, repoPath, baseRef, branch, start)
}

// startCommit resolves start to a commit that descends from base.
func startCommit(ctx context.Context, repo repoDirs, base, start string) (string, error) {
	if strings.HasPrefix(start, "-") {
		return "", fmt.Errorf("prepare worktree from %q: a name may not start with a dash", start)
	}
	c, err := repo.git(ctx, nil, "rev-parse", "--verify", "--quiet", "--end-of-options", start+"^{commit}")
	if err != nil {
		if ctx.Err() != nil {
			return "", err
		}
		return "", fmt.Errorf("prepare worktree of %s from %q: %w; the fix branch is gone from the clone (push it back or requeue the ticket)", repo.WorkTree, start, ErrUnknownRef)
	}
	c = strings.TrimSpace(c)
	if _, err := repo.git(ctx, nil, "merge-base", "--is-ancestor", base, c); err != nil {
		return "", fmt.Errorf("prepare worktree of %s from %s (%s): it does not descend from the base %s; rebase it on the base or requeue the ticket", repo.WorkTree, start, short(c), short(base))
	}
	return c, nil
}

// ChangesSince returns the files the tree's HEAD changes since its base commit, as Changes
// read from git's objects (never the working copy): the earlier fix a round goes on from, so
// that the round's diff, checks and commit hold the whole fix. Deleted files and anything
// that is not a regular file or executable are refused: ticketd's tools never make them.
func (t *Tree) ChangesSince(ctx context.Context) ([]Change, error) {
	g := t.dirs()
	out, err := g.git(ctx, nil, "diff-tree", "-r", "-z", "--no-renames", t.BaseCommit, "HEAD", "--")
	if err != nil {
		return nil, fmt.Errorf("list the changes of %s since %s: %w", t.Branch, short(t.BaseCommit), err)
	}
	recs := strings.Split(out, "\x00")
	var changes []Change
	for i := 0; i+1 < len(recs); i += 2 {
		// ":<old mode> <new mode> <old sha> <new sha> <status>" then the path.
		f := strings.Fields(strings.TrimPrefix(recs[i], ":"))
		p := recs[i+1]
		if len(f) != 5 {
			return nil, fmt.Errorf("list the changes of %s: unexpected diff-tree record %q", t.Branch, recs[i])
		}
		mode, sha, status := f[1], f[3], f[4]
		if status == "D" || (mode != "100644" && mode != "100755") {
			return nil, fmt.Errorf("the fix on %s deletes %s or makes it a non-regular file (status %s, mode %s): ticketd does not go on from such a change", t.Branch, p, status, mode)
		}
		// As checked out (end-of-line rules; filter drivers stay off): the working copy
		// holds that, and the fix's blobs are stored from it again (buildTree).
		blob, err := g.git(ctx, nil, "cat-file", "--filters", "--path="+p, sha)
		if err != nil {
			return nil, fmt.Errorf("read %s at %s: %w", p, t.Branch, err)
		}
		changes = append(changes, Change{Path: p, Data: []byte(blob), Executable: mode == "100755"})
	}
	return changes, nil
}

// BranchHead returns the commit branch points at in the repository at dir.
func BranchHead(ctx context.Context, dir, branch string) (string, error) {
	if strings.HasPrefix(branch, "-") {
		return "", fmt.Errorf("head of branch %q: a name may not start with a dash", branch)
	}
	repo, err := openRepo(ctx, dir)
	if err != nil {
		return "", err
	}
	out, err := repo.git(ctx, nil, "rev-parse", "--verify", "--quiet", "--end-of-options", "refs/heads/"+branch+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("head of branch %s in %s: %w", branch, dir, err)
	}
	return strings.TrimSpace(out), nil
}

// ForkPoint returns the commit branch forked from baseRef ("" is HEAD) in the repository at
// dir: their merge base, the base commit a fix on branch was made and checked at.
func ForkPoint(ctx context.Context, dir, branch, baseRef string) (string, error) {
	if baseRef == "" {
		baseRef = "HEAD"
	}
	if strings.HasPrefix(branch, "-") || strings.HasPrefix(baseRef, "-") {
		return "", fmt.Errorf("fork point of %q from %q: a name may not start with a dash", branch, baseRef)
	}
	repo, err := openRepo(ctx, dir)
	if err != nil {
		return "", err
	}
	out, err := repo.git(ctx, nil, "merge-base", "refs/heads/"+branch, baseRef)
	if err != nil {
		return "", fmt.Errorf("fork point of branch %s from %s in %s: %w", branch, baseRef, dir, err)
	}
	return strings.TrimSpace(out), nil
}

// baseAndStart resolves baseRef ("" is HEAD) to the base commit, and the commit the branch
// starts at: the base, or start's commit when set.
func baseAndStart(ctx context.Context, repo repoDirs, baseRef, start string) (base, from string, err error) {
	if baseRef == "" {
		baseRef = "HEAD"
	}
	base, err = repo.git(ctx, nil, "rev-parse", "--verify", "--quiet", "--end-of-options", baseRef+"^{commit}")
	if err != nil {
		if ctx.Err() != nil {
			return "", "", err
		}
		return "", "", fmt.Errorf("prepare worktree of %s at %q: %w; check base_ref in the config (a branch, tag or commit that exists)", repo.WorkTree, baseRef, ErrUnknownRef)
	}
	base = strings.TrimSpace(base)
	if start == "" {
		return base, base, nil
	}
	from, err = startCommit(ctx, repo, base, start)
	return base, from, err
}
