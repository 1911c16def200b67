package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// probeRun runs script with sh -c under spec and returns its combined output.
func probeRun(t *testing.T, spec Spec, script string) string {
	t.Helper()
	cmd, err := spec.Command(context.Background(), []string{"sh", "-c", script})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// TestAttackerProbes runs, as a test written by an attacker would, each probe of issue 19
// under bwrap and, as the negative control, without the sandbox: under bwrap every probe must
// fail, whoever runs the test (root, as on this machine, or a user: run the test binary with
// setpriv --reuid=nobody to see that case); without it, each must succeed, or the probe
// proves nothing. A row whose setting cannot be made as the current user (a socket in /run as
// a user) is skipped with the reason.
func TestAttackerProbes(t *testing.T) {
	requireBwrap(t)
	root := t.TempDir()
	tree := filepath.Join(root, "workspace", "tree")
	hidden := filepath.Join(root, "daemon")
	outside := filepath.Join(root, "outside")
	for _, d := range []string{tree, hidden, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(hidden, "ticketd.env"), []byte("OPENAI_API_KEY=sk-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	scratch, err := NewScratch(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { scratch.Remove() })

	type probe struct {
		name   string
		script string                            // prints BREACH when the probe succeeds
		setup  func(t *testing.T) (string, bool) // optional: returns a path the script uses ($P) or false to skip
		host   func(t *testing.T) bool           // optional: whether the breach shows on the host
	}
	python := "/usr/bin/python3"
	connect := python + ` -c 'import socket,sys
s=socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
print("BREACH connected")' "$P" 2>/dev/null; true`
	socketIn := func(dir string) func(t *testing.T) (string, bool) {
		return func(t *testing.T) (string, bool) {
			t.Helper()
			d, err := os.MkdirTemp(dir, "ticketd-probe-")
			if err != nil {
				t.Logf("cannot make a socket in %s as uid %d: %v", dir, os.Geteuid(), err)
				return "", false
			}
			t.Cleanup(func() { os.RemoveAll(d) })
			os.Chmod(d, 0o755)
			p := filepath.Join(d, "s.sock")
			ln, err := net.Listen("unix", p)
			if err != nil {
				t.Logf("listen on %s: %v", p, err)
				return "", false
			}
			os.Chmod(p, 0o777)
			t.Cleanup(func() { ln.Close() })
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					c.Close()
				}
			}()
			return p, true
		}
	}
	home, _ := os.UserHomeDir()
	// A tool folder on the daemon's PATH, as ~/go/bin is: a git planted there would be run by
	// ticketd's own git add/commit.
	tools := filepath.Join(hidden, "bin")
	if err := os.MkdirAll(tools, 0o755); err != nil {
		t.Fatal(err)
	}
	probes := []probe{
		{name: "capabilities", script: `grep -q '^CapEff:[[:space:]]*0*$' /proc/self/status || echo BREACH`},
		{name: "uid 0", script: `test "$(id -u)" != 0 || echo BREACH`},
		{name: "mount", script: `mkdir -p /tmp/x && mount --bind / /tmp/x 2>/dev/null && echo BREACH; mount -o remount,rw / 2>/dev/null && echo BREACH; true`},
		{name: "new user namespace", script: `unshare -U -r true 2>/dev/null && echo BREACH; true`},
		{name: "hidden folder", script: `cat ` + hidden + `/ticketd.env 2>/dev/null | grep -q sk-secret && echo BREACH; ls -a ` + hidden + ` 2>/dev/null | grep -q ticketd.env && echo BREACH; true`},
		{name: "write outside the worktree", script: `echo x > ` + outside + `/planted 2>/dev/null; echo x > ` + filepath.Dir(tree) + `/planted 2>/dev/null; true`,
			host: func(t *testing.T) bool {
				_, e1 := os.Stat(filepath.Join(outside, "planted"))
				_, e2 := os.Stat(filepath.Join(filepath.Dir(tree), "planted"))
				return e1 == nil || e2 == nil
			}},
		{name: "plant a git on the daemon's PATH", script: `echo '#!/bin/sh' > ` + tools + `/git 2>/dev/null; true`,
			host: func(t *testing.T) bool {
				_, err := os.Stat(filepath.Join(tools, "git"))
				os.Remove(filepath.Join(tools, "git"))
				return err == nil
			}},
		{name: "write a system path", script: `for d in /usr/local/bin /etc /bin /; do echo x > $d/ticketd-planted 2>/dev/null && echo BREACH $d; done; true`},
		{name: "socket in /run", script: connect, setup: socketIn("/run")},
		{name: "socket in /var/tmp", script: connect, setup: socketIn("/var/tmp")},
		{name: "socket in the daemon's home", script: connect, setup: socketIn(home)},
		{name: "an abstract unix socket of the host", script: python + ` -c 'import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect("\0" + sys.argv[1])
print("BREACH connected")' "$P" 2>/dev/null; true`,
			setup: func(t *testing.T) (string, bool) {
				name := fmt.Sprintf("ticketd-probe-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "-"))
				ln, err := net.Listen("unix", "@"+name)
				if err != nil {
					t.Logf("listen on the abstract socket %s: %v", name, err)
					return "", false
				}
				t.Cleanup(func() { ln.Close() })
				go func() {
					for {
						c, err := ln.Accept()
						if err != nil {
							return
						}
						c.Close()
					}
				}()
				return name, true
			}},
		{name: "the daemon's process", script: `kill -0 "$P" 2>/dev/null && echo BREACH signal; head -c1 /proc/"$P"/environ >/dev/null 2>&1 && echo BREACH environ; true`,
			setup: func(t *testing.T) (string, bool) { return strconv.Itoa(os.Getpid()), true }},
		{name: "io_uring", script: python + ` -c 'import ctypes
libc = ctypes.CDLL(None, use_errno=True)
if libc.syscall(425, 4, ctypes.create_string_buffer(120)) >= 0: print("BREACH io_uring_setup")'`,
			setup: func(t *testing.T) (string, bool) {
				data, err := os.ReadFile("/proc/sys/kernel/io_uring_disabled")
				if err == nil && strings.TrimSpace(string(data)) != "0" {
					t.Logf("kernel.io_uring_disabled is %s on this host", strings.TrimSpace(string(data)))
					return "", false
				}
				return "-", true
			}},
		{name: "reserving disk blocks with fallocate", script: python + ` -c 'import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open("reserved", os.O_CREAT | os.O_WRONLY, 0o644)
if libc.fallocate(fd, 1, ctypes.c_long(0), ctypes.c_long(1 << 20)) == 0: print("BREACH fallocate, FALLOC_FL_KEEP_SIZE")
os.unlink("reserved")'`},
		{name: "a host /tmp file", script: `test -e "$P" && echo BREACH; true`, setup: func(t *testing.T) (string, bool) {
			f, err := os.CreateTemp("", "ticketd-host-")
			if err != nil {
				return "", false
			}
			f.Close()
			t.Cleanup(func() { os.Remove(f.Name()) })
			return f.Name(), true
		}},
	}
	if _, err := os.Stat("/etc/shadow"); err == nil {
		probes = append(probes, probe{name: "/etc/shadow", script: `head -c1 /etc/shadow >/dev/null 2>&1 && echo BREACH; true`})
	}
	for _, p := range probes {
		for _, mode := range []Mode{ModeBwrap, ModeNone} {
			t.Run(p.name+"/"+string(mode), func(t *testing.T) {
				script := p.script
				if p.setup != nil {
					path, ok := p.setup(t)
					if !ok {
						t.Skip("this probe's setting cannot be made here")
					}
					script = "P=" + path + "\n" + script
				}
				spec := Spec{Mode: mode, Dir: tree, Reports: scratch.Dir, Hide: []string{hidden, filepath.Dir(tree), home}, Env: []string{"PATH=" + tools + ":/usr/sbin:/usr/bin:/sbin:/bin"}}
				out := probeRun(t, spec, script)
				breach := strings.Contains(out, "BREACH") || p.host != nil && p.host(t)
				t.Logf("uid %d, %s: breach=%v output=%q", os.Geteuid(), mode, breach, out)
				if mode == ModeBwrap && breach {
					t.Errorf("the probe %q succeeded inside the sandbox: %s", p.name, out)
				}
				// The controls that need a privilege the test process lacks cannot breach
				// unsandboxed either; they prove nothing as a user, and are only logged.
				needsRoot := map[string]bool{"capabilities": true, "uid 0": true, "mount": true, "/etc/shadow": true, "write a system path": true}
				if mode == ModeNone && !breach && (os.Geteuid() == 0 || !needsRoot[p.name]) && p.name != "new user namespace" {
					t.Errorf("negative control: the probe %q should succeed without the sandbox: %s", p.name, out)
				}
				for _, f := range []string{"/usr/local/bin/ticketd-planted", "/etc/ticketd-planted", "/ticketd-planted", filepath.Join(outside, "planted"), filepath.Join(filepath.Dir(tree), "planted")} {
					os.Remove(f)
				}
			})
		}
	}
}

// TestSandboxSizes: the private /tmp (with $HOME) and /dev/shm are size-limited file systems,
// and nothing but them, the worktree and the reports folder is writable.
func TestSandboxSizes(t *testing.T) {
	requireBwrap(t)
	tree := t.TempDir()
	spec := Spec{Dir: tree, TmpSize: 1 << 20, Env: []string{"PATH=/usr/bin:/bin"}}
	out := probeRun(t, spec, fmt.Sprintf(`head -c %d /dev/zero > /tmp/big 2>/dev/null && echo TMP_UNBOUNDED
head -c %d /dev/zero > $HOME/big 2>/dev/null && echo HOME_UNBOUNDED
head -c %d /dev/zero > /dev/shm/big 2>/dev/null && echo SHM_UNBOUNDED
echo x > /dev/planted 2>/dev/null && echo DEV_WRITABLE
echo x > /planted 2>/dev/null && echo ROOT_WRITABLE
echo x > /dev/null && echo DEVNULL_OK`, 2<<20, 2<<20, ShmSize+1<<20))
	t.Logf("sandbox said: %q", out)
	for _, bad := range []string{"TMP_UNBOUNDED", "HOME_UNBOUNDED", "SHM_UNBOUNDED", "DEV_WRITABLE", "ROOT_WRITABLE"} {
		if strings.Contains(out, bad) {
			t.Errorf("%s: %s", bad, out)
		}
	}
	if !strings.Contains(out, "DEVNULL_OK") {
		t.Errorf("/dev/null is not writable: %s", out)
	}
}

// TestCheckHoldsNoExtraDescriptor: a check's command starts with stdin, stdout and stderr
// and nothing else. As root bwrap is handed the check's user namespace as descriptor 3
// (--userns) and never closes it: every process of the check held a descriptor of its own
// user namespace. Run as root and as a user (setpriv --reuid=65534 ...): both must pass.
func TestCheckHoldsNoExtraDescriptor(t *testing.T) {
	requireBwrap(t)
	scratch, err := NewScratch(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { scratch.Remove() })
	spec := Spec{Dir: t.TempDir(), Reports: scratch.Dir, Env: []string{"PATH=/usr/bin:/bin"}}
	out := probeRun(t, spec, `/usr/bin/python3 -I -S -c '
import os
for f in os.listdir("/proc/self/fd"):
    if int(f) > 2:
        try:
            print("EXTRA", f, os.readlink("/proc/self/fd/" + f))
        except OSError:
            pass  # the listing'"'"'s own, closed by now
print("listed")'`)
	t.Logf("uid %d: %q", os.Geteuid(), out)
	if strings.Contains(out, "EXTRA") || !strings.Contains(out, "listed") {
		t.Errorf("the check holds descriptors beyond stdio: %s", out)
	}
}
