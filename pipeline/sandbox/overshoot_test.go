package sandbox

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// overshootScript forks argv[1] children that each fill memory as fast as they can, 16 MiB
// at a time, and record after each step how much they hold in their slot of the file
// argv[2] (mapped shared, on the host's disk), so that what the check held when it was
// killed can be read after. Each child stops by itself at argv[3] MiB.
const overshootScript = `
import mmap, os, struct, sys, time
n, path, cap = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]) << 20
with open(path, "r+b") as f:
    m = mmap.mmap(f.fileno(), 8 * n)
kids = []
for i in range(n):
    pid = os.fork()
    if pid == 0:
        held, total = [], 0
        while total < cap:
            held.append(b"\x01" * (16 << 20))
            total += 16 << 20
            m[8*i:8*i+8] = struct.pack("<q", total)
        time.sleep(60)
        os._exit(0)
    kids.append(pid)
for k in kids:
    os.waitpid(k, 0)
print("ALL DONE", flush=True)
`

// TestMemoryWatchOvershoot: children that together allocate as fast as the machine lets
// them are stopped, and the test logs by how much they passed the limit before the watch
// killed them (the memory they recorded holding). The figure is the measure of the watch's
// reaction, not an assertion: it depends on the machine's speed and load.
func TestMemoryWatchOvershoot(t *testing.T) {
	const children, limit = 4, 512 << 20
	spec := limitSpec(t, Limits{Memory: limit, Processes: 64})
	slots := filepath.Join(spec.Dir, "slots")
	if err := os.WriteFile(slots, make([]byte, 8*children), 0o666); err != nil {
		t.Fatal(err)
	}
	os.Chmod(slots, 0o666)
	out, why, err := runStopped(t, spec, []string{"/usr/bin/python3", "-c", overshootScript, strconv.Itoa(children), "slots", strconv.Itoa(limit >> 20)})
	data, rerr := os.ReadFile(slots)
	if rerr != nil {
		t.Fatal(rerr)
	}
	var held int64
	for i := 0; i < children; i++ {
		held += int64(binary.LittleEndian.Uint64(data[8*i:]))
	}
	t.Logf("uid %d: %d children filling memory under a %d MiB limit held %d MiB when killed (%d MiB past it); %v, stopped %q",
		os.Geteuid(), children, limit>>20, held>>20, (held-limit)>>20, err, why)
	if why == "" || strings.Contains(out.String(), "ALL DONE") {
		t.Errorf("the children were not stopped (%v): %s", err, out.String())
	}
}

// TestNextMemoryLook: while a check's memory grows, the watch looks again halfway to the
// moment its limit would be reached at that pace, within its floor (10 ms, four times the
// look's cost) and its poll (250 ms).
func TestNextMemoryLook(t *testing.T) {
	const limit = 4 << 30
	ms := time.Millisecond
	tests := []struct {
		name       string
		used, last int64
		elapsed    time.Duration
		cost       time.Duration
		want       time.Duration
	}{
		{"idle", 100 << 20, 100 << 20, 250 * ms, ms, memoryPoll},
		{"shrinking", 100 << 20, 200 << 20, 250 * ms, ms, memoryPoll},
		{"slow growth, far from the limit", 200 << 20, 100 << 20, 250 * ms, ms, memoryPoll},
		// 3 GiB/s, 1 GiB left: the limit is 333 ms away, look in half of it.
		{"3 GiB/s, 1 GiB left", 3 << 30, 3<<30 - 768<<20, 250 * ms, ms, 166666666},
		// 3 GiB/s, 256 MiB left: 83 ms away, look in 41 ms.
		{"3 GiB/s, 256 MiB left", 3840 << 20, 3840<<20 - 768<<20, 250 * ms, ms, 41666666},
		{"3 GiB/s, 16 MiB left", 4080 << 20, 4080<<20 - 30<<20, 10 * ms, ms, minMemoryPoll},
		{"a slow look", 4080 << 20, 4080<<20 - 30<<20, 10 * ms, 20 * ms, 80 * ms},
		{"a very slow look", 4080 << 20, 4080<<20 - 30<<20, 10 * ms, 200 * ms, memoryPoll},
	}
	for _, tt := range tests {
		got := nextMemoryLook(limit, tt.used, tt.last, tt.elapsed, tt.cost)
		if d := got - tt.want; d < -ms/1000 || d > ms/1000 {
			t.Errorf("%s: nextMemoryLook = %v, want %v", tt.name, got, tt.want)
		}
	}
}
