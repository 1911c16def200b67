// Package sandbox runs code ticketd did not write — a repository's tests, linters and any
// command a check or the judge names — behind a trust boundary. With ModeBwrap (the default)
// a command runs under bubblewrap: the system read-only, the worktree writable, a private
// /tmp and $HOME, the daemon's files (database, results, other worktrees, its home) hidden,
// a read-only git view of the worktree's own branch in place of its git metadata, /proc
// read-only, fresh PID, IPC and network namespaces (loopback only), a new session, killed
// with its parent, never root on the host, its memory (per process and as a whole), its processes and its pseudo-terminals bounded
// (Limits), the OOM killer's first choice, and an environment built from an allowlist
// instead of the daemon's own. ModeNone runs the command directly with the same allowlisted
// environment and nothing else: it exists for machines without bubblewrap and as the
// negative control of the isolation tests, and it isolates nothing.
package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Mode selects how commands are isolated.
type Mode string

// Modes. The zero Mode means ModeBwrap.
const (
	ModeBwrap Mode = "bwrap"
	ModeNone  Mode = "none"
)

// Modes lists the accepted values of the `sandbox` config key.
var Modes = []Mode{ModeBwrap, ModeNone}

// ErrUnavailable is returned by Probe when bubblewrap is missing or cannot create the
// namespaces it needs.
var ErrUnavailable = errors.New("the bubblewrap sandbox is unavailable")

// InstallHint tells an operator how to get a working sandbox, or how to run without one.
const InstallHint = "install bubblewrap (Debian/Ubuntu: apt-get install -y bubblewrap; Fedora/RHEL: dnf install -y bubblewrap; Arch: pacman -S bubblewrap), " +
	"or set `sandbox: none` in the config to run the repository's code under test without isolation (it can then read the daemon's environment and files)"

// NoneWarning names the risk of ModeNone, for the log line that opens every night and for
// `ticketctl stats`.
const NoneWarning = "sandbox: none: code under test runs WITHOUT isolation and can read the daemon's environment (API keys), database, config and every worktree, reach the network and outlive its check; install bubblewrap and set sandbox: bwrap"

// RootWarning opens every night's log when the daemon runs as root.
const RootWarning = "ticketd runs as root: checks run as the unprivileged sandbox_user (default nobody) without any capability, and the worktree is made group-writable for it, but ticketd itself, its git and the maker's tools run as root; run ticketd as an unprivileged user (docs/operating.md: Installing it as a service, User=ticketd)"

// Valid reports an error naming the bad value when m is not one of Modes.
func (m Mode) Valid() error {
	if m == "" || slices.Contains(Modes, m) {
		return nil
	}
	return fmt.Errorf("sandbox %q is not one of bwrap, none", string(m))
}

// orDefault maps the zero Mode to ModeBwrap.
func (m Mode) orDefault() Mode {
	if m == "" {
		return ModeBwrap
	}
	return m
}

// Probe finds bwrap on PATH (or at path, when not empty) and runs it once with the
// namespaces and mounts a Spec uses, as checks run when ticketd is root and names no
// sandbox_user, so that a daemon refuses to start on a machine where every check would fail
// or would not be isolated (ProbeUser).
func Probe(ctx context.Context, path string) (string, error) {
	return ProbeUser(ctx, path, Identity{})
}

// ProbeUser is Probe for checks run as id when ticketd is root. Inside, the probe reads its
// own status, who owns a file it writes on the host, and which sysctls it could write: a
// sandbox whose process would hold a capability, be uid 0 or host root (a kernel without
// user namespaces, or bwrap mapping the check to the daemon's root), or could write anything under /proc/sys or /proc/sysrq-trigger, is refused. It
// returns the binary's path. A probe cut short by ctx (a shutdown at start-up) says so, and
// nothing of the sandbox.
func ProbeUser(ctx context.Context, path string, id Identity) (string, error) {
	p, err := probeUser(ctx, path, id)
	if err != nil && ctx.Err() != nil {
		return "", fmt.Errorf("sandbox probe cut short: %w", context.Cause(ctx))
	}
	return p, err
}

