package main

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store"
)

// TestBudget: a needs_budget ticket shows in list; budget +$X puts it back in the queue
// with X more per attempt; a ticket that waits for no money, a bad amount and an unknown
// ticket are refused with their exit codes.
func TestBudget(t *testing.T) {
	f := setup(t)
	t.Setenv("USER", "alice")
	ctx := context.Background()
	s, err := store.Open(ctx, f.db, store.Options{Now: func() time.Time { return time.Now().Add(-47*time.Hour - 30*time.Minute) }})
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.Claim(ctx, "w2", time.Hour)
	if err != nil || l.Ticket.ID != f.queued {
		t.Fatalf("claim = %+v, %v; want the queued ticket %d", l.Ticket.ID, err, f.queued)
	}
	if _, err := s.NeedBudget(ctx, f.queued, l.Token, "projected: the next maker call would cost about $0.03, $0.01 of $0.50 remains", "ticketd/4-attempt-1", "/out/4"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	id := strconv.FormatInt(f.queued, 10)

	r := ctl(t, "--db", f.db, "list", "--state", "needs_budget")
	mustContain(t, "list", r.stdout, "needs_budget")
	for _, bad := range []struct {
		args []string
		code int
	}{
		{[]string{"budget", id}, exitUsage},
		{[]string{"budget", id, "lots"}, exitUsage},
		{[]string{"budget", id, "-3"}, exitUsage},
		{[]string{"budget", strconv.FormatInt(f.done, 10), "+1"}, exitRefused},
		{[]string{"budget", "999", "+1"}, exitNotFound},
	} {
		if r := ctl(t, append([]string{"--db", f.db}, bad.args...)...); r.code != bad.code {
			t.Errorf("ticketctl %q: exit %d, want %d\n%s", bad.args, r.code, bad.code, r.stderr)
		}
	}
	r = ctl(t, "--db", f.db, "--json", "budget", id, "+$2.50")
	if r.code != exitOK {
		t.Fatalf("budget: exit %d\n%s", r.code, r.stderr)
	}
	var got budgetJSON
	decode(t, r, &got)
	want := budgetJSON{ID: f.queued, PreviousState: store.StateNeedsBudget, State: store.StateQueued, AddedUSD: 2.5, ExtraUSD: 2.5}
	if got != want {
		t.Errorf("budget --json = %+v, want %+v", got, want)
	}
	if r := ctl(t, "--db", f.db, "budget", id, "+1"); r.code != exitRefused {
		t.Errorf("a second budget on a queued ticket: exit %d, want %d", r.code, exitRefused)
	}
}
