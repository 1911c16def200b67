package main

import (
	"context"
	"fmt"
	"path/filepath"
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

// TestStatsFromNightRecords: a night's stats are what its record says it did, as /nights
// shows, not where its tickets stand now: a ticket escalated in night 1 and fixed by night 2
// counts as night 1's escalation and night 2's done. ticketctl nights shows a digest that
// was not delivered.
func TestStatsFromNightRecords(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "t.db")
	ctx := context.Background()
	s, err := store.Open(ctx, db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n1, _ := s.StartRun(ctx, "cron")
	id, _, err := s.Enqueue(ctx, store.NewTicket{Source: "dir", ExternalID: "a.md", Repo: "app", Title: "Flaky fix", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.Claim(ctx, "w1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fail(ctx, id, l.Token, store.Failure{Kind: store.FailFix, Reason: "fix: no luck", Final: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.EndRun(ctx, n1, store.OutcomeOK, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordDigest(ctx, store.DigestDelivery{RunID: n1, Error: "digest: webhook answered 500 Internal Server Error"}); err != nil {
		t.Fatal(err)
	}
	if err := s.RequeueTicket(ctx, id, "ana", store.RequeueOptions{}); err != nil {
		t.Fatal(err)
	}
	n2, _ := s.StartRun(ctx, "cron")
	l, err = s.Claim(ctx, "w1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(ctx, id, l.Token, store.Result{Branch: "ticketd/1-fix"}); err != nil {
		t.Fatal(err)
	}
	if err := s.EndRun(ctx, n2, store.OutcomeOK, ""); err != nil {
		t.Fatal(err)
	}
	s.Close()

	var rows []nightRowJSON
	decode(t, ctl(t, "--db", db, "nights", "--json"), &rows)
	byID := map[int64]nightRowJSON{}
	for _, r := range rows {
		byID[r.ID] = r
	}
	if byID[n1].Escalated != 1 || byID[n1].Done != 0 || byID[n2].Done != 1 || !strings.Contains(byID[n1].Digest, "failed: digest: webhook answered 500") {
		t.Fatalf("nights --json = %+v; want night 1 with its escalation and failed digest, night 2 with its done", rows)
	}
	for _, n := range []int64{n1, n2} {
		var rep statsReport
		decode(t, ctl(t, "--db", db, "--json", "stats", "--run", fmt.Sprint(n)), &rep)
		r := byID[n]
		if !rep.FromRecord || rep.Tickets != r.Worked || rep.ByState[store.StateDone] != r.Done || rep.ByState[store.StateEscalated] != r.Escalated {
			t.Errorf("stats --run %d = tickets %d, done %d, escalated %d; nights says worked %d, done %d, escalated %d",
				n, rep.Tickets, rep.ByState[store.StateDone], rep.ByState[store.StateEscalated], r.Worked, r.Done, r.Escalated)
		}
	}
	var rep statsReport
	decode(t, ctl(t, "--db", db, "--json", "stats"), &rep)
	for _, n := range rep.Nights {
		if r := byID[n.Run.ID]; n.ByState[store.StateDone] != r.Done || n.ByState[store.StateEscalated] != r.Escalated || n.SuccessRate != map[bool]float64{true: 1, false: 0}[r.Done == 1] {
			t.Errorf("stats night %d: done %d escalated %d rate %v; nights: done %d escalated %d", n.Run.ID, n.ByState[store.StateDone], n.ByState[store.StateEscalated], n.SuccessRate, r.Done, r.Escalated)
		}
	}
	if rep.ByState[store.StateDone] != 1 || rep.ByState[store.StateEscalated] != 0 {
		t.Errorf("the overall column is where tickets stand now: %+v", rep.ByState)
	}
	out := ctl(t, "--db", db, "nights")
	mustContain(t, "nights", out.stdout, fmt.Sprintf("night %d: morning digest not delivered: digest: webhook answered 500", n1))
	mustContain(t, "stats", ctl(t, "--db", db, "stats").stdout, "queued")
}
