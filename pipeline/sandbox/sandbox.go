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
// every check would fail. It returns the binary's path.
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
	args := append(namespaceArgs(), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--", "true")
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%w: %s %s: %v: %s; %s (in a container, bwrap needs the right to create namespaces, e.g. docker --privileged or --security-opt seccomp=unconfined)",
			ErrUnavailable, path, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()), InstallHint)
	}
	return path, nil
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
