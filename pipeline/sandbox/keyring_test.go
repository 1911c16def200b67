package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// keyringProbe is a check that uses the kernel's keyrings, which no namespace separates: with
// "plant" it adds a key named by its second argument to every keyring it holds (its session
// keyring, its user's and its user's session keyring); with "read" it looks for that key in
// them and prints BREACH and the value when it finds it, then invalidates it (so the negative
// control leaves nothing in the host user's keyrings); at its end it prints END.
const keyringProbe = `import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
add_key, keyctl = int(sys.argv[1]), int(sys.argv[2])
mode, desc = sys.argv[3], sys.argv[4].encode()
rings = (-3, -4, -5)  # KEY_SPEC_SESSION_KEYRING, KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING
if mode == "plant":
    for ring in rings:
        libc.syscall(add_key, b"user", desc, b"planted-by-a-check", 18, ctypes.c_long(ring))
else:
    for ring in rings:
        kid = libc.syscall(keyctl, 10, ctypes.c_long(ring), b"user", desc, ctypes.c_long(0))  # KEYCTL_SEARCH
        if kid > 0:
            buf = ctypes.create_string_buffer(256)
            n = libc.syscall(keyctl, 11, ctypes.c_long(kid), buf, 256)  # KEYCTL_READ
            print("BREACH", ring, buf.raw[:max(n, 0)])
            libc.syscall(keyctl, 21, ctypes.c_long(kid))  # KEYCTL_INVALIDATE
print("END")
`

// TestKeyringProbes: the kernel's keyrings belong to no namespace a sandbox makes. A check
// inherits the daemon's session keyring (systemd gives every service one; a login shell
// has one) and, as root, shares its user's keyrings with every other check run as the same
// sandbox_user, for as long as the daemon lives. Under bwrap a check can neither read a key
// the daemon holds nor leave one for the next check; without the sandbox (the negative
// control) it does both.
func TestKeyringProbes(t *testing.T) {
	requireBwrap(t)
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skipf("%s is not installed: %v", python, err)
	}
	tree := t.TempDir()
	if err := os.WriteFile(filepath.Join(tree, "keys.py"), []byte(keyringProbe), 0o644); err != nil {
		t.Fatal(err)
	}
	probe := func(t *testing.T, spec Spec, mode, desc string) string {
		t.Helper()
		return probeRunArgv(t, spec, python, "keys.py", strconv.Itoa(unix.SYS_ADD_KEY), strconv.Itoa(unix.SYS_KEYCTL), mode, desc)
	}
	tests := []struct {
		name string
		run  func(t *testing.T, spec Spec, desc string) string // what the reading check printed
	}{
		{"the daemon's session keyring", func(t *testing.T, spec Spec, desc string) string {
			t.Helper()
			out := make(chan string, 1)
			go func() {
				// The session keyring is the thread's: this thread joins a new one, holds the
				// daemon's key there and starts the check; it ends with the goroutine (never
				// unlocked), and its keyring with it.
				runtime.LockOSThread()
				if err := joinSessionKeyring(desc); err != nil {
					t.Errorf("give the test a session keyring holding a key: %v", err)
					out <- ""
					return
				}
				out <- probe(t, spec, "read", desc)
			}()
			return <-out
		}},
		{"a key left for the next check", func(t *testing.T, spec Spec, desc string) string {
			t.Helper()
			probe(t, spec, "plant", desc)
			return probe(t, spec, "read", desc)
		}},
	}
	for i, tt := range tests {
		for _, mode := range []Mode{ModeBwrap, ModeNone} {
			t.Run(tt.name+"/"+string(mode), func(t *testing.T) {
				desc := fmt.Sprintf("ticketd-probe-%d-%d-%s", os.Getpid(), i, mode)
				spec := Spec{Mode: mode, Dir: tree, Reports: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}}
				out := tt.run(t, spec, desc)
				breach := strings.Contains(out, "BREACH")
				t.Logf("uid %d, %s: breach=%v output=%q", os.Geteuid(), mode, breach, out)
				if !strings.HasSuffix(out, "END\n") {
					t.Fatalf("the probe did not run to its end: %q", out)
				}
				if mode == ModeBwrap && breach {
					t.Errorf("the probe %q succeeded inside the sandbox: %s", tt.name, out)
				}
				if mode == ModeNone && !breach {
					t.Errorf("negative control: the probe %q should succeed without the sandbox: %s", tt.name, out)
				}
			})
		}
	}
}

