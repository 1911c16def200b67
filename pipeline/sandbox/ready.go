package sandbox

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"syscall"
)

// A worktree made ready for the checks (ReadyForChecks) is born writable by the checks'
// group: everything created in it inherits the group (setgid) and the default ACL below,
// which gives the owning group what the creating call asked for the owner, whatever the
// umask. git's checkout creates files 0666 and folders 0777, so each comes out group-
// writable as it is written: no check has to walk the worktree to grant it (a walk that
// grows with the repository, and whose chmods change every file's ctime, so that git's next
// status reads every file again).
//
// defaultACL is that ACL in the kernel's xattr form (linux/posix_acl_xattr.h): version 2,
// then entries of tag, permissions and id, sorted by tag: the owner rwx, the owning group
// rwx, others r-x (what a 022 umask leaves them).
var defaultACL = aclXattr([3][2]uint16{{aclUserObj, 7}, {aclGroupObj, 7}, {aclOther, 5}})

const (
	aclXattrVersion = 2
	aclUserObj      = 0x01
	aclGroupObj     = 0x04
	aclOther        = 0x20
	aclUndefinedID  = 0xffffffff
	aclDefaultName  = "system.posix_acl_default"
)

func aclXattr(entries [3][2]uint16) []byte {
	b := binary.LittleEndian.AppendUint32(nil, aclXattrVersion)
	for _, e := range entries {
		b = binary.LittleEndian.AppendUint16(b, e[0])
		b = binary.LittleEndian.AppendUint16(b, e[1])
		b = binary.LittleEndian.AppendUint32(b, aclUndefinedID)
	}
	return b
}

// ReadyForChecks makes the new, empty worktree folder dir ready for checks run as id by a
// ticketd running as root: owned by id's group, group-writable, setgid, with the default
// ACL above. Call it before anything is checked out into dir. It does nothing for a ticketd
// not running as root (its checks run as itself). A file system without POSIX ACLs gives an
// error; the checks then grant the worktree by walking it, as for any other worktree.
func ReadyForChecks(dir string, id Identity) error {
	if os.Geteuid() != 0 {
		return nil
	}
	id = id.orDefault()
	if err := os.Lchown(dir, -1, id.GID); err != nil {
		return fmt.Errorf("sandbox: give the new worktree %s to the checks' group %d: %w", dir, id.GID, err)
	}
	if err := os.Chmod(dir, 0o770|os.ModeSetgid); err != nil {
		return fmt.Errorf("sandbox: make the new worktree %s group-writable: %w", dir, err)
	}
	if err := syscall.Setxattr(dir, aclDefaultName, defaultACL, 0); err != nil {
		return fmt.Errorf("sandbox: set the default ACL of the new worktree %s (does its file system support POSIX ACLs?): %w", dir, err)
	}
	return nil
}

// readyForChecks reports whether dir was made ready for checks of group gid by
// ReadyForChecks and still is: its group, its setgid, group-writable mode and its default
// ACL. Only root (ticketd) can change these on a folder root owns, so code under test
// cannot fake them; what a check creates inside is its own and needs no grant.
func readyForChecks(dir string, gid int) bool {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Uid != 0 || int(st.Gid) != gid || fi.Mode()&os.ModeSetgid == 0 || fi.Mode().Perm()&0o070 != 0o070 {
		return false
	}
	buf := make([]byte, 64)
	n, err := syscall.Getxattr(dir, aclDefaultName, buf)
	return err == nil && bytes.Equal(buf[:n], defaultACL)
}
