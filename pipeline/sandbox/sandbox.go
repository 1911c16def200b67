// Package sandbox runs code ticketd did not write — a repository's tests, linters and any
// command a check or the judge names — behind a trust boundary. With ModeBwrap (the default)
// a command runs under bubblewrap: the system read-only, the worktree writable, a private
// /tmp and $HOME, the daemon's files (database, results, other worktrees, its home) hidden,
// the worktree's git metadata read-only, fresh PID, IPC and network namespaces (loopback
// only), a new session, killed with its parent, and an environment built from an allowlist
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
	"slices"
	"strings"
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
const RootWarning = "ticketd runs as root: checks run without any capability as uid 65534 in their own user namespace, but the kernel still treats their file access as root's on what the sandbox shows them (the system folders, tools, the worktree); run ticketd as an unprivileged user (README: Running it under systemd, User=ticketd)"

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
// namespaces and mounts a Spec uses, so that a daemon refuses to start on a machine where
// every check would fail. Inside, it reads the probe's own status: a sandbox whose process
// would hold a capability or run as uid 0 (a kernel without user namespaces, with the daemon
// run as root) is refused too. It returns the binary's path.
func Probe(ctx context.Context, path string) (string, error) {
	if path == "" {
		p, err := exec.LookPath("bwrap")
		if err != nil {
			return "", fmt.Errorf("%w: bwrap is not on PATH (%v); %s", ErrUnavailable, err, InstallHint)
		}
		path = p
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	dir, err := os.MkdirTemp("", "ticketd-probe-")
	if err != nil {
		return "", fmt.Errorf("sandbox probe: %w", err)
	}
	defer os.RemoveAll(dir)
	argv := []string{"true"}
	cat, catErr := exec.LookPath("cat")
	if catErr == nil {
		argv = []string{cat, "/proc/self/status"}
	}
	spec := Spec{Bwrap: path, Dir: dir, Env: []string{"PATH=/usr/bin:/bin"}}
	args, err := spec.Args(argv)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = spec.env()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		hint := "bubblewrap 0.8.0 or later is needed (--size, --disable-userns), with the right to create user, PID and network namespaces; in a container, e.g. docker --privileged or --security-opt seccomp=unconfined"
		if os.Geteuid() == 0 {
			hint += "; as root, user namespaces must be enabled (sysctl user.max_user_namespaces > 0), since ticketd refuses to run checks as uid 0"
		}
		return "", fmt.Errorf("%w: %s %s: %v: %s; %s; %s",
			ErrUnavailable, path, strings.Join(args[1:], " "), err, strings.TrimSpace(stderr.String()), hint, InstallHint)
	}
	if catErr == nil {
		if err := checkUnprivileged(stdout.String()); err != nil {
			return "", fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
	}
	return path, nil
}

// checkUnprivileged reads /proc/self/status as a sandboxed process saw it: its uid must not
// be 0 and it must hold no capability.
func checkUnprivileged(status string) error {
	var uid, capEff string
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, "Uid:"); ok {
			if f := strings.Fields(v); len(f) > 1 {
				uid = f[1] // real, effective, saved, fs
			}
		}
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			capEff = strings.TrimSpace(v)
		}
	}
	switch {
	case uid == "" || capEff == "":
		return fmt.Errorf("the sandbox's status showed no Uid or CapEff line: %q", status)
	case uid == "0":
		return errors.New("a sandboxed check would run as uid 0: refusing; enable user namespaces (sysctl user.max_user_namespaces) or run ticketd as an unprivileged user")
	case strings.Trim(capEff, "0") != "":
		return fmt.Errorf("a sandboxed check would hold capabilities (CapEff %s): refusing; use bubblewrap 0.8.0 or later", capEff)
	}
	return nil
}

// namespaceArgs are the isolation flags every sandboxed command gets.
func namespaceArgs() []string {
	return []string{
		"--die-with-parent", // the daemon's death (even SIGKILL) kills the namespace's init, so everything in it
		"--new-session",     // no TIOCSTI into the daemon's terminal
		"--unshare-pid",     // cannot see or signal the daemon, nor survive the init
		"--unshare-ipc",
		"--unshare-net", // loopback only: no host services, no internet
		"--unshare-uts",
		"--unshare-cgroup-try",
	}
}