// joinSessionKeyring gives the calling thread a new session keyring named name, holding a
// user key of the same name: the daemon's keyring as systemd (KeyringMode=private) or a login
// would give it one.
func joinSessionKeyring(name string) error {
	if _, err := unix.KeyctlJoinSessionKeyring(name); err != nil {
		return fmt.Errorf("join a session keyring: %w", err)
	}
	if _, err := unix.AddKey("user", name, []byte("sk-daemon-session-key"), unix.KEY_SPEC_SESSION_KEYRING); err != nil {
		return fmt.Errorf("add a key to it: %w", err)
	}
	return nil
}

// probeRunArgv runs argv under spec and returns its combined output. It may run on a goroutine
// of its own: a command that cannot be made is reported with t.Errorf.
func probeRunArgv(t *testing.T, spec Spec, argv ...string) string {
	t.Helper()
	cmd, err := spec.Command(context.Background(), argv)
	if err != nil {
		t.Errorf("make the command %q: %v", argv, err)
		return ""
	}
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// TestCommandKeepsNoDescriptor: the seccomp filter's descriptor ticketd hands bwrap is
// closed on ticketd's side once the command has started, so a night of checks does not
// leak one per check.
func TestCommandKeepsNoDescriptor(t *testing.T) {
	requireBwrap(t)
	spec := Spec{Dir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin"}}
	count := func() int {
		t.Helper()
		watching.Wait() // a watch closes its pidfd when it sees bwrap end, maybe after Wait
		fds, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatalf("list this process's descriptors: %v", err)
		}
		return len(fds)
	}
	probeRunArgv(t, spec, "true") // the first run makes what is kept for good, if anything
	before := count()
	for range 3 {
		if out := probeRunArgv(t, spec, "true"); out != "" {
			t.Fatalf("true under bwrap said %q", out)
		}
	}
	if after := count(); after != before {
		t.Errorf("three sandboxed commands left %d descriptors open in ticketd", after-before)
	}
}

// TestCommandPassesNoInheritedDescriptor: a descriptor ticketd inherited without
// close-on-exec (from a shell, a cron, a supervisor: here, one the test opens so) on a file
// the sandbox hides never reaches a command, sandboxed or not: the command cannot read the
// file through it. Without the sandbox the file itself stays readable (ModeNone isolates
// nothing); the probe looks only at descriptors.
func TestCommandPassesNoInheritedDescriptor(t *testing.T) {
	requireBwrap(t)
	hidden := t.TempDir()
	secret := filepath.Join(hidden, "ticketd.db")
	if err := os.WriteFile(secret, []byte("sk-inherited-secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(secret, unix.O_RDONLY, 0) // no O_CLOEXEC: as an inherited one
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	for _, mode := range []Mode{ModeBwrap, ModeNone} {
		t.Run(string(mode), func(t *testing.T) {
			spec := Spec{Mode: mode, Dir: t.TempDir(), Reports: t.TempDir(), Hide: []string{hidden}, Env: []string{"PATH=/usr/bin:/bin"}}
			out := probeRunArgv(t, spec, "/usr/bin/python3", "-c", `import os
for n in sorted(int(f) for f in os.listdir("/proc/self/fd")):
    try:
        if b"sk-inherited" in os.pread(n, 64, 0): print("BREACH", n)
    except OSError:
        pass
print("END")`)
			if strings.Contains(out, "BREACH") || !strings.HasSuffix(out, "END\n") {
				t.Errorf("uid %d, %s: the command read a hidden file through descriptor %d ticketd inherited: %q", os.Geteuid(), mode, fd, out)
			}
		})
	}
}

// TestSeccompFilter runs the seccomp program on the calls of each system call table this
// machine serves: its keyring calls fail with EPERM, fallocate with EOPNOTSUPP, io_uring's
// calls with ENOSYS, other calls pass, and a call of a table the filter does not know fails.
func TestSeccompFilter(t *testing.T) {
	for _, shmCap := range []uint32{0, 1 << 20} {
		t.Run(fmt.Sprintf("shmCap=%d", shmCap), func(t *testing.T) { testSeccompFilter(t, shmCap) })
	}
}

// testSeccompFilter runs the filter of shmCap (ShmSegmentCap) on every call it denies, on
// calls next to them it must allow, and on shmget's sizes around the bound.
func testSeccompFilter(t *testing.T, shmCap uint32) {
	prog, err := seccompFilter(shmCap)
	if err != nil {
		t.Skipf("no filter on this architecture: %v", err)
	}
	tables, err := filterTables(shmCap)
	if err != nil {
		t.Fatal(err)
	}
	type call struct {
		name     string
		arch, nr uint32
		arg1     uint64
		want     uint32
	}
	calls := []call{{"an unknown table", 0x12345678, 0, 0, retDenied}}
	for _, tb := range tables {
		denied := map[uint32]bool{}
		for _, d := range tb.denied {
			denied[d.nr] = true
			calls = append(calls, call{fmt.Sprintf("denied call %d of arch %#x", d.nr, tb.arch), tb.arch, d.nr, 0, d.ret})
			if tb.mask != 0 {
				calls = append(calls, call{fmt.Sprintf("denied call %d|%#x of arch %#x", d.nr, tb.mask, tb.arch), tb.arch, d.nr | tb.mask, 0, d.ret})
			}
		}
		if tb.shm != nil {
			denied[tb.shm.nr] = true
			m := uint64(tb.shm.max)
			for _, c := range []struct {
				size uint64
				want uint32
			}{{0, retAllow}, {56, retAllow}, {m, retAllow}, {m + 1, retShmSize}, {1 << 32, retShmSize}, {1<<32 + 56, retShmSize}, {^uint64(0), retShmSize}} {
				calls = append(calls, call{fmt.Sprintf("shmget of %d bytes, arch %#x", c.size, tb.arch), tb.arch, tb.shm.nr, c.size, c.want})
			}
		}
		for _, d := range tb.denied {
			for _, nr := range []uint32{0, 1, 3, d.nr - 1, d.nr + 1} {
				if !denied[nr] {
					calls = append(calls, call{fmt.Sprintf("call %d of arch %#x", nr, tb.arch), tb.arch, nr, 1 << 40, retAllow})
				}
			}
		}
	}
	wantRets := map[uint32]bool{retDenied: false, retFallocate: false, retIOURing: false}
	if shmCap != 0 {
		wantRets[retShmSize], wantRets[retNoSysV] = false, false
	}
	for _, c := range calls {
		got, err := runFilter(prog, c.arch, c.nr, c.arg1)
		if err != nil || got != c.want {
			t.Errorf("%s: the filter returned %#x (%v), want %#x", c.name, got, err, c.want)
		}
		if _, ok := wantRets[got]; ok {
			wantRets[got] = true
		}
	}
	for ret, seen := range wantRets {
		if !seen {
			t.Errorf("no call got the answer %#x", ret)
		}
	}
}

// runFilter interprets the classic BPF instructions seccompFilter uses on a call's
// seccomp_data (its number, arch and second argument).
func runFilter(prog []unix.SockFilter, arch, nr uint32, arg1 uint64) (uint32, error) {
	lo, hi := arg1Words()
	var a uint32
	for pc := 0; pc < len(prog); pc++ {
		ins := prog[pc]
		switch ins.Code {
		case bpfLdAbs:
			switch ins.K {
			case dataNr:
				a = nr
			case dataArch:
				a = arch
			case lo:
				a = uint32(arg1)
			case hi:
				a = uint32(arg1 >> 32)
			default:
				return 0, fmt.Errorf("load of offset %d at %d", ins.K, pc)
			}
		case bpfAndK:
			a &= ins.K
		case bpfJeqK, bpfJgtK:
			if ins.Code == bpfJeqK && a == ins.K || ins.Code == bpfJgtK && a > ins.K {
				pc += int(ins.Jt)
			} else {
				pc += int(ins.Jf)
			}
		case bpfRetK:
			return ins.K, nil
		default:
			return 0, fmt.Errorf("unknown instruction %#x at %d", ins.Code, pc)
		}
	}
	return 0, fmt.Errorf("ran off the end of the program")
}
