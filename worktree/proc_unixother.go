//go:build unix && !linux

package worktree

import "syscall"

// dieWithParent is a no-op where the system has no parent-death signal: git ends by itself.
func dieWithParent(*syscall.SysProcAttr) {}
