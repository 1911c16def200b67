package worktree

import "syscall"

// dieWithParent has the kernel send git SIGTERM when ticketd dies; git then removes its
// lock files and ends its own children (a push's transport).
func dieWithParent(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGTERM }
