package sandbox

import (
	"context"
	"os"
	"testing"
)

// TestMeasureKernelBuffers measures what docs/security.md reports as not bounded: memory a
// check keeps in filled socketpairs and pipes (kernel buffers in no process's Pss), and the
// pseudo-terminals it can open (all the kernel gives namespaces before ptys.go, its
// devpts instance's max since). It logs figures and asserts
// nothing; it runs only with TICKETD_MEASURE=1 (go test ./pipeline/sandbox -run
// TestMeasureKernelBuffers -v), as root and as a user; with TICKETD_CHECK_CGROUPS=off it
// measures the checks without a cgroup of their own.
func TestMeasureKernelBuffers(t *testing.T) {
	if os.Getenv("TICKETD_MEASURE") != "1" {
		t.Skip("a measurement: set TICKETD_MEASURE=1")
	}
	spec := limitSpec(t, Limits{Memory: 64 << 20, Processes: 64})
	t.Logf("isolation: %s", CgroupIsolation())
	for _, p := range []struct{ name, script string }{
		{"socketpairs", `
import socket, resource
s, h = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (h, h))
held, pairs, cap = 0, [], 512 << 20
chunk = b"x" * 65536
try:
    while held < cap:
        a, b = socket.socketpair()
        a.setblocking(False)
        pairs.append((a, b))
        while True:
            try:
                held += a.send(chunk)
            except BlockingIOError:
                break
except OSError as e:
    print("stopped:", e)
print("held", held >> 20, "MiB in", len(pairs), "socketpairs")
`},
		{"pipes", pipeFillScript},
		{"ptys", `
import os
fds = []
try:
    while len(fds) < 5000:
        fds.append(os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY))
except OSError as e:
    print("stopped:", e)
print("opened", len(fds), "ptys")
`},
	} {
		cmd, err := spec.Command(context.Background(), []string{"/usr/bin/timeout", "-s", "KILL", "60", "/usr/bin/python3", "-c", p.script})
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.CombinedOutput()
		t.Logf("uid %d, %s under a 64 MiB limit: %s(%v; stopped %q)", os.Geteuid(), p.name, out, err, Stopped(cmd))
	}
}
