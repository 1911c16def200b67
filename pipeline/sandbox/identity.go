package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Identity is the host user and group a check runs as when ticketd runs as root, so that no
// code under test is root on the host anywhere: not for the kernel's own permission checks
// (sysctl files in /proc/sys, which check plain owner bits), not for the files it can reach.
// The zero value means Nobody.
type Identity struct {
	UID, GID int
}

// Nobody is the checks' host identity when ticketd runs as root and the config names no
// sandbox_user: uid and gid 65534 (nobody and nogroup on Debian). A dedicated user
// (useradd --system ticketd-check) is better: nothing else on the host runs as it.
var Nobody = Identity{UID: 65534, GID: 65534}

func (id Identity) orDefault() Identity {
	if id.UID <= 0 || id.GID <= 0 {
		return Nobody
	}
	return id
}

// OrDefault is id, or Nobody for the zero value: who a sandboxed command runs as when
// ticketd is root.
func (id Identity) OrDefault() Identity { return id.orDefault() }

func (id Identity) String() string { return fmt.Sprintf("uid %d, gid %d", id.UID, id.GID) }

// LookupIdentity resolves a sandbox_user value — a user name or a numeric uid — to that
// user's uid and primary group. Root (uid or gid 0) is refused: it would defeat the point.
func LookupIdentity(name string) (Identity, error) {
	u, err := user.Lookup(name)
	if err != nil {
		if _, numErr := strconv.Atoi(name); numErr != nil {
			return Identity{}, fmt.Errorf("sandbox_user: no user %q on this host (%v); create it: useradd --system --no-create-home --shell /usr/sbin/nologin %s", name, err, name)
		}
		if u, err = user.LookupId(name); err != nil {
			return Identity{}, fmt.Errorf("sandbox_user: no user with uid %s on this host (%v)", name, err)
		}
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	switch {
	case err1 != nil || err2 != nil:
		return Identity{}, fmt.Errorf("sandbox_user: user %q has a non-numeric uid %q or gid %q", name, u.Uid, u.Gid)
	case uid == 0 || gid == 0:
		return Identity{}, fmt.Errorf("sandbox_user: %q is uid %d, gid %d: checks never run as root or in root's group; name an unprivileged user", name, uid, gid)
	}
	return Identity{UID: uid, GID: gid}, nil
}

// rootInside is the id host root has inside the user namespace of a check when ticketd runs
// as root: mapped, so that bwrap may still bind the daemon's root-owned folders, but not 0,
// so that nothing there is root (a process whose uid becomes 0 in a user namespace regains
// every capability in it; none can become rootInside without one).
func rootInside(id Identity) int {
	if id.UID == 1 || id.GID == 1 {
		return 2
	}
	return 1
}

// nsCounts bound, in the checks' user namespace, what the kernel counts per user in every
// namespace up to the host's: a check's inotify instances and watches and its fanotify
// groups and marks are also charged to the namespace's owner there, host root when ticketd
// is root. Measured before this bound: one check held all 128 inotify instances root may
// have (fs.inotify.max_user_instances), and every root process on the host (systemd, udev,
// the daemon) got EMFILE from inotify_init until it ended. A test suite that watches files
// needs a few.
var nsCounts = []struct {
	name  string
	value int
}{{"max_inotify_instances", 16}, {"max_inotify_watches", 8192}, {"max_fanotify_groups", 16}, {"max_fanotify_marks", 8192}}

// nsCountScript sets nsCounts where the kernel has them: "echo N > /proc/sys/user/NAME && "
// for each.
var nsCountScript = func() string {
	var b strings.Builder
	for _, c := range nsCounts {
		p := "/proc/sys/user/" + c.name
		fmt.Fprintf(&b, "{ ! [ -e %s ] || echo %d > %s; } && ", p, c.value, p)
	}
	return b.String()
}()

// userNSStart makes the starts of newUserNamespace's helpers one at a time. Go forks a child
// of a new user namespace and has it wait, before it runs anything, for its ID maps on a pipe
// only the parent writes; two such forks at once each inherit the other's pipe. Were ticketd
// killed between them, each child would wait for the other to close a pipe it never closes,
// for good, with copies of all ticketd's descriptors: its instance and database locks held
// by two orphans, and no ticketd could start again (their parent-death signal is set only
// after that wait).
var userNSStart sync.Mutex

// Capabilities the helper of newUserNamespace keeps, in the checks' user namespace only:
// CAP_SYS_RESOURCE to set the namespace's counts; CAP_SYS_ADMIN and CAP_SYS_CHROOT to join
// the sandbox's mount namespace and mount its devpts instance (ptys.go); CAP_SYS_PTRACE, as
// root, to open that namespace at all (/proc/<pid>/ns/mnt of a process of another uid).
const (
	capSysChroot   = 18
	capSysPtrace   = 19
	capSysAdmin    = 21
	capSysResource = 24
)

// userNS is the user namespace of one command, and the helper that made it while it waits
// to mount the sandbox's devpts instance (ptys.go).
type userNS struct {
	// file is the namespace, for bwrap's --userns.
	file *os.File
	// helper is the process in the namespace; nil when it has ended or none waits.
	helper *exec.Cmd
	in     *os.File // the helper's stdin: the sandbox's pid is written there
	stderr *strings.Builder
	stop   context.CancelFunc // kills the helper
	ptys   int                // the bound it waits to mount, 0 for none
}

// close ends the helper if it still waits; the namespace stays open for bwrap.
func (u *userNS) close() {
	if u.helper == nil {
		return
	}
	u.in.Close()
	u.stop()
	u.helper.Wait()
	u.helper = nil
}

// newUserNamespace makes the user namespace of one command run as id: uid and gid id mapped
// to themselves, and, when ticketd is root, host root to rootInside, nothing else (a user
// may map only itself), and a limit of zero further user namespaces inside; bwrap joins it
// (--userns). As a user, id is ticketd's own user, who owns the namespace: the counts of
// nsCounts bound there what a check charges to it, which the daemon needs too (bwrap's
// own namespace has no bound, and a check took all 128 inotify instances of the daemon's
// user). Each command gets
// its own, so that the kernel counts its processes apart from every other command's
// (RLIMIT_NPROC is counted per user namespace and user: Limits). It starts a helper shell in
// the namespace; the helper sets user.max_user_namespaces to 0 there (a check can then make
// no user namespace of its own, which would give it capabilities again) and the counts of
// nsCounts, and waits. ticketd keeps the namespace by opening it. With ptys > 0 the helper
// then waits for the pid of the sandbox, set up, to mount its devpts instance of at most
// ptys pseudo-terminals (mountPtys); otherwise ticketd lets it go at once.
func newUserNamespace(ctx context.Context, id Identity, ptys int) (*userNS, error) {
	in := rootInside(id)
	script := "echo 0 > /proc/sys/user/max_user_namespaces && " + nsCountScript + "echo ready && read -r _"
	caps := []uintptr{capSysResource}
	if ptys > 0 {
		script = "echo 0 > /proc/sys/user/max_user_namespaces && " + nsCountScript + "echo ready && " + ptyMountScript(ptys)
		caps = append(caps, capSysAdmin, capSysChroot)
		if os.Geteuid() == 0 {
			caps = append(caps, capSysPtrace)
		}
	}
	hctx, stop := context.WithCancel(ctx)
	h := exec.CommandContext(hctx, "/bin/sh", "-c", script)
	h.Env = []string{"PATH=/usr/bin:/bin:/usr/sbin:/sbin"}
	h.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: in, HostID: 0, Size: 1}, {ContainerID: id.UID, HostID: id.UID, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: in, HostID: 0, Size: 1}, {ContainerID: id.GID, HostID: id.GID, Size: 1}},
		AmbientCaps: caps,
		Pdeathsig:   syscall.SIGKILL,
	}
	if os.Geteuid() != 0 {
		h.SysProcAttr.UidMappings = h.SysProcAttr.UidMappings[1:]
		h.SysProcAttr.GidMappings = h.SysProcAttr.GidMappings[1:]
	}
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		stop()
		return nil, fmt.Errorf("sandbox: user namespace for %s: %w", id, err)
	}
	h.Stdin = stdinR
	stdout, err := h.StdoutPipe()
	if err != nil {
		stop()
		stdinR.Close()
		stdinW.Close()
		return nil, fmt.Errorf("sandbox: user namespace for %s: %w", id, err)
	}
	u := &userNS{helper: h, in: stdinW, stderr: &strings.Builder{}, stop: stop, ptys: max(ptys, 0)}
	h.Stderr = u.stderr
	userNSStart.Lock()
	err = h.Start()
	userNSStart.Unlock()
	stdinR.Close()
	if err != nil {
		stop()
		stdinW.Close()
		return nil, fmt.Errorf("%w: create a user namespace for the checks (%s): %v; user namespaces must be enabled (sysctl user.max_user_namespaces > 0)", ErrUnavailable, id, err)
	}
	// A helper that never says ready is killed after 20 s, as the command's context would.
	slow := time.AfterFunc(20*time.Second, stop)
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	slow.Stop()
	if strings.TrimSpace(line) != "ready" {
		u.close()
		return nil, fmt.Errorf("%w: the checks' user namespace (%s) could not forbid further user namespaces: %s", ErrUnavailable, id, strings.TrimSpace(u.stderr.String()))
	}
	f, err := os.Open("/proc/" + strconv.Itoa(h.Process.Pid) + "/ns/user")
	if err != nil {
		u.close()
		return nil, fmt.Errorf("sandbox: open the checks' user namespace: %w", err)
	}
	u.file = f
	if ptys <= 0 {
		u.close()
	}
	return u, nil
}

