package worktree

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// FilesAt lists the files (blobs: regular files and symlinks, not submodules)
// of a commit, slash-separated and sorted, read from the object database by
// `git ls-tree`: no checkout, the same answer whatever state a working copy
// is in, and no file contents read, so time and memory follow the number of
// files, not their size.
func FilesAt(repoPath, commit string) ([]string, error) {
	ctx := context.Background()
	repo, err := openRepo(ctx, repoPath)
	if err != nil {
		return nil, fmt.Errorf("list files of %s: %w", commit, err)
	}
	out, err := repo.git(ctx, nil, "ls-tree", "-r", "-z", "--full-tree", "--end-of-options", commit)
	if err != nil {
		return nil, fmt.Errorf("read commit %s in %s: %w", commit, repo.WorkTree, err)
	}
	return parseLsTree(out), nil
}

// parseLsTree takes the blob paths from `git ls-tree -z` output, entries of
// "<mode> SP <type> SP <object> TAB <path>" ending in NUL.
func parseLsTree(out string) []string {
	files := make([]string, 0, strings.Count(out, "\x00"))
	for len(out) > 0 {
		entry, rest, _ := strings.Cut(out, "\x00")
		out = rest
		meta, path, ok := strings.Cut(entry, "\t")
		if !ok {
			continue
		}
		if _, typ, _ := strings.Cut(meta, " "); strings.HasPrefix(typ, "blob ") {
			files = append(files, path)
		}
	}
	sort.Strings(files)
	return files
}
