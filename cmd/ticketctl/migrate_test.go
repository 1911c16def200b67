package main

import (
	"fmt"
	"testing"

	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/store/storetest"
)

// TestMigrateToPostgres: the fixture's SQLite store is copied into an empty PostgreSQL
// database, after which ticketctl reads the same tickets there; a second migrate is refused
// and leaves the target as it was; bad invocations say what to do.
func TestMigrateToPostgres(t *testing.T) {
	f := setup(t)
	url := storetest.FreshPostgres(t)
	t.Setenv("TICKETD_TEST_MIGRATE_URL", url)
	r := ctl(t, "--db", f.db, "--json", "migrate", "--to-url-env", "TICKETD_TEST_MIGRATE_URL")
	if r.code != 0 {
		t.Fatalf("migrate: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var rep migrateJSON
	decode(t, r, &rep)
	counts := map[string]int64{}
	for _, tc := range rep.Tables {
		counts[tc.Table] = tc.Rows
	}
	if counts["tickets"] != 4 || counts["events"] == 0 || counts["model_calls"] == 0 || counts["runs"] != 1 {
		t.Errorf("copied %+v; want the fixture's 4 tickets with their events, calls and night", rep.Tables)
	}
	before, after := ctl(t, "--db", f.db, "--json", "list"), ctl(t, "--db", url, "--json", "list")
	var a, b []store.Summary
	decode(t, before, &a)
	decode(t, after, &b)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("list differs after the migration:\nSQLite     %+v\nPostgreSQL %+v", a, b)
	}
	again := ctl(t, "--db", f.db, "migrate", "--to-url-env", "TICKETD_TEST_MIGRATE_URL")
	mustContain(t, "second migrate", again.stderr, "not empty", "nothing was copied")
	if again.code == 0 {
		t.Error("a second migrate into the same database succeeded")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--db", f.db, "migrate"}, "--to-url-env is required"},
		{[]string{"--db", f.db, "migrate", "--to-url-env", "postgres://x@y/z"}, "not a variable name"},
		{[]string{"--db", f.db, "migrate", "--to-url-env", "TICKETD_TEST_UNSET_VARIABLE"}, "is not set"},
		{[]string{"--db", url, "migrate", "--to-url-env", "TICKETD_TEST_MIGRATE_URL"}, "already a PostgreSQL database"},
	} {
		r := ctl(t, tc.args...)
		if r.code == 0 {
			t.Errorf("ticketctl %v succeeded", tc.args)
		}
		mustContain(t, fmt.Sprint(tc.args), r.stderr, tc.want, "try: ")
	}
}
