package worktree

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Branches lists the local branches of the repository at dir whose name starts with
// prefix (such as "ticketd/12-": one ticket's attempt branches), sorted by name.
func Branches(ctx context.Context, dir, prefix string) ([]string, error) {
	repo, err := openRepo(ctx, dir)
	if err != nil {
		return nil, err
	}
	out, err := repo.git(ctx, nil, "for-each-ref", "--format=%(refname:short)", "--sort=refname", "refs/heads/"+prefix+"*")
	if err != nil {
		return nil, fmt.Errorf("list branches %s* in %s: %w", prefix, dir, err)
	}
	var names []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			names = append(names, l)
		}
	}
	return names, nil
}

// ErrBranchExists is returned by SaveAs when the branch it would create already exists.
var ErrBranchExists = errors.New("branch already exists")

// SaveAs creates branch at the tree's current HEAD commit (after Commit) without checking it
// out, so the commit outlives the tree and its working branch. It never moves an existing
// branch: one of that name gives ErrBranchExists, and the caller picks another name.
// update-ref is plumbing: no hook, filter or other repository-configured command runs.
func (t *Tree) SaveAs(ctx context.Context, branch string) error {
	head, err := t.dirs().git(ctx, nil, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return fmt.Errorf("save worktree %s as %s: read HEAD: %w", t.Dir, branch, err)
	}
	repo := repoDirs{GitDir: t.commonDir, CommonDir: t.commonDir, WorkTree: t.RepoPath}
	if out, err := repo.git(ctx, nil, "check-ref-format", "--branch", branch); err != nil || strings.TrimSpace(out) == "" {
		return fmt.Errorf("save worktree %s: invalid branch name %q: %w", t.Dir, branch, err)
	}
	// An empty old value makes update-ref refuse a ref that exists: the check and the
	// creation are one step.
	if _, err := repo.gitRetry(ctx, nil, "update-ref", "--no-deref", "refs/heads/"+branch, strings.TrimSpace(head), ""); err != nil {
		var ge *gitError
		if errors.As(err, &ge) && (strings.Contains(ge.Stderr, "already exists") || strings.Contains(ge.Stderr, "reference already exists")) {
			return fmt.Errorf("save worktree %s as %s: %w", t.Dir, branch, ErrBranchExists)
		}
		return fmt.Errorf("save worktree %s as %s: %w", t.Dir, branch, err)
	}
	return nil
}

// SaveOver points branch at the tree's current HEAD commit, creating it or moving it
// forward: for a branch that holds the latest work of one thing (a released attempt's
// partial change, kept again when the same attempt is stopped again). A HEAD that does not
// descend from the branch is joined to it in a merge with HEAD's files (ontoOld). A branch
// checked out in a worktree is refused.
func (t *Tree) SaveOver(ctx context.Context, branch string) error {
	head, err := t.dirs().git(ctx, nil, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return fmt.Errorf("save worktree %s over %s: read HEAD: %w", t.Dir, branch, err)
	}
	repo := repoDirs{GitDir: t.commonDir, CommonDir: t.commonDir, WorkTree: t.RepoPath}
	if out, err := repo.git(ctx, nil, "check-ref-format", "--branch", branch); err != nil || strings.TrimSpace(out) == "" {
		return fmt.Errorf("save worktree %s: invalid branch name %q: %w", t.Dir, branch, err)
	}
	// Under the repository's lock: a `git worktree list` beside a `git worktree add` of
	// another worker can fail on the half-written worktree ("failed to read commondir"), and a
	// failed list must refuse, not skip the check.
	unlock, err := lockRepo(t.commonDir)
	if err != nil {
		return fmt.Errorf("save worktree %s over %s: %w", t.Dir, branch, err)
	}
	defer unlock()
	list, err := repo.git(ctx, nil, "worktree", "list", "--porcelain")
	if err != nil {
		return fmt.Errorf("save worktree %s over %s: list worktrees: %w", t.Dir, branch, err)
	}
	if strings.Contains(list, "\nbranch refs/heads/"+branch+"\n") {
		return fmt.Errorf("save worktree %s over %s: the branch is checked out in a worktree", t.Dir, branch)
	}
	head = strings.TrimSpace(head)
	target, old, err := t.ontoOld(ctx, repo, branch, head)
	if err != nil {
		return fmt.Errorf("save worktree %s over %s: %w", t.Dir, branch, err)
	}
	// The old value (empty: the branch must not exist) refuses a branch moved meanwhile.
	if _, err := repo.gitRetry(ctx, nil, "update-ref", "--no-deref", "refs/heads/"+branch, target, old); err != nil {
		return fmt.Errorf("save worktree %s over %s: %w", t.Dir, branch, err)
	}
	return nil
}

// ontoOld is the commit SaveOver points branch at, and the commit branch points at now (""
// for none). A branch whose commit head does not descend from (the same attempt stopped a
// second time, from the base again) gets a merge of the two, with head's files: the branch
// only moves forward, so its push to a remote that has the old commit is a fast-forward,
// never refused for want of a force (ticketd never forces), and the earlier work stays
// in its history.
func (t *Tree) ontoOld(ctx context.Context, repo repoDirs, branch, head string) (target, old string, err error) {
	out, err := repo.git(ctx, nil, "for-each-ref", "--format=%(objectname)", "refs/heads/"+branch)
	if err != nil {
		return "", "", fmt.Errorf("read %s: %w", branch, err)
	}
	old = strings.TrimSpace(out)
	if old == "" || old == head {
		return head, old, nil
	}
	_, err = repo.git(ctx, nil, "merge-base", "--is-ancestor", old, head)
	switch {
	case err == nil:
		return head, old, nil
	case exitCode(err) != 1:
		return "", "", fmt.Errorf("compare %s with the tree's HEAD: %w", branch, err)
	}
	name := cmpOr(t.authorName, DefaultAuthorName)
	email := cmpOr(t.authorEmail, DefaultAuthorEmail)
	env := []string{
		"GIT_AUTHOR_NAME=" + name, "GIT_AUTHOR_EMAIL=" + email,
		"GIT_COMMITTER_NAME=" + name, "GIT_COMMITTER_EMAIL=" + email,
	}
	msg := fmt.Sprintf("ticketd: keep %s's earlier work beside the latest\n\nThe files are the latest commit's (%s); the other parent is what %s held before.\n", branch, head, branch)
	merged, err := repo.gitInput(ctx, env, []byte(msg), "commit-tree", head+"^{tree}", "-p", head, "-p", old, "-F", "-")
	if err != nil {
		return "", "", fmt.Errorf("join %s's earlier commit: %w", branch, err)
	}
	return strings.TrimSpace(merged), old, nil
}

// DeleteBranch deletes a local branch of the repository at dir; a branch that does not exist
// is not an error. git refuses to delete a branch checked out in a worktree, so a live
// attempt's branch survives a mistaken call.
func DeleteBranch(ctx context.Context, dir, branch string) error {
	repo, err := openRepo(ctx, dir)
	if err != nil {
		return err
	}
	unlock, err := lockRepo(repo.CommonDir)
	if err != nil {
		return fmt.Errorf("delete branch %s: %w", branch, err)
	}
	defer unlock()
	if _, err := repo.gitRetry(ctx, nil, "branch", "-D", "--", branch); err != nil {
		var ge *gitError
		if errors.As(err, &ge) && strings.Contains(ge.Stderr, "not found") {
			return nil
		}
		return fmt.Errorf("delete branch %s in %s: %w", branch, dir, err)
	}
	return nil
}
