package sandbox

import (
	"fmt"
	"math"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// closeRangeCloexec is CLOSE_RANGE_CLOEXEC (linux/close_range.h): close_range marks the
// descriptors close-on-exec instead of closing them.
const closeRangeCloexec = 1 << 2

// closeInheritedOnExec marks every descriptor of ticketd from 3 up close-on-exec. What Go
// opens is so already; what ticketd inherited from whatever started it (a shell, a cron, a
// supervisor, an operator's terminal) is not, and os/exec would hand it to every command it
// starts: through bwrap into every check, which could read a file the sandbox hides through
// it, write to a terminal, or hold a socket's other end. Command calls it each time, so a
// descriptor that appears later is caught too.
func closeInheritedOnExec() error {
	if err := unix.CloseRange(3, math.MaxUint32, closeRangeCloexec); err == nil {
		return nil
	}
	// A kernel before 5.11: one descriptor at a time.
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("sandbox: list ticketd's descriptors to keep them from the checks: %w", err)
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd < 3 {
			continue
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil || flags&unix.FD_CLOEXEC != 0 {
			continue // closed meanwhile (the listing's own), or already so
		}
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, flags|unix.FD_CLOEXEC); err != nil {
			return fmt.Errorf("sandbox: keep ticketd's descriptor %d from the checks: %w", fd, err)
		}
	}
	return nil
}