func probeUser(ctx context.Context, path string, id Identity) (string, error) {
	if path == "" {
		p, err := exec.LookPath("bwrap")
		if err != nil {
			return "", fmt.Errorf("%w: bwrap is not on PATH (%v); %s", ErrUnavailable, err, InstallHint)
		}
		path = p
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	dir, err := newProbeDir("")
	if err != nil {
		return "", fmt.Errorf("sandbox probe: %w", err)
	}
	defer os.RemoveAll(dir)
	reports := filepath.Join(dir, "reports")
	if err := os.Mkdir(reports, 0o700); err != nil {
		return "", fmt.Errorf("sandbox probe: %w", err)
	}
	tree := filepath.Join(dir, "tree")
	if err := os.Mkdir(tree, 0o755); err != nil {
		return "", fmt.Errorf("sandbox probe: %w", err)
	}
	spec := Spec{Bwrap: path, Dir: tree, Reports: reports, Env: []string{"PATH=/usr/bin:/bin"}, User: id}
	cmd, err := spec.Command(ctx, []string{"/bin/sh", "-c", probeScript})
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		hint := "bubblewrap 0.8.0 or later is needed (--size, --userns), with the right to create user, PID and network namespaces; in a container, e.g. docker --privileged or --security-opt seccomp=unconfined"
		if os.Geteuid() == 0 {
			hint += "; as root, user namespaces must be enabled (sysctl user.max_user_namespaces > 0), since ticketd runs checks as " + id.orDefault().String() + ", never as root"
		}
		if why := Stopped(cmd); why != "" {
			// The sandbox was built, then stopped before its command ran (a limit that could
			// not be set): that, not bubblewrap, is what to fix.
			return "", fmt.Errorf("%w: %s", ErrUnavailable, why)
		}
		return "", fmt.Errorf("%w: %s %s: %v: %s; %s; %s",
			ErrUnavailable, path, strings.Join(cmd.Args[1:], " "), err, strings.TrimSpace(stderr.String()), hint, InstallHint)
	}
	if err := checkUnprivileged(stdout.String()); err != nil {
		return "", fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	// Who the check is on the host, whatever the chain of user namespaces: the owner of a file
	// it made in the reports folder.
	var st syscall.Stat_t
	if err := syscall.Lstat(filepath.Join(reports, "owner"), &st); err != nil {
		return "", fmt.Errorf("%w: the sandbox's probe could not write its reports folder: %v (%s)", ErrUnavailable, err, strings.TrimSpace(stderr.String()))
	}
	if st.Uid == 0 {
		return "", fmt.Errorf("%w: a sandboxed check would be root on the host (its files belong to uid 0): refusing; run ticketd as an unprivileged user, or as root with a sandbox_user", ErrUnavailable)
	}
	return path, nil
}

// probeScript prints what checkUnprivileged judges: the probe's status, its uid map, and
// each file under /proc/sys (and /proc/sysrq-trigger) it may write, found with find where
// there is one, else by trying the sysctls a check would most want.
const probeScript = `cat /proc/self/status
echo owner > ` + InnerReports + `/owner
if command -v find >/dev/null 2>&1; then
  find /proc/sys /proc/sysrq-trigger -writable 2>/dev/null | while read -r f; do echo "Writable: $f"; done
else
  for f in /proc/sys/kernel/core_pattern /proc/sys/kernel/randomize_va_space /proc/sys/vm/drop_caches /proc/sys/vm/overcommit_memory /proc/sys/fs/file-max /proc/sysrq-trigger; do
    [ -w "$f" ] && echo "Writable: $f"
  done
fi
echo "End."
`

// checkUnprivileged reads what probeScript printed as a sandboxed process saw it: its uid
// must not be 0; it must hold no capability; and no sysctl may be writable.
func checkUnprivileged(out string) error {
	var uid, capEff string
	var writable []string
	ended := false
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "Uid:"):
			if f := strings.Fields(strings.TrimPrefix(line, "Uid:")); len(f) > 1 {
				uid = f[1] // real, effective, saved, fs
			}
		case strings.HasPrefix(line, "CapEff:"):
			capEff = strings.TrimSpace(strings.TrimPrefix(line, "CapEff:"))
		case strings.HasPrefix(line, "Writable: "):
			writable = append(writable, strings.TrimPrefix(line, "Writable: "))
		case line == "End.":
			ended = true
		}
	}
	switch {
	case uid == "" || capEff == "" || !ended:
		return fmt.Errorf("the sandbox's probe showed no Uid or CapEff line, or did not finish: %q", out)
	case uid == "0":
		return errors.New("a sandboxed check would run as uid 0: refusing; enable user namespaces (sysctl user.max_user_namespaces) or run ticketd as an unprivileged user")
	case strings.Trim(capEff, "0") != "":
		return fmt.Errorf("a sandboxed check would hold capabilities (CapEff %s): refusing; use bubblewrap 0.8.0 or later", capEff)
	case len(writable) > 0:
		shown := writable[:min(len(writable), 5)]
		return fmt.Errorf("a sandboxed check could write %d kernel settings (%s): refusing; /proc/sys must be read-only in the sandbox (a kernel or bubblewrap that ignores read-only binds?)", len(writable), strings.Join(shown, ", "))
	}
	return nil
}

// namespaceArgs are the isolation flags every sandboxed command gets; network keeps the
// host's network (an environment setup that downloads), every other command has loopback only.
func namespaceArgs(network bool) []string {
	args := []string{
		"--die-with-parent", // the daemon's death (even SIGKILL) kills the namespace's init, so everything in it
		"--new-session",     // no TIOCSTI into the daemon's terminal
		"--unshare-pid",     // cannot see or signal the daemon, nor survive the init
		"--unshare-ipc",
		"--unshare-net", // loopback only: no host services, no internet
		"--unshare-uts",
		"--unshare-cgroup-try",
	}
	if network {
		args = slices.DeleteFunc(args, func(a string) bool { return a == "--unshare-net" })
	}
	return args
}
