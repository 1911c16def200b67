package worktree

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Republish makes branch hold the change of commit from (a kept attempt: one commit on its
// base) under a new message: a commit with from's tree, parent, author and committer, and
// message. The same inputs always make the same commit, so a publish interrupted after this
// step and run again finds branch already where it would put it, and goes on; a branch of
// that name at any other commit gives ErrBranchExists. It returns the commit. Plumbing only
// (commit-tree, update-ref): no hook or filter runs.
func Republish(ctx context.Context, dir, from, branch, message string) (string, error) {
	if strings.HasPrefix(from, "-") || strings.HasPrefix(branch, "-") {
		return "", fmt.Errorf("publish %q as %q: a name may not start with a dash", from, branch)
	}
	repo, err := openRepo(ctx, dir)
	if err != nil {
		return "", err
	}
	if out, err := repo.git(ctx, nil, "check-ref-format", "--branch", branch); err != nil || strings.TrimSpace(out) == "" {
		return "", fmt.Errorf("publish %s: invalid branch name %q: %w", from, branch, err)
	}
	meta, err := repo.git(ctx, nil, "log", "-1", "--no-show-signature", "--format=%T%x00%P%x00%an%x00%ae%x00%ad%x00%cn%x00%ce%x00%cd", "--date=raw", from+"^{commit}", "--")
	if err != nil {
		return "", fmt.Errorf("publish %s as %s: read the kept commit: %w", from, branch, err)
	}
	f := strings.Split(strings.TrimRight(meta, "\n"), "\x00")
	if len(f) != 8 || strings.Contains(f[1], " ") || f[1] == "" {
		return "", fmt.Errorf("publish %s as %s: the kept change is not one commit on its base (parents %q)", from, branch, f[1])
	}
	env := []string{"GIT_AUTHOR_NAME=" + f[2], "GIT_AUTHOR_EMAIL=" + f[3], "GIT_AUTHOR_DATE=" + f[4],
		"GIT_COMMITTER_NAME=" + f[5], "GIT_COMMITTER_EMAIL=" + f[6], "GIT_COMMITTER_DATE=" + f[7]}
	commit, err := repo.gitInput(ctx, env, []byte(cleanMessage(message)), "commit-tree", f[0], "-p", f[1], "-F", "-")
	if err != nil {
		return "", fmt.Errorf("publish %s as %s: %w", from, branch, err)
	}
	commit = strings.TrimSpace(commit)
	if _, err := repo.gitRetry(ctx, nil, "update-ref", "--no-deref", "-m", "ticketd: accept", "refs/heads/"+branch, commit, ""); err != nil {
		cur, rerr := repo.git(ctx, nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch)
		cur = strings.TrimSpace(cur)
		if rerr == nil && cur == commit {
			return commit, nil // an earlier run of the same publish got this far
		}
		if rerr == nil {
			// An earlier run under another message (another operator): the same change on
			// the same base is the same publication.
			if same, _ := repo.git(ctx, nil, "log", "-1", "--format=%T%x00%P", cur, "--"); strings.TrimRight(same, "\n") == f[0]+"\x00"+f[1] {
				return cur, nil
			}
		}
		if rerr == nil {
			return "", fmt.Errorf("publish %s as %s: %w at %s", from, branch, ErrBranchExists, short(strings.TrimSpace(cur)))
		}
		return "", fmt.Errorf("publish %s as %s: %w", from, branch, err)
	}
	return commit, nil
}

// CommitPatch is the diff commit makes on its first parent, as a patch file holds it.
func CommitPatch(ctx context.Context, dir, commit string) (string, error) {
	if strings.HasPrefix(commit, "-") {
		return "", errors.New("a commit may not start with a dash")
	}
	repo, err := openRepo(ctx, dir)
	if err != nil {
		return "", err
	}
	out, err := repo.git(ctx, nil, "diff-tree", "-r", "-p", "--binary", "--no-renames", "--no-color", "--no-ext-diff", "--no-textconv", commit+"^", commit, "--")
	if err != nil {
		return "", fmt.Errorf("diff %s: %w", commit, err)
	}
	return out, nil
}
