package sandbox

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// A check's SysV shared memory segments and message queues are memory in no process's Pss
// once no process maps them: a check that fills a segment and detaches from it, or fills
// message queues, keeps that memory for as long as it runs, unseen by the watch of its whole
// memory (memwatch.go). The check's IPC namespace is its own (bwrap's --unshare-ipc) and
// starts with the kernel's defaults, which bound nothing (kernel.shmall is 2^64 pages less a
// few; 32,000 message queues of 16 KiB are 500 MiB). Measured before this bound: a check
// under a 64 MiB memory limit kept 256 MiB in detached segments and 256 MiB in message
// queues, all it tried. ipcLimits are the namespace's settings that bound them.
//
// The memory of a segment is reserved at shmget against kernel.shmall, so a check's segments
// together never exceed it, mapped or not: shmall is the memory limit. Message queues hold at
// most kernel.msgmni queues of kernel.msgmnb bytes (raising a queue's size needs
// CAP_SYS_RESOURCE, which a check never holds): msgmni is set so that they hold at most a
// sixteenth of the memory limit. POSIX message queues are bounded per process by
// RLIMIT_MSGQUEUE (800 KiB by default) and POSIX shared memory lives in the sandbox's
// 64 MiB /dev/shm, counted by the size watch.
func ipcLimits(mem int64) []sysctl {
	page := int64(os.Getpagesize())
	return []sysctl{
		{"kernel/shmmax", mem},
		{"kernel/shmall", max(mem/page, 1)},
		{"kernel/msgmni", max(1, min(32000, mem/16/msgmnb))},
		{"kernel/msgmnb", msgmnb},
	}
}

// msgmnb is the bytes a SysV message queue may hold: the kernel's default, set again so the
// bound of ipcLimits does not rest on it.
const msgmnb = 16 << 10

type sysctl struct {
	name  string // below /proc/sys
	value int64
}

// setIPCLimits writes ipcLimits(mem) into the IPC namespace of process pid, the sandbox's
// first process before its command runs. /proc/sys/kernel's IPC settings are those of the
// writer's IPC namespace: a thread of ticketd joins the check's, writes them and joins its
// own again before the Go runtime may use it for anything else. The thread must not end
// instead: every process ticketd started from it (bwrap, git, the user-namespace helpers)
// holds a parent-death signal, which the kernel sends when the creating thread exits, and a
// thread locked by a goroutine that ends is ended by the runtime (golang/go#27505); checks
// died at random that way. Joining needs CAP_SYS_ADMIN over the namespace and in ticketd's
// own user namespace, so only a ticketd run as root can; and as a user no one could write
// them anyway: the kernel lets only the uid that is 0 in the namespace's owning user
// namespace write them, and bwrap maps none.
func setIPCLimits(pid int, mem int64) error {
	ns, err := os.Open("/proc/" + strconv.Itoa(pid) + "/ns/ipc")
	if err != nil {
		return fmt.Errorf("open the IPC namespace of the sandbox (pid %d): %w", pid, err)
	}
	defer ns.Close()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		own, err := os.Open("/proc/thread-self/ns/ipc")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("open ticketd's own IPC namespace: %w", err)
			return
		}
		defer own.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWIPC); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("join the IPC namespace of the sandbox (pid %d): %w", pid, err)
			return
		}
		var werr error
		for _, s := range ipcLimits(mem) {
			if err := os.WriteFile("/proc/sys/"+s.name, []byte(strconv.FormatInt(s.value, 10)), 0); err != nil {
				werr = fmt.Errorf("bound the SysV IPC memory of the sandbox (pid %d): %w", pid, err)
				break
			}
		}
		if err := unix.Setns(int(own.Fd()), unix.CLONE_NEWIPC); err != nil {
			// Stuck in the check's namespace: the thread stays locked and ends with this
			// goroutine, the lesser harm than running ticketd's code there.
			errc <- errors.Join(werr, fmt.Errorf("return to ticketd's own IPC namespace: %w", err))
			return
		}
		runtime.UnlockOSThread()
		errc <- werr
	}()
	return <-errc
}
