package validate

import (
	"fmt"
	"strings"

	"github.com/ticketd/ticketd/pipeline/sandbox"
)

// memoryMarks and processMarks are what a program prints when an allocation or a new
// process or thread is refused: Python's MemoryError and its fork and thread errors, libc's
// strerror for ENOMEM and EAGAIN, C++'s bad_alloc, the shells' fork errors.
var (
	memoryMarks  = []string{"MemoryError", "Cannot allocate memory", "std::bad_alloc", "out of memory", "Out of memory"}
	processMarks = []string{"can't start new thread", "Cannot fork", "pthread_create failed"}
	// eagain is EAGAIN's strerror: a refused fork or thread, but also a non-blocking read or
	// write that would block (BlockingIOError), so it counts only beside what starts one.
	eagain     = "Resource temporarily unavailable"
	spawnMarks = []string{"fork", "Popen", "spawn", "thread", "Thread"}
)

// sigkillExit is how bwrap reports a command killed by SIGKILL from inside the sandbox: the
// kernel's OOM killer (ticketd's own kills end bwrap itself, without an exit code).
const sigkillExit = 128 + 9

// limitNote says which of the sandbox's limits a failed check most likely ran into, judged by
// how it ended and what it printed, so that the maker reads "the check ran out of memory"
// rather than a bare MemoryError or exit 137; "" when nothing shows. Such a failure is the
// change's like any other: its tests now need more than the limit allows.
func limitNote(l sandbox.Limits, res Result, output string) string {
	if res.Passed || res.Cancelled {
		return ""
	}
	var notes []string
	if m := l.MemoryBytes(); m > 0 && containsAny(output, memoryMarks) {
		notes = append(notes, fmt.Sprintf("the check ran out of memory: each of its processes may allocate at most %s (max_check_memory), and an allocation past it fails (Python: MemoryError)", formatBytes(m)))
	}
	if res.ExitCode == sigkillExit && !res.TimedOut {
		notes = append(notes, "a process of the check was killed by SIGKILL (exit 137), most likely by the kernel's OOM killer: the check's memory cgroup (max_check_memory) or the machine ran out of memory, and the checks' processes are the first it kills")
	}
	if n := l.ProcessCount(); n > 0 && (containsAny(output, processMarks) || strings.Contains(output, eagain) && containsAny(output, spawnMarks)) {
		notes = append(notes, fmt.Sprintf("the check reached its process limit: it may run at most %d processes and threads at once (max_check_processes), and a fork or a new thread past it fails (EAGAIN, Resource temporarily unavailable)", n))
	}
	return strings.Join(notes, "; ")
}

func containsAny(s string, marks []string) bool {
	for _, m := range marks {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}
