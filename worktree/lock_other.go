//go:build !unix

package worktree

// lockRepoFile is a no-op where flock is unavailable: worktree changes are
// then serialized only within one process.
func lockRepoFile(commonDir string) (func(), error) { return func() {}, nil }
