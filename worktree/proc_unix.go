//go:build unix

package worktree

import (
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// killGrace is how long a cancelled git has to remove its lock files before its group is
// killed.
const killGrace = 2 * time.Second

// ownProcessGroup starts cmd in a process group of its own, so a git child (a
// receive-pack, an index-pack, a hook) does not outlive a cancelled command. Cancellation
// first sends the group SIGTERM, on which git removes the lock files it holds: a SIGKILL
// leaves them, and a stale ref lock (refs/heads/x.lock, in the repository or in a local
// push remote) refuses every later update of that ref until a human deletes it. What is
// left of the group killGrace later (a hook that ignores SIGTERM) is killed. (A SIGTERM in
// the instant between git making its first lock and installing its handler leaves that
// lock too, see below; a cancellation, which must not wait out a long checkout, takes that
// chance, and Manager.RemoveStaleLocks removes such a lock at a later start.) Call the
// returned func once cmd was waited for: when the whole group is gone by then, it stops
// that kill, so the kill cannot reach a process group that reused the id.
//
// Where the system can (Linux), a git that talks to a remote (remote set) also gets SIGTERM
// when ticketd dies (a SIGKILL, the OOM killer): a push whose remote is slow to answer would
// otherwise run on, orphaned, and land after the next night started, or never end. Local
// commands do not: each ends by itself (no transport, no hook, its stdin a pipe that closes
// with ticketd), and a signal at a random moment can leave the lock it just made. git
// creates its first lock file before it installs the handler that removes it on a signal
// (strace of `git update-ref`: the openat of refs/heads/x.lock, then rt_sigaction(SIGTERM)),
// so a git told to die in between leaves x.lock, and every later update of that branch
// fails until a human removes it (TestSIGKILLNight met one).
func ownProcessGroup(cmd *exec.Cmd, remote bool) (waited func()) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if remote {
		dieWithParent(cmd.SysProcAttr)
	}
	var mu sync.Mutex
	var kill *time.Timer
	var pgid int
	cmd.Cancel = func() error {
		mu.Lock()
		defer mu.Unlock()
		pgid = -cmd.Process.Pid
		group := pgid
		kill = time.AfterFunc(killGrace, func() { syscall.Kill(group, syscall.SIGKILL) })
		return syscall.Kill(pgid, syscall.SIGTERM)
	}
	return func() {
		mu.Lock()
		defer mu.Unlock()
		if kill != nil && syscall.Kill(pgid, 0) == syscall.ESRCH {
			kill.Stop()
		}
	}
}
