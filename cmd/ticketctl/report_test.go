package main

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store"
)

// TestShowNodeAndReport: show names the node holding a lease, and after the attempt the
// node of the last one and the files the database keeps; report prints one of them (the
// report by default), whichever node wrote it, and a missing file says where to look.
func TestShowNodeAndReport(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "ticketd.db")
	s, err := store.Open(ctx, db, store.Options{Node: "vm-2"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id, _, err := s.Enqueue(ctx, store.NewTicket{Source: "test", ExternalID: "1", Repo: "sample", Title: "off by one"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.Claim(ctx, "w1-42", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	sid := strconv.FormatInt(id, 10)
	r := ctl(t, "--db", db, "show", sid)
	mustContain(t, "show of a running ticket", r.stdout, "w1-42 on node vm-2 until")

	for _, f := range []struct{ path, body string }{{"report.md", "# Ticket 1: off by one\n"}, {"attempt-1/stop-reason", "done\n"}} {
		if err := s.SaveArtifact(ctx, id, f.path, []byte(f.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Complete(ctx, id, l.Token, store.Result{Branch: "ticketd/1-off-by-one"}); err != nil {
		t.Fatal(err)
	}
	r = ctl(t, "--db", db, "show", sid)
	mustContain(t, "show of a done ticket", r.stdout, "vm-2 (of the last attempt)", "attempt-1/stop-reason report.md", "ticketctl report "+sid)

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"report", sid}, "# Ticket 1: off by one\n"},
		{[]string{"report", sid, "attempt-1/stop-reason"}, "done\n"},
	} {
		r := ctl(t, append([]string{"--db", db}, c.args...)...)
		if r.code != 0 || r.stdout != c.want {
			t.Errorf("ticketctl %v = exit %d, %q; want %q", c.args, r.code, r.stdout, c.want)
		}
	}
	r = ctl(t, "--db", db, "report", sid, "patch")
	if r.code == 0 {
		t.Error("report of a file the ticket does not have succeeded")
	}
	mustContain(t, "report of a missing file", r.stderr, "no file patch", "ticketctl show "+sid)
	r = ctl(t, "--db", db, "report", "99")
	if r.code == 0 {
		t.Error("report of a ticket that does not exist succeeded")
	}
}
