package store

import (
	"testing"
	"time"

	"github.com/ticketd/ticketd/store/storedriver"
)

// TestDismissals: a dismissed item is listed with who and when; dismissing again replaces
// the record; undismiss takes it back; a key the console could not have made is refused
// before the database sees it. Both engines.
func TestDismissals(t *testing.T) { forEachEngine(t, testDismissals) }

func testDismissals(t *testing.T, e engine) {
	b := e.setup(t)
	got, err := b.s.Dismissals(b.ctx)
	if err != nil || len(got) != 0 {
		t.Fatalf("Dismissals on a new store = %v, %v; want none", got, err)
	}
	if err := b.s.Dismiss(b.ctx, "ticket/3/escalated/2", "status page: ana", "known flaky\x00 upstream"); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(time.Minute)
	if err := b.s.Dismiss(b.ctx, "night/7", "status page", ""); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(time.Minute)
	if err := b.s.Dismiss(b.ctx, "night/7", "status page: bo", "seen"); err != nil {
		t.Fatal(err)
	}
	got, err = b.s.Dismissals(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	d := got["ticket/3/escalated/2"]
	if len(got) != 2 || d.Actor != "status page: ana" || d.Note != "known flaky upstream" || d.At.IsZero() {
		t.Errorf("Dismissals = %+v; want two, the ticket's by ana with its note cleaned", got)
	}
	if n := got["night/7"]; n.Actor != "status page: bo" || n.Note != "seen" || !n.At.After(d.At) {
		t.Errorf("night/7 dismissed again = %+v; want bo's, later than the first", n)
	}
	if err := b.s.Undismiss(b.ctx, "night/7"); err != nil {
		t.Fatal(err)
	}
	if got, _ = b.s.Dismissals(b.ctx); len(got) != 1 || got["night/7"].Item != "" {
		t.Errorf("after undismiss: %+v; want only the ticket's", got)
	}
	for _, bad := range []string{"", "has space", "tab\there", string(make([]byte, 201))} {
		if err := b.s.Dismiss(b.ctx, bad, "x", ""); err == nil {
			t.Errorf("Dismiss(%q) = nil; want refused", bad)
		}
	}
}

// TestDigestDeliveries: a night's digest delivery is recorded, a later one replaces it, and
// each night keeps its own. Both engines.
func TestDigestDeliveries(t *testing.T) { forEachEngine(t, testDigestDeliveries) }

func testDigestDeliveries(t *testing.T, e engine) {
	b := e.setup(t)
	r1, err := b.s.StartRun(b.ctx, "cron")
	if err != nil {
		t.Fatal(err)
	}
	r2, err := b.s.StartRun(b.ctx, "cron")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.s.RecordDigest(b.ctx, DigestDelivery{RunID: r1, Error: "webhook answered 500 Internal Server Error"}); err != nil {
		t.Fatal(err)
	}
	if err := b.s.RecordDigest(b.ctx, DigestDelivery{RunID: r2, OK: true}); err != nil {
		t.Fatal(err)
	}
	got, err := b.s.Digests(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got[r1].OK || got[r1].Error != "webhook answered 500 Internal Server Error" || !got[r2].OK || got[r2].At.IsZero() {
		t.Errorf("Digests = %+v", got)
	}
	if err := b.s.RecordDigest(b.ctx, DigestDelivery{RunID: r1, OK: true}); err != nil {
		t.Fatal(err)
	}
	if got, _ = b.s.Digests(b.ctx); !got[r1].OK || got[r1].Error != "" || len(got) != 2 {
		t.Errorf("after a retry that worked: %+v", got)
	}
}

// TestConsoleParams: the console's params types give as many arguments as their statements
// number, in both engines.
func TestConsoleParams(t *testing.T) { forEachEngine(t, testConsoleParams) }

func testConsoleParams(t *testing.T, e engine) {
	b := e.setup(t)
	for _, st := range []struct {
		sql    string
		params storedriver.Params
	}{{b.s.q.Console.Dismiss, storedriver.DismissParams{}}, {b.s.q.Console.RecordDigest, storedriver.RecordDigestParams{}}} {
		if got, want := placeholders(st.sql), len(st.params.Args()); got != want {
			t.Errorf("%T: statement numbers %d placeholders, params give %d", st.params, got, want)
		}
	}
}