// grantWrite makes what a check may write — the worktree dir, and reports (its own scratch
// folder) — writable by id when ticketd runs as root: the worktree through its group (each
// folder group-writable and setgid, so files made later keep the group; ticketd's git keeps
// working, since the owner does not change), the scratch folder by ownership. Each entry
// named .git is left alone: git metadata is never the check's to change. A worktree made
// ready when it was created (ReadyForChecks) is not walked: what ticketd wrote in it since
// was born in the group, so only a file ticketd wrote with a narrower mode of its own (a new
// file the maker writes is 0644) stays read-only to the checks.
func grantWrite(dir, reports string, id Identity) error {
	if !readyForChecks(dir, id.GID) {
		if err := grantTree(dir, id); err != nil {
			return err
		}
	}
	if reports == "" {
		return nil
	}
	return filepath.WalkDir(reports, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if err := os.Lchown(p, id.UID, id.GID); err != nil {
			return fmt.Errorf("sandbox: give the check's folder %s to %s: %w", p, id, err)
		}
		return nil
	})
}

// grantTree gives every entry of the worktree dir to id's group (grantEntry): the grant of a
// worktree not made ready for checks when it was created (ReadyForChecks).
func grantTree(dir string, id Identity) error {
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if strings.EqualFold(d.Name(), ".git") && p != dir {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		return grantEntry(dir, rel, id.GID)
	})
	if err != nil {
		return fmt.Errorf("sandbox: make the worktree %s writable for the checks' group %d: %w", dir, id.GID, err)
	}
	return nil
}

