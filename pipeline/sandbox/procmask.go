package sandbox

import "os"

// The parts of /proc that Docker's default profile (moby oci/defaults.go, with
// /proc/interrupts from later releases) makes read-only or masks. bwrap's --proc covers
// /proc/sys and friends only where the directory itself is writable, which it is not, while
// the files in it check plain owner bits: bound read-only here, whoever the check runs as.
var (
	procReadOnly = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
	procMasked   = []string{"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys",
		"/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi"}
)

// procArgs mount a fresh /proc for the sandbox's PID namespace and then cover what of it
// reaches the host's kernel: procReadOnly bound read-only over itself (the sysctl tables a
// reader sees are its own namespaces', so the host's /proc/sys shows the same), procMasked
// hidden (a file under /dev/null, a folder under an empty read-only tmpfs). Paths this
// kernel does not have are skipped. Last, the whole /proc is made read-only: a process's
// own files there obey its owner's bits, so a check could otherwise write its
// oom_score_adj back down from OOMScoreAdj (to the daemon's own value, unless ticketd is
// root with CAP_SYS_RESOURCE) and leave the daemon the OOM killer's choice again.
func procArgs() []string {
	args := []string{"--proc", "/proc"}
	for _, p := range procReadOnly {
		if _, err := os.Lstat(p); err == nil {
			args = append(args, "--ro-bind", p, p)
		}
	}
	for _, p := range procMasked {
		fi, err := os.Lstat(p)
		switch {
		case err != nil:
		case fi.IsDir():
			args = append(args, "--tmpfs", p, "--remount-ro", p)
		default:
			args = append(args, "--ro-bind", "/dev/null", p)
		}
	}
	return append(args, "--remount-ro", "/proc")
}
