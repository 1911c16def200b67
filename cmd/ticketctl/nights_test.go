package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store"
)

// TestNights: nights lists every night with its outcome and why, newest first; stats starts
// with the last night that ended; a failed night is never shown as a quiet one.
func TestNights(t *testing.T) {
	f := setup(t)
	s, err := store.Open(context.Background(), f.db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const why = "model endpoint preflight failed: preflight of models.roles.maker: endpoint rejected the request (HTTP 400) (server said: Unrecognized request argument supplied: prompt_cache_key)"
	failed, _ := s.StartRun(context.Background(), "cron")
	if err := s.EndRun(context.Background(), failed, store.OutcomeFailed, why); err != nil {
		t.Fatal(err)
	}
	running, _ := s.StartRun(context.Background(), "once")
	s.Close()

	var rows []nightRowJSON
	decode(t, ctl(t, "--db", f.db, "nights", "--json"), &rows)
	if len(rows) != 3 || rows[0].ID != running || rows[0].Outcome != "running" || rows[1].Outcome != "failed" || rows[1].Error != why ||
		rows[2].ID != f.runID || rows[2].Outcome != "unfinished" || rows[2].Worked != 3 || rows[2].Done != 1 || !rows[2].CostUnknown {
		t.Errorf("nights --json = %+v", rows)
	}
	decode(t, ctl(t, "--db", f.db, "nights", "--json", "--limit", "1"), &rows)
	if len(rows) != 1 {
		t.Errorf("--limit 1: %d rows", len(rows))
	}
	r := ctl(t, "--db", f.db, "nights")
	mustContain(t, "nights", r.stdout, "OUTCOME", "failed", "Unrecognized request argument supplied: prompt_cache_key", "running", "+ unknown")

	r = ctl(t, "--db", f.db, "stats")
	first := strings.SplitN(r.stdout, "\n", 2)[0]
	if !strings.HasPrefix(first, "last night: night 2 (cron) failed") {
		t.Errorf("stats starts with %q, want the last night's outcome", first)
	}
	mustContain(t, "stats", r.stdout, "why: "+why)
	var rep statsReport
	decode(t, ctl(t, "--db", f.db, "stats", "--json"), &rep)
	if rep.LastNight == nil || rep.LastNight.Outcome != "failed" || rep.LastNight.Error != why {
		t.Errorf("stats --json last_night = %+v", rep.LastNight)
	}
	if r := ctl(t, "--db", f.db, "nights", "--limit", "-1"); r.code != exitUsage {
		t.Errorf("--limit -1: exit %d, want usage", r.code)
	}
}

// TestParkedIsVisibleAndUndone: a parked ticket is listed as parked with its reason and
// until when, shown so, and requeue puts it back (it used to refuse: "already queued").
func TestParkedIsVisibleAndUndone(t *testing.T) {
	f := setup(t)
	s, err := store.Open(context.Background(), f.db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.Claim(context.Background(), "w2", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	const why = "parked until the next `ticketd once`: released 3 times tonight for transport faults (night.max_transport_releases), last: HTTP 503"
	if _, err := s.Park(context.Background(), l.Ticket.ID, l.Token, time.Now().Add(time.Hour), why); err != nil {
		t.Fatal(err)
	}
	s.Close()
	id := strconv.FormatInt(l.Ticket.ID, 10)
	r := ctl(t, "--db", f.db, "list", "--state", "parked")
	mustContain(t, "list --state parked", r.stdout, "parked", l.Ticket.Title, "released 3 times tonight", "ticketctl requeue "+id)
	r = ctl(t, "--db", f.db, "show", id)
	mustContain(t, "show", r.stdout, "parked", why, "ticketctl requeue "+id)
	r = ctl(t, "--db", f.db, "requeue", id)
	if r.code != exitOK || !strings.Contains(r.stdout, "parked -> queued (unparked; attempts kept)") {
		t.Errorf("requeue of a parked ticket: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
}
