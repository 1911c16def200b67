package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// The crash test's child is this test binary re-run with these variables set.
const (
	envCrashDB     = "TICKETD_STORE_CRASH_DB"
	envCrashOffset = "TICKETD_STORE_CRASH_OFFSET_MS"
	envCrashSeed   = "TICKETD_STORE_CRASH_SEED"
)

// TestCrashHelperProcess is the child of TestCrashRecovery, not a test of its own: it works
// the queue (claim, triage, heartbeat, model call, then complete / fail / release) printing a
// line before every store call, until the queue is empty or it is killed.
func TestCrashHelperProcess(t *testing.T) {
	path := os.Getenv(envCrashDB)
	if path == "" {
		t.Skip("helper process for TestCrashRecovery")
	}
	offset, _ := strconv.ParseInt(os.Getenv(envCrashOffset), 10, 64)
	seed, _ := strconv.ParseUint(os.Getenv(envCrashSeed), 10, 64)
	rng := rand.New(rand.NewPCG(seed, 1))
	now := func() time.Time { return time.Now().Add(time.Duration(offset) * time.Millisecond) }
	ctx := context.Background()
	s, err := OpenLocation(ctx, path, Options{Now: now, BackoffBase: time.Second, BackoffMax: 4 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	step := func(what string) {
		fmt.Fprintln(out, what)
		out.Flush()
	}
	check := func(what string, err error) {
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
			os.Exit(3)
		}
	}
	for {
		step("claim")
		l, err := s.Claim(ctx, fmt.Sprint("child-", os.Getpid()), 30*time.Second)
		if errors.Is(err, ErrNoTicket) {
			s.Close()
			os.Exit(0)
		}
		check("claim", err)
		id := l.Ticket.ID
		step("triage")
		check("triage", s.SaveTriage(ctx, id, l.Token, `{"summary":"s"}`))
		step("heartbeat")
		_, err = s.Heartbeat(ctx, id, l.Token, 30*time.Second)
		check("heartbeat", err)
		step("model call")
		_, err = s.RecordModelCall(ctx, ModelCall{TicketID: id, Attempt: l.Attempt, Role: "maker", PromptTokens: 100})
		check("model call", err)
		step("finish")
		switch r := rng.IntN(10); {
		case r < 6:
			check("complete", s.Complete(ctx, id, l.Token, Result{Branch: fmt.Sprint("b", id)}))
		case r < 8:
			_, err = s.Fail(ctx, id, l.Token, Failure{Kind: FailFix, Reason: "tests failed"})
			check("fail", err)
		default:
			_, err = s.Fail(ctx, id, l.Token, Failure{Kind: FailTransport, Reason: "reset"})
			check("release", err)
		}
	}
}

// crashMaxAttempts is small on purpose: kills must not spend attempts (issue 12).
const crashMaxAttempts = 3

// TestCrashRecovery kills a worker process with SIGKILL at random points, at least 50 times
// (10 with -short), restarting it each time with the clock moved past the dead worker's
// lease; then lets a last worker drain the queue. Every ticket must end in exactly one
// terminal state, none done twice, and its attempts must match its claimed events less its
// rescues. No ticket whose lost leases stay below the rescue limit may escalate for them,
// however small max_attempts is; one that reaches the limit must escalate saying so.
func TestCrashRecovery(t *testing.T) {
	if os.Getenv(envCrashDB) != "" {
		t.Skip("inside the helper process")
	}
	forEachEngine(t, testCrashRecovery)
}

func testCrashRecovery(t *testing.T, e engine) {
	// The child runs ahead of the lines the parent has read, so a kill lands a random way
	// past its line (mid-call included) and each child finishes several tickets: enqueue
	// enough that the kills land before the queue drains.
	kills, tickets := 50, 200
	if testing.Short() {
		kills, tickets = 10, 100
	}
	path := e.location(t)
	ctx := context.Background()
	s, err := OpenLocation(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range tickets {
		if _, _, err := s.Enqueue(ctx, NewTicket{Source: "crash", ExternalID: fmt.Sprint(i), MaxAttempts: crashMaxAttempts}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	// enqueueMore tops the queue up when a child drained it before its kill landed (the
	// child runs ahead of the parent, by a machine-dependent amount), so the test always
	// reaches its kill count.
	enqueueMore := func(n int) {
		t.Helper()
		s, err := OpenLocation(ctx, path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for range n {
			if _, _, err := s.Enqueue(ctx, NewTicket{Source: "crash", ExternalID: fmt.Sprint(tickets), MaxAttempts: crashMaxAttempts}); err != nil {
				t.Fatal(err)
			}
			tickets++
		}
	}

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	offset := time.Duration(0)
	// run starts a child; killAfter > 0 kills it after that many progress lines.
	run := func(killAfter int) (killed bool) {
		t.Helper()
		offset += time.Minute // past the previous child's 30 s lease and any backoff
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), envCrashDB+"="+path,
			envCrashOffset+"="+strconv.FormatInt(offset.Milliseconds(), 10),
			envCrashSeed+"="+strconv.FormatUint(rng.Uint64(), 10))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr limitedBuffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		lines := 0
		for sc.Scan() {
			if lines++; killAfter > 0 && lines == killAfter {
				cmd.Process.Signal(syscall.SIGKILL)
				killed = true
				break
			}
		}
		err = cmd.Wait()
		if !killed && err != nil {
			t.Fatalf("worker process failed: %v\n%s", err, stderr.String())
		}
		return killed
	}
	done := 0
	for refills := 0; done < kills && refills < 20; {
		if run(1 + rng.IntN(15)) {
			done++
		} else {
			enqueueMore(50) // the queue drained before the kill: more work, same kill count
			refills++
		}
	}
	// Drain: backoffs may leave tickets waiting, so run until nothing is left.
	for range 20 {
		run(0)
		s, err := OpenLocation(ctx, path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		left, _ := s.List(ctx, Filter{States: []State{StateQueued, StateRunning}})
		s.Close()
		if len(left) == 0 {
			break
		}
	}
	t.Logf("%d tickets, %d kills", tickets, done)
	if done < kills {
		t.Errorf("only %d kills before the queue drained; want %d", done, kills)
	}
	s, err = OpenLocation(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	d, esc := checkExactlyOnce(t, s, false)
	var rescues int
	s.rd.QueryRow(ctx, `SELECT count(*) FROM events WHERE kind = 'lease_expired'`).Scan(&rescues)
	t.Logf("done %d, escalated %d, lease rescues %d", d, esc, rescues)
	if d+esc != tickets {
		t.Errorf("done %d + escalated %d != %d tickets", d, esc, tickets)
	}
	if rescues == 0 {
		t.Error("no lease_expired events: the kills never landed inside a lease")
	}
	checkCrashesSpendNothing(t, s, DefaultMaxRescues)
	if e.name == "sqlite" {
		var ok string
		if err := s.rd.QueryRow(ctx, `PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
			t.Errorf("integrity_check = %q, %v", ok, err)
		}
	}
}

// checkCrashesSpendNothing checks each ticket's lost leases against how it ended.
func checkCrashesSpendNothing(t *testing.T, s *Store, limit int) {
	t.Helper()
	rows, err := s.rd.Query(context.Background(), `SELECT t.id, t.state, t.attempts, t.max_attempts, t.rescues, t.reason,
			(SELECT count(*) FROM events e WHERE e.ticket_id = t.id AND e.kind = 'lease_expired'),
			(SELECT count(*) FROM events e WHERE e.ticket_id = t.id AND e.kind = 'escalated')
		FROM tickets t`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var hit, wouldHaveEscalated, atLimit int
	for rows.Next() {
		var (
			id                                            int64
			state                                         State
			attempts, maxAttempts, rescues, lost, failEsc int
			reason                                        string
		)
		if err := rows.Scan(&id, &state, &attempts, &maxAttempts, &rescues, &reason, &lost, &failEsc); err != nil {
			t.Fatal(err)
		}
		if lost > 0 {
			hit++
		}
		if attempts+lost > maxAttempts {
			wouldHaveEscalated++ // charging lost leases as attempts would have ended it early
		}
		switch {
		case attempts > maxAttempts:
			t.Errorf("ticket %d: attempts %d > max %d", id, attempts, maxAttempts)
		case state == StateEscalated && failEsc != 1:
			t.Errorf("ticket %d: escalated after %d lost leases (limit %d), attempts %d of %d, reason %q; want lost leases not charged",
				id, lost, limit, attempts, maxAttempts, reason)
		case lost >= limit:
			atLimit++ // a lost lease alone blames no ticket: SettleDead does (TestSettleDead)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d tickets lost a lease; %d would have escalated had lost leases been charged (max_attempts %d); %d reached the rescue limit %d",
		hit, wouldHaveEscalated, crashMaxAttempts, atLimit, limit)
}

// limitedBuffer keeps the first 8 KiB written to it.
type limitedBuffer struct{ b []byte }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := 8<<10 - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string { return string(l.b) }
