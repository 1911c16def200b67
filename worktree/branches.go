package worktree

import (
	"context"
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
