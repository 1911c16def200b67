package worktree

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ErrDoesNotApply says a branch's changes do not apply on top of what a tree holds.
var ErrDoesNotApply = errors.New("does not apply")

// ApplyBranch applies what branch changes since it left the tree's base commit (their
// merge base) to the tree's working copy and index, on top of what is there: the night's
// agreement check stacks the fixes already published on one base, then the next one. A
// change that does not apply cleanly is ErrDoesNotApply, with git's words; the tree is
// then left as it was before the call.
func (t *Tree) ApplyBranch(ctx context.Context, branch string) error {
	if strings.HasPrefix(branch, "-") {
		return fmt.Errorf("apply %q: a branch name may not start with a dash", branch)
	}
	d := t.dirs()
	patch, err := d.git(ctx, nil, "diff", "--binary", "--full-index", "--no-renames", "--no-ext-diff", "--no-textconv",
		t.BaseCommit+"..."+branch, "--")
	if err != nil {
		return fmt.Errorf("read the changes of %s since %s: %w", branch, short(t.BaseCommit), err)
	}
	if patch == "" {
		return nil
	}
	if _, err := d.gitInput(ctx, nil, []byte(patch), "apply", "--index", "--whitespace=nowarn", "-"); err != nil {
		var ge *gitError
		if errors.As(err, &ge) && ctx.Err() == nil {
			return fmt.Errorf("apply %s on top of %s: %w: %s", branch, t.Dir, ErrDoesNotApply, strings.TrimSpace(ge.Stderr))
		}
		return fmt.Errorf("apply %s on top of %s: %w", branch, t.Dir, err)
	}
	return nil
}

// FileOn reads rel as branch holds it: found is false when branch has no such file (it
// deleted it); a link or a folder is an error (ErrNotRegularAtBase), as at the base.
func (t *Tree) FileOn(ctx context.Context, branch, rel string) (data []byte, found bool, err error) {
	if strings.HasPrefix(branch, "-") {
		return nil, false, fmt.Errorf("read %s on %q: a branch name may not start with a dash", rel, branch)
	}
	out, err := t.dirs().git(ctx, literalPathspecs, "ls-tree", "-z", "--full-tree", branch, "--", rel)
	if err != nil {
		return nil, false, fmt.Errorf("look up %s on %s: %w", rel, branch, err)
	}
	entry, _, _ := strings.Cut(out, "\x00")
	if entry == "" {
		return nil, false, nil
	}
	meta, name, _ := strings.Cut(entry, "\t")
	fields := strings.Fields(meta)
	if len(fields) != 3 || name != rel || fields[1] != "blob" || fields[0] == "120000" {
		return nil, false, fmt.Errorf("%s on %s (%s): %w", rel, branch, meta, ErrNotRegularAtBase)
	}
	blob, err := t.dirs().git(ctx, nil, "cat-file", "blob", fields[2])
	if err != nil {
		return nil, false, fmt.Errorf("read %s on %s: %w", rel, branch, err)
	}
	return []byte(blob), true, nil
}
