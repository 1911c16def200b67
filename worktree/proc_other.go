//go:build !unix

package worktree

import "os/exec"

// ownProcessGroup is a no-op where process groups are unavailable:
// cancellation kills git itself only.
func ownProcessGroup(cmd *exec.Cmd, remote bool) (waited func()) { return func() {} }
