package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/store/clock/clocktest"
)

// nights reads the fixture's nights, newest first.
func (f nightFixture) nights(t *testing.T) []store.Run {
	t.Helper()
	runs, err := f.mustStore(t).Runs(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

// TestKillsBlameNoTicket: ticketd is SIGKILLed again and again while three attempts are in
// flight, at the default night.max_rescues (5). Before, rescued tickets were claimed first,
// the same three were in flight at every kill, and the fifth kill escalated them all as
// "may be crashing its worker". Now a crash with several attempts in flight is the
// process's: no ticket is charged, and the next start closes the dead night (failed, with
// the cost its calls had) and rescues its tickets at once. After three nights in a row that
// died, the next start pauses itself instead: its night fails, "ticketd keeps crashing",
// exit 1; the start after it runs again.
func TestKillsBlameNoTicket(t *testing.T) {
	t.Parallel() // a process, folder, database and model server of its own
	if testing.Short() {
		t.Skip("builds the ticketd binary and runs nights (long tier; run without -short)")
	}
	bin := buildTicketd(t)
	// Every checker request is held: the attempts cannot end by themselves.
	f := newHeldNightFixture(t, 3, 20*time.Millisecond,
		`{workers: 3, lease: 30s, heartbeat: 500ms, poll: 50ms, max_attempts: 3, retry_backoff: 50ms}`, "Surcharge rule")
	const kills = 6
	delivered, refused := 0, 0
	for start := 1; start <= kills+kills/3; start++ {
		calls := map[int64]int{}
		for _, tk := range f.tickets(t) {
			calls[tk.ID] = f.modelCalls(t, tk.ID)
		}
		cmd := f.start(t, bin, "daemon.log", "once", "--config", f.config, "--log-format", "json")
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		owner := fmt.Sprintf("-%d", cmd.Process.Pid)
		if f.waitAllLeased(t, owner, 3, done) {
			var exit *exec.ExitError
			runs := f.nights(t)
			if err := <-done; !errors.As(err, &exit) || exit.ExitCode() != exitFailed || len(runs) == 0 ||
				!strings.Contains(runs[0].Error, "ticketd keeps crashing") {
				log, _ := os.ReadFile(filepath.Join(f.dir, "daemon.log"))
				t.Fatalf("start %d ended before its attempts ran (%v) and is no refusal for crashing:\n%s", start, err, tail(log, 20))
			}
			refused++
			if delivered == 0 || delivered%3 != 0 {
				t.Errorf("start %d refused after %d kills; want a refusal only after three nights in a row died", start, delivered)
			}
			continue
		}
		// The kill lands once every attempt has made model calls (they cost money) and
		// waits for its held checker.
		for _, tk := range f.tickets(t) {
			if _, ok := calls[tk.ID]; !ok {
				calls[tk.ID] = 0 // taken in by this start
			}
		}
		f.waitCalls(t, calls)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-done
		delivered++
	}
	// One more start closes the last dead night, and dies in its turn.
	last := f.start(t, bin, "daemon.log", "once", "--config", f.config, "--log-format", "json")
	lastDone := make(chan error, 1)
	go func() { lastDone <- last.Wait() }()
	f.waitAllLeased(t, fmt.Sprintf("-%d", last.Process.Pid), 3, lastDone)
	last.Process.Signal(syscall.SIGKILL)
	<-lastDone

	t.Logf("%d kills with three attempts in flight, %d refused starts", delivered, refused)
	if delivered != kills || refused != kills/3 {
		t.Errorf("%d kills and %d refusals; want %d and %d", delivered, refused, kills, kills/3)
	}
	for _, tk := range f.tickets(t) {
		if tk.State == store.StateEscalated || tk.Crashes != 0 || tk.Attempts != 1 {
			t.Errorf("ticket %d: %s, %d crash(es) blamed, %d attempt(s), %d rescues (%s); want never escalated nor charged", tk.ID, tk.State, tk.Crashes, tk.Attempts, tk.Rescues, tk.Reason)
		}
	}
	died, crashing, open := 0, 0, 0
	for _, r := range f.nights(t) {
		switch {
		case r.Outcome == "":
			open++
		case strings.Contains(r.Error, store.ErrProcessEnded.Error()):
			died++
			if r.CostUSD <= 0 || r.Worked != 3 || r.EndedAt.IsZero() {
				t.Errorf("dead night %d: cost $%.4f, worked %d, ended %v; want the cost its calls had, its 3 tickets, an end", r.ID, r.CostUSD, r.Worked, r.EndedAt)
			}
		case strings.Contains(r.Error, "ticketd keeps crashing"):
			crashing++
		}
	}
	t.Logf("nights: %d closed as dead, %d refused for crashing, %d still open (the last kill's)", died, crashing, open)
	if died != delivered || open != 1 || crashing != refused {
		t.Errorf("nights: %d closed as dead (want %d), %d refused (want %d), %d open (want the last kill's)", died, delivered, crashing, refused, open)
	}
}

// waitAllLeased waits until the process whose workers' names end in owner holds n leases;
// it reports whether the process ended first.
func (f nightFixture) waitAllLeased(t *testing.T, owner string, n int, done chan error) bool {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute) // only keeps a broken daemon from hanging the test
	for time.Now().Before(deadline) {
		held := 0
		for _, tk := range f.tickets(t) {
			if tk.State == store.StateRunning && strings.HasSuffix(tk.LeaseOwner, owner) {
				held++
			}
		}
		if held >= n {
			return false
		}
		select {
		case err := <-done:
			done <- err
			return true
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("the daemon did not hold %d leases within 3 minutes", n)
	return false
}

// waitCalls waits until every ticket of before has more model calls than it had.
func (f nightFixture) waitCalls(t *testing.T, before map[int64]int) {
	t.Helper()
	clocktest.WaitFor(t, 3*time.Minute, "every attempt made a model call", func() bool {
		all := true
		for id, n := range before {
			all = all && f.modelCalls(t, id) > n
		}
		return all
	})
}
