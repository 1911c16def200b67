package main

import (
	"context"
	"strconv"
	"testing"

	"github.com/ticketd/ticketd/store"
)

// TestUnlink: a duplicate shows in list as "duplicate of #N" and in show with its reason;
// unlink puts it back in the queue; a ticket that is no duplicate and an unknown ticket are
// refused with their exit codes.
func TestUnlink(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	s, err := store.Open(ctx, f.db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dup, _, err := s.Enqueue(ctx, store.NewTicket{Source: "test", ExternalID: "dup", Repo: "sample", Title: "Dates parsed in UTC", Body: "same"})
	if err != nil {
		t.Fatal(err)
	}
	if linked, err := s.LinkDuplicate(ctx, dup, f.queued, "same failing test tests/test_dates.py::test_utc"); err != nil || !linked {
		t.Fatalf("LinkDuplicate = %v, %v", linked, err)
	}
	s.Close()
	id := strconv.FormatInt(dup, 10)

	r := ctl(t, "--db", f.db, "list", "--state", "duplicate")
	mustContain(t, "list", r.stdout, "duplicate of #"+strconv.FormatInt(f.queued, 10))
	r = ctl(t, "--db", f.db, "show", id)
	mustContain(t, "show", r.stdout, "tests/test_dates.py::test_utc")
	for _, bad := range []struct {
		args []string
		code int
	}{
		{[]string{"unlink"}, exitUsage},
		{[]string{"unlink", strconv.FormatInt(f.queued, 10)}, exitRefused},
		{[]string{"unlink", "999"}, exitNotFound},
	} {
		if r := ctl(t, append([]string{"--db", f.db}, bad.args...)...); r.code != bad.code {
			t.Errorf("ticketctl %q: exit %d, want %d\n%s", bad.args, r.code, bad.code, r.stderr)
		}
	}
	r = ctl(t, "--db", f.db, "--json", "unlink", id)
	if r.code != exitOK {
		t.Fatalf("unlink: exit %d\n%s", r.code, r.stderr)
	}
	var got unlinkJSON
	decode(t, r, &got)
	if want := (unlinkJSON{ID: dup, DuplicateOf: f.queued, PreviousState: store.StateDuplicate, State: store.StateQueued}); got != want {
		t.Errorf("unlink --json = %+v, want %+v", got, want)
	}
	if r := ctl(t, "--db", f.db, "unlink", id); r.code != exitRefused {
		t.Errorf("a second unlink: exit %d, want %d\n%s", r.code, exitRefused, r.stderr)
	}
}