// grantEntry gives the worktree entry rel (relative to dir, "." for dir itself) to group
// gid and makes it group-writable (a folder also setgid, so what the check creates in it
// keeps the group). The path is opened one element at a time without following any symlink,
// and the entry is changed through that descriptor: an entry the walk listed as a file,
// or a folder on its path, swapped for a symlink since (by code under test) leads nowhere
// outside the worktree; it is skipped. Symlinks, FIFOs and sockets are not made writable,
// and an entry gone meanwhile is no error: a check may still be cleaning up.
func grantEntry(dir, rel string, gid int) error {
	fd, err := openNoFollow(dir, rel)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			return nil // gone, or a symlink now: nothing of the worktree's to grant
		}
		return fmt.Errorf("open %s: %w", rel, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat %s: %w", rel, err)
	}
	kind := st.Mode & unix.S_IFMT
	if kind == unix.S_IFLNK {
		return nil
	}
	if int(st.Gid) != gid {
		if err := unix.Fchownat(fd, "", -1, gid, unix.AT_EMPTY_PATH); err != nil {
			return fmt.Errorf("give %s to group %d: %w", rel, gid, err)
		}
		if err := unix.Fstat(fd, &st); err != nil { // chown clears setgid bits
			return fmt.Errorf("stat %s: %w", rel, err)
		}
	}
	want := st.Mode&0o7777 | 0o060
	switch kind {
	case unix.S_IFDIR:
		want |= 0o010 | unix.S_ISGID
	case unix.S_IFREG:
	default:
		return nil // a FIFO or socket a check left: nothing to grant
	}
	if want == st.Mode&0o7777 {
		return nil
	}
	// An O_PATH descriptor takes no fchmod; its /proc link names exactly the opened entry.
	if err := unix.Fchmodat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), want, 0); err != nil {
		return fmt.Errorf("make %s group-writable: %w", rel, err)
	}
	return nil
}

// openNoFollow opens rel below dir as an O_PATH descriptor, walking it one element at a
// time with O_NOFOLLOW: a symlink anywhere on the way fails with ELOOP or ENOTDIR.
func openNoFollow(dir, rel string) (int, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if rel == "." {
		return fd, nil
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	for i, part := range parts {
		flags := unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if i < len(parts)-1 {
			flags |= unix.O_DIRECTORY
		}
		next, err := unix.Openat(fd, part, flags, 0)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// asUser prepares cmd, the bwrap command of a ticketd run as root, to run its command as
// s.User: a user namespace of its own as descriptor userNSFD (closed on ticketd's side once
// bwrap has started), none of root's supplementary
// groups (bwrap would keep them), the worktree and reports made writable for that user.
func (s Spec) asUser(ctx context.Context, cmd *exec.Cmd) (*userNS, error) {
	id := s.User.orDefault()
	ns, err := newUserNamespace(ctx, id, s.Limits.PtyCount())
	if err != nil {
		return nil, err
	}
	cmd.ExtraFiles = []*os.File{ns.file}
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{}}
	// bwrap's parent stays host root while the sandbox's init is id: the kernel does not let
	// the one's parent-death signal reach the other, so --die-with-parent alone would leave
	// the sandbox behind. Started as the init of a PID namespace of its own, bwrap takes
	// every process of the check with it when it ends, however it ends.
	cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWPID
	if err := grantWrite(s.Dir, s.Reports, id); err != nil {
		ns.close()
		ns.file.Close()
		return nil, err
	}
	return ns, nil
}
