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
// left of the group killGrace later (a hook that ignores SIGTERM) is killed. Call the
// returned func once cmd was waited for: when the whole group is gone by then, it stops
// that kill, so the kill cannot reach a process group that reused the id.
//
// Where the system can (Linux), git also gets SIGTERM when ticketd dies (a SIGKILL, the
// OOM killer): a push whose remote is slow to answer would otherwise run on, orphaned,
// and land after the next night started, or never end.
func ownProcessGroup(cmd *exec.Cmd) (waited func()) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(cmd.SysProcAttr)
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
