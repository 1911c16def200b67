package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Pseudo-terminals are a host-wide pool: every devpts instance but the host's own draws from
// kernel.pty.max less kernel.pty.reserve (3,071 here), and bwrap's --dev mounts an instance
// with no bound of its own. Measured before this bound: one check opened all 3,071, and every
// other check, and every container on the host, got ENOSPC from /dev/ptmx until it ended.
// The kernel bounds an instance by its max mount option, which bwrap does not pass, so each
// sandbox gets a second instance of at most Limits.PtyCount() ptys mounted over bwrap's
// /dev/pts (/dev/ptmx is bwrap's symlink to pts/ptmx, so it leads to the new one), before
// the check's command runs.
//
// Who may mount it: only a process with CAP_SYS_ADMIN in the checks' user namespace and
// inside it (devpts is mounted on behalf of the caller's own user namespace, and joining the
// sandbox's mount namespace needs CAP_SYS_ADMIN and CAP_SYS_CHROOT in the caller's). A Go
// process cannot join a user namespace (the kernel refuses it to a process of several
// threads), and a ticketd run as a user holds no capability of its own. The helper that
// made the namespace (newUserNamespace) is in it with those capabilities (ambient, so they
// outlive its exec); it waits, then runs nsenter into the sandbox's mount namespace and
// mount(8) there. mount -N would do the same without nsenter, but it first tests that it can
// return to its own mount namespace, which only host root may.
//
// When: bwrap names the sandbox's first process (--info-fd) before it has built the
// sandbox's mounts, so a devpts mounted then would lie under bwrap's. The command therefore
// starts through a shell (sandboxShellArgs) that, once bwrap has finished and released it,
// writes a line to readyFD and waits for one on goFD before it closes both and execs the
// command: ticketd mounts the instance in between, when nothing but that shell runs in the
// sandbox. A failed mount kills the sandbox before the command runs.

// ptyMountScript is the helper's part after "ready": read the sandbox's pid, join its mount
// namespace, mount the bounded instance over /dev/pts. The options are bwrap's own (nosuid,
// noexec, ptmxmode=0666, mode=620) with max added.
func ptyMountScript(ptys int) string {
	return `read -r pid && case "$pid" in ''|*[!0-9]*) exit 64;; esac && ` +
		`exec nsenter --mount=/proc/"$pid"/ns/mnt mount -t devpts -o nosuid,noexec,newinstance,ptmxmode=0666,mode=620,max=` +
		strconv.Itoa(ptys) + ` devpts /dev/pts`
}

// mountPtys has the helper mount the bounded devpts instance in the mount namespace of pid,
// a process of the sandbox, and waits for it to finish.
func (u *userNS) mountPtys(pid int) error {
	if u.helper == nil {
		return fmt.Errorf("no helper in the checks' user namespace is waiting to mount them")
	}
	h := u.helper
	_, werr := fmt.Fprintf(u.in, "%d\n", pid)
	u.in.Close()
	err := h.Wait()
	u.helper = nil
	u.stop()
	if werr != nil || err != nil {
		return fmt.Errorf("bound the sandbox's pseudo-terminals (pid %d) to %d: mount a devpts instance with max=%d over its /dev/pts: %v: %s; nsenter and mount(8) (util-linux) are needed",
			pid, u.ptys, u.ptys, errors.Join(err, werr), strings.TrimSpace(u.stderr.String()))
	}
	return nil
}

// readyFD and goFD are the descriptors of the sandbox's shell's hand-over (sandboxShellArgs):
// the two cmd.ExtraFiles after bwrap's block-fd.
func readyFD(euid int) int { return blockFD(euid) + 1 }
func goFD(euid int) int    { return blockFD(euid) + 2 }

// sandboxShellArgs start the command through a shell that closes descriptor userNSFD first
// (closeUserNSArgs) and, when the ptys are bounded, says on readyFD that the sandbox is
// built and waits on goFD for their devpts instance to be mounted; a go that never comes
// (ticketd closed its end) ends the shell before the command runs.
func sandboxShellArgs(euid int, ptys bool) []string {
	if !ptys {
		return closeUserNSArgs(euid)
	}
	r, g, ns := strconv.Itoa(readyFD(euid)), strconv.Itoa(goFD(euid)), strconv.Itoa(userNSFD)
	return []string{"/bin/sh", "-c", `echo ready >&` + r + ` && read -r _ <&` + g + ` && exec ` + ns + `<&- ` + r + `>&- ` + g + `<&- "$0" "$@"`}
}

// ptyHandover is ticketd's side of the shell's hand-over.
type ptyHandover struct {
	ns    *userNS
	ready *os.File // read end: the shell's "ready"
	goW   *os.File // write end: ticketd's go
}

// run waits for the sandbox to be built, has the instance mounted in the mount namespace of
// pid and lets the shell exec the command. An ended sandbox (bwrap failed, or was killed) is
// no error: there is nothing left to bound.
func (p *ptyHandover) run(pid int) error {
	defer p.close()
	line, _ := bufio.NewReader(p.ready).ReadString('\n')
	if line != "ready\n" {
		return nil // the shell never said ready: the sandbox ended first
	}
	if err := p.ns.mountPtys(pid); err != nil {
		return err
	}
	if _, err := p.goW.Write([]byte("go\n")); err != nil {
		return fmt.Errorf("release the sandbox's shell: %w", err)
	}
	return nil
}

// close lets go of ticketd's ends and of the helper: a shell still waiting for its go ends
// without running the command.
func (p *ptyHandover) close() {
	p.ready.Close()
	p.goW.Close()
	p.ns.close()
}
