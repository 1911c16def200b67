package sandbox

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// ipcHoardScript stores bytes where no process's memory shows them: SysV shared memory
// segments it fills and detaches from (pages in no process's Pss), then SysV message queues
// it fills. Its segments are as large as the kernel takes, from 8 MiB down. It stops by
// itself at argv[1] MiB of each, and prints how much it stored.
const ipcHoardScript = `
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
libc.shmget.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
libc.shmdt.argtypes = [ctypes.c_void_p]
libc.msgsnd.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
cap = int(sys.argv[1]) << 20
small = libc.shmget(0, 56, 0o1600)  # IPC_PRIVATE, IPC_CREAT|0600: PostgreSQL's own segment
print("SMALL", "ok" if small >= 0 else "failed", flush=True)
seg = 8 << 20
shm = 0
while shm < cap:
    i = libc.shmget(0, seg, 0o1600)
    if i < 0 and ctypes.get_errno() == 22 and seg > 4096:  # EINVAL: too large a segment
        seg //= 2
        continue
    if i < 0:
        break
    p = libc.shmat(i, None, 0)
    if p is None or p == ctypes.c_void_p(-1).value:
        break
    ctypes.memset(p, 1, seg)
    libc.shmdt(p)
    shm += seg
shm_err = ctypes.get_errno()
msg = 0
buf = ctypes.create_string_buffer(8 + 8192)
ctypes.c_long.from_buffer(buf).value = 1
done = False
while msg < cap and not done:
    q = libc.msgget(0, 0o1600)
    if q < 0:
        break
    while msg < cap:
        if libc.msgsnd(q, buf, 8192, 0o4000) != 0:  # IPC_NOWAIT: a full queue says EAGAIN
            if ctypes.get_errno() != 11:
                done = True
            break
        msg += 8192
print("SHM", shm >> 20, "errno", shm_err, "MSG", msg >> 20, "errno", ctypes.get_errno(), flush=True)
`

// TestIPCMemoryBounded: a check that stores bytes in SysV shared memory it does not map, or
// in SysV message queues, keeps them in memory no process's Pss shows, so the watch of its
// whole memory cannot see them; the check's IPC namespace must bound them to its memory
// limit (as root, its IPC settings; as a user, the seccomp filter). Before the bound a check
// stored all it tried (here 4 times a 64 MiB limit, in each), as root and as a user. A small
// segment, as PostgreSQL makes, still works.
func TestIPCMemoryBounded(t *testing.T) {
	const limit = 64
	spec := limitSpec(t, Limits{Memory: limit << 20, Processes: 64})
	out := probeRunArgv(t, spec, "/usr/bin/python3", "-c", ipcHoardScript, strconv.Itoa(4*limit))
	t.Logf("uid %d: %s", os.Geteuid(), strings.TrimSpace(out))
	var shm, shmErr, msg, msgErr int
	if _, err := fmt.Sscanf(out[max(strings.Index(out, "SHM "), 0):], "SHM %d errno %d MSG %d errno %d", &shm, &shmErr, &msg, &msgErr); err != nil {
		t.Fatalf("the hoarder said %q: %v", out, err)
	}
	if !strings.Contains(out, "SMALL ok") {
		t.Errorf("a check could not make a SysV segment of 56 bytes (as PostgreSQL does):\n%s", out)
	}
	if shm > limit {
		t.Errorf("the check kept %d MiB in SysV shared memory it does not map, more than its %d MiB memory limit", shm, limit)
	}
	if msg > limit {
		t.Errorf("the check kept %d MiB in SysV message queues, more than its %d MiB memory limit", msg, limit)
	}
}

// TestTmpfsBoundedByMemory: what a check writes in its private /tmp and /dev/shm is memory
// (tmpfs) that no process's Pss shows; neither may hold more than the check's memory limit.
// Before the bound a check under a 32 MiB limit wrote 96 MiB into /tmp (1 GiB by default,
// max_worktree_size) and, under a 16 MiB limit, 48 MiB into /dev/shm (64 MiB).
func TestTmpfsBoundedByMemory(t *testing.T) {
	for _, tt := range []struct {
		dir   string
		limit int64
	}{{"/tmp", 32 << 20}, {"/dev/shm", 16 << 20}} {
		spec := limitSpec(t, Limits{Memory: tt.limit, Processes: 64})
		out := probeRunArgv(t, spec, "/bin/sh", "-c", fmt.Sprintf(`head -c %d /dev/zero > %s/big; echo STORED $(( $(wc -c < %s/big) >> 20 )) MiB`, 3*tt.limit, tt.dir, tt.dir))
		t.Logf("uid %d, %s under a %d MiB limit: %s", os.Geteuid(), tt.dir, tt.limit>>20, strings.TrimSpace(out))
		var stored int64
		if _, err := fmt.Sscanf(out[max(strings.Index(out, "STORED "), 0):], "STORED %d MiB", &stored); err != nil {
			t.Fatalf("the check said %q: %v", out, err)
		}
		if stored<<20 > tt.limit {
			t.Errorf("the check stored %d MiB in its %s, more than its %d MiB memory limit", stored, tt.dir, tt.limit>>20)
		}
	}
}
