package storepgxv5_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ticketd/ticketd/store/storepgxv5"
	"github.com/ticketd/ticketd/store/storetest"
)

// TestLockWaitSurvivesLostSession: a node waiting for a lock another node holds (the intake
// lock while the first node prepares its night) keeps waiting when the server drops its
// session (a restart, a failover, an idle cut): the lost wait never held the lock, so it
// waits again on a fresh session and gets the lock once the holder lets go, instead of
// giving up its night.
func TestLockWaitSurvivesLostSession(t *testing.T) {
	url := storetest.FreshPostgres(t)
	ctx := context.Background()
	holder, err := storepgxv5.Open(ctx, url, storepgxv5.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	waiter, err := storepgxv5.Open(ctx, url, storepgxv5.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer waiter.Close()
	unlock, err := holder.Lock(ctx, "intake")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock() // before the holder's Close, which waits for the lock's session
	type result struct {
		unlock func()
		err    error
	}
	got := make(chan result, 1)
	go func() {
		u, err := waiter.Lock(ctx, "intake")
		got <- result{u, err}
	}()
	// The server ends the waiting session, as a restart does to every session.
	admin, err := pgx.Connect(ctx, storetest.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	waiting := func() int {
		var pid int
		admin.QueryRow(ctx, `SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event = 'advisory' AND query LIKE '%pg_advisory_lock%' LIMIT 1`).Scan(&pid)
		return pid
	}
	pid := 0
	for deadline := time.Now().Add(30 * time.Second); pid == 0; pid = waiting() { // bounds a broken build only
		if time.Now().After(deadline) {
			t.Fatal("no session waits for the lock within 30 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
	// It waits again on a new session: the lock is still the holder's.
	for deadline := time.Now().Add(30 * time.Second); ; {
		select {
		case r := <-got:
			if r.err == nil {
				r.unlock()
			}
			t.Fatalf("Lock returned while another node holds the lock, after the server dropped the waiting session: %v; want it to wait on", r.err)
		default:
		}
		if p := waiting(); p != 0 && p != pid {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no new session waits for the lock within 30 s of the old one's end")
		}
		time.Sleep(10 * time.Millisecond)
	}
	unlock()
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatalf("Lock after the holder let go: %v", r.err)
		}
		r.unlock()
	case <-time.After(30 * time.Second):
		t.Fatal("Lock did not return within 30 s of the holder letting go")
	}
}
