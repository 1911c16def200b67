package main

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store"
)

// TestRevise: revise puts a done ticket back as a round on its fix branch with the note
// (show lists it); a queued ticket and an empty note are refused; past review.max_rounds
// (--config) the ticket escalates and revise exits refused.
func TestRevise(t *testing.T) {
	f := setup(t)
	id := strconv.FormatInt(f.done, 10)
	for _, bad := range []struct {
		args []string
		code int
	}{
		{[]string{"revise", id}, exitUsage},
		{[]string{"revise", strconv.FormatInt(f.queued, 10), "use Decimal"}, exitRefused},
		{[]string{"revise", "999", "use Decimal"}, exitNotFound},
	} {
		if r := ctl(t, append([]string{"--db", f.db}, bad.args...)...); r.code != bad.code {
			t.Errorf("ticketctl %q: exit %d, want %d\n%s", bad.args, r.code, bad.code, r.stderr)
		}
	}
	r := ctl(t, "--db", f.db, "--json", "revise", id, "keep", "the", "empty-list", "guard but raise ValueError")
	if r.code != exitOK {
		t.Fatalf("revise: exit %d\n%s", r.code, r.stderr)
	}
	var got reviseJSON
	decode(t, r, &got)
	if got.State != store.StateQueued || got.Round.N != 1 || got.Round.Branch != "ticketd/1-average" || got.Round.Note != "keep the empty-list guard but raise ValueError" {
		t.Errorf("revise --json = %+v; want queued, round 1 on ticketd/1-average with the note", got)
	}
	r = ctl(t, "--db", f.db, "show", id)
	mustContain(t, "show", r.stdout, "Round 1 (revise)", "on ticketd/1-average", "note: keep the empty-list guard")

	// Finish the round, then ask more than max_rounds: 1 allows.
	ctx := context.Background()
	s, err := store.Open(ctx, f.db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.Claim(ctx, "w", time.Hour)
	if err != nil || l.Ticket.ID != f.done {
		t.Fatalf("claim the round: %+v, %v", l.Ticket.ID, err)
	}
	if err := s.Complete(ctx, f.done, l.Token, store.Result{Branch: "ticketd/1-average", ResultDir: "/out/1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPullCI(ctx, f.done, "0123456789abcdef", store.CIStuck, "waiting for approval (action_required): tests"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	r = ctl(t, "--db", f.db, "show", id)
	mustContain(t, "show", r.stdout, "Pull request checks at 0123456789ab: stuck", "action_required")
	cfg := writeConfig(t, f.db)
	if err := appendFile(cfg, "review:\n  max_rounds: 1\n"); err != nil {
		t.Fatal(err)
	}
	r = ctl(t, "--config", cfg, "revise", id, "one more thing")
	if r.code != exitRefused || !strings.Contains(r.stdout, "escalated") {
		t.Errorf("revise past max_rounds: exit %d, stdout %q; want refused, the ticket escalated\n%s", r.code, r.stdout, r.stderr)
	}
}

func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
