package worktree

import "syscall"

// dieWithParent has the kernel send git SIGTERM when ticketd dies; git then removes its
// lock files (those it made after its first) and ends its own children (a push's
// transport). Only for a git that talks to a remote: see ownProcessGroup.
func dieWithParent(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGTERM }
