package worktree

import (
	"fmt"
	"sort"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// FilesAt lists the files of a commit, read straight from the object database with go-git:
// no subprocess, no checkout, and the same answer whatever state a working copy is in. A
// Repository is opened per call because go-git's is not safe for concurrent use.
func FilesAt(repoPath, commit string) ([]string, error) {
	repo, err := gogit.PlainOpenWithOptions(repoPath, &gogit.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if err != nil {
		return nil, fmt.Errorf("open repository %s: %w", repoPath, err)
	}
	c, err := repo.CommitObject(plumbing.NewHash(commit))
	if err != nil {
		return nil, fmt.Errorf("read commit %s in %s: %w", commit, repoPath, err)
	}
	tree, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("read tree of %s in %s: %w", commit, repoPath, err)
	}
	var files []string
	err = tree.Files().ForEach(func(f *object.File) error {
		files = append(files, f.Name)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list files of %s in %s: %w", commit, repoPath, err)
	}
	sort.Strings(files)
	return files, nil
}
