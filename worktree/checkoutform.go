package worktree

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
)

// CheckoutForms returns, by path, the changes whose bytes a checkout of their commit would
// not write back as they are, with the bytes it would write. The repository's rules for
// line endings and encodings (the text, eol and working-tree-encoding attributes,
// core.autocrlf, core.eol) apply when a file is committed and again when it is checked
// out: a file written with CRLF under `* text` is stored, published and checked out with
// LF. The checks must see what the branch holds, not what the tools wrote, or a test that
// reads its data in binary mode passes on bytes no one will ever check out. Each change is
// stored as buildTree stores it and read back through the same rules (no filter driver
// runs: the repository's are switched off). A change the working copy does not hold as
// given is left out: another version is in place for a while (the base's, for a run of the
// base's test configuration), and rewriting the file would undo that view.
func (t *Tree) CheckoutForms(ctx context.Context, changes []Change) (map[string][]byte, error) {
	g := t.dirs()
	out := map[string][]byte{}
	root, err := os.OpenRoot(t.Dir)
	if err != nil {
		return nil, fmt.Errorf("open worktree %s: %w", t.Dir, err)
	}
	defer root.Close()
	for _, c := range changes {
		if err := validChange(c); err != nil {
			return nil, err
		}
		if !sameContent(root, c.Path, c.Data) {
			continue
		}
		blob, err := g.gitInput(ctx, nil, c.Data, "hash-object", "-w", "--stdin", "--path="+c.Path)
		if err != nil {
			return nil, fmt.Errorf("store %s as a commit would: %w", c.Path, err)
		}
		form, err := g.git(ctx, nil, "cat-file", "--filters", "--path="+c.Path, strings.TrimSpace(blob))
		if err != nil {
			return nil, fmt.Errorf("read %s back as a checkout would: %w", c.Path, err)
		}
		if !bytes.Equal([]byte(form), c.Data) {
			out[c.Path] = []byte(form)
		}
	}
	return out, nil
}
