//go:build unix

package daemon

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// lockFile takes an exclusive, non-blocking flock on path and writes this process's pid in
// it; errLocked when another process holds it. The kernel drops the lock when the process
// ends, even by SIGKILL, so a crash leaves no stale lock.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errLocked
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() { f.Close() }, nil
}

// processEnded reports whether pid (decimal, as a lock names its holder) is a process that
// has ended: none, or a zombie. "unknown" or a live process is not.
func processEnded(pid string) bool {
	n, err := strconv.Atoi(pid)
	if err != nil || n <= 0 {
		return false
	}
	if err := syscall.Kill(n, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) S ...: the state follows the last ')', the command may hold one.
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
	return strings.HasPrefix(strings.TrimSpace(rest), "Z")
}

// lockDatabaseFile takes an exclusive, non-blocking flock on the SQLite database file itself,
// so the lock follows the file, not the path. errLocked names the holder's pid (from /proc/locks; "unknown"
// elsewhere). flock and SQLite's own locks (fcntl) do not meet; but closing any descriptor
// of the file drops the process's fcntl locks on it, so release must run after the store is
// closed.
func lockDatabaseFile(path string) (release func(), holder string, err error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, "", fmt.Errorf("open %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, flockHolder(f), errLocked
		}
		return nil, "", fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, "", nil
}

// flockHolder finds the pid holding a flock on f's file in /proc/locks.
func flockHolder(f *os.File) string {
	fi, err := f.Stat()
	if err != nil {
		return "unknown"
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "unknown"
	}
	data, err := os.ReadFile("/proc/locks")
	if err != nil {
		return "unknown"
	}
	// 1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF
	want := ":" + strconv.FormatUint(uint64(st.Ino), 10)
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && f[1] == "FLOCK" && strings.HasSuffix(f[5], want) && devMatches(f[5], uint64(st.Dev)) {
			return f[4]
		}
	}
	return "unknown"
}

// devMatches says whether /proc/locks' "MAJ:MIN:INO" names device dev.
func devMatches(field string, dev uint64) bool {
	parts := strings.Split(field, ":")
	if len(parts) != 3 {
		return false
	}
	maj, err1 := strconv.ParseUint(parts[0], 16, 32)
	mnr, err2 := strconv.ParseUint(parts[1], 16, 32)
	if err1 != nil || err2 != nil {
		return false
	}
	return unixMkdev(uint32(maj), uint32(mnr)) == dev
}

// unixMkdev is the kernel's encoding of a device number (glibc's makedev).
func unixMkdev(major, minor uint32) uint64 {
	return uint64(major&0x00000fff)<<8 | uint64(major&0xfffff000)<<32 | uint64(minor&0x000000ff) | uint64(minor&0xffffff00)<<12
}
