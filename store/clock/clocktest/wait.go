package clocktest

import (
	"testing"
	"time"
)

// pollEvery is how often WaitFor looks again: short against the bounds tests give, long
// enough not to steal the CPU from the process under test.
const pollEvery = 20 * time.Millisecond

// WaitFor returns once cond holds, and fails t (with what, and the output of explain when
// given) when it still does not after limit. It is for conditions that no event of this
// process announces — another process's state, its files, the kernel's process table; a
// condition of this process is waited for on a channel. The limit only keeps a broken
// program from hanging the run, so give it generously: a loaded machine is slow.
func WaitFor(t testing.TB, limit time.Duration, what string, cond func() bool, explain ...func() string) {
	t.Helper()
	if !Poll(limit, cond) {
		msg := ""
		for _, e := range explain {
			msg += "\n" + e()
		}
		t.Fatalf("timed out after %v waiting until %s%s", limit, what, msg)
	}
}

// Poll reports whether cond came to hold within limit, for waits whose running out is a
// result rather than a failure.
func Poll(limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		// The one sleep of the polling tests: nothing in this process can signal a change
		// made by another process, so WaitFor and Poll look again after a short pause.
		time.Sleep(pollEvery)
	}
	return true
}
