package daemon

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/store/clock/clocktest"
)

// TestDatabaseOutageIsSeen: the database's disk fills while the judge answers, for longer
// than three heartbeats. Before, the running attempt stopped after three failed heartbeats
// and its release counted toward parking as an endpoint fault; the calls made meanwhile were
// not recorded (41 served, 36 recorded); the night said ok. Now the attempt rides the outage
// out and is fixed with its one attempt, every call the model served is recorded once the
// database takes writes again, nothing is released or parked, and the night is partial
// naming the outage.
func TestDatabaseOutageIsSeen(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server
	realNight(t)
	disk := smallDisk(t, "8m")
	f := newFixture(t, 1)
	server, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
	g, gated := newGate(t, url, "judge")
	cfg := f.config(t, gated, 1)
	cfg.Store.Path = filepath.Join(disk, "ticketd.db")
	cfg.Night.Lease, cfg.Night.Heartbeat = 30*time.Second, 100*time.Millisecond
	beats := clocktest.NewSpy() // the night's clock, telling when a heartbeat is armed
	st, logs, done := faultNight(t, cfg, openStore(t, cfg), func(d *Daemon) { d.Clock = beats })
	select {
	case <-g.held:
	case <-time.After(5 * time.Minute):
		t.Fatalf("no judge request within 5 minutes; logs:\n%s", logs.String())
	}
	filler := fill(t, disk)
	waitLog(t, logs, "ticket database write failed")
	// More than three heartbeats fail before the judge answers; its calls are made while the
	// database takes no writes. A beat arms the next one before it writes: five arms after
	// the first failure are four more failed beats.
	beats.Forget()
	beats.WaitArmed(t, cfg.Night.Heartbeat, 5, 3*time.Minute)
	g.release()
	waitLog(t, logs, "attempt ended")
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	rep := waitNight(t, done, logs)
	t.Logf("night %s: %s", rep.Outcome, rep.Error)
	ctx := context.Background()
	tk, _ := st.Get(ctx, 1)
	reasons, charged := released(t, st, 1)
	if tk.State != store.StateDone || tk.Attempts != 1 || len(reasons) != 0 || charged {
		t.Errorf("ticket: %s after %d attempt(s), releases %q; want done at its first attempt, never released", tk.State, tk.Attempts, reasons)
	}
	var servedTicket int
	for _, r := range server.Requests() {
		if bytes.Contains(r.Body, []byte("# Ticket 1")) {
			servedTicket++
		}
	}
	calls, _ := st.ModelCalls(ctx, 1)
	t.Logf("model requests served for ticket 1: %d; recorded: %d", servedTicket, len(calls))
	if len(calls) != servedTicket {
		t.Errorf("%d model calls recorded for ticket 1, the model served %d: the calls made during the outage are lost", len(calls), servedTicket)
	}
	if rep.Outcome != store.OutcomePartial || !strings.Contains(rep.Error, "took no writes") {
		t.Errorf("night %s (%s); want partial naming the outage", rep.Outcome, rep.Error)
	}
	if strings.Contains(logs.String(), "heartbeat kept failing") {
		t.Error("the attempt was stopped by failed heartbeats")
	}
}

// TestControlCharactersInAnIssue: an issue whose title holds a NUL. Before, intake took it,
// the fix passed every check and then git refused the commit message, charging the ticket
// twice. Now intake removes the control characters with a warning on the ticket, and the fix
// is committed. An issue file intake cannot read is listed where an operator looks.
func TestControlCharactersInAnIssue(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server
	realNight(t)
	f := newFixture(t, 1)
	path := filepath.Join(f.issues, "00.md")
	data, _ := os.ReadFile(path)
	title := f.cases[0].Match
	if err := os.WriteFile(path, bytes.Replace(data, []byte("title: "+title), []byte("title: "+strings.Replace(title, "rule 0", "rule\x00 0", 1)+"\x07"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(f.issues, "99.md"), "no front matter here\n")
	_, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
	cfg := f.config(t, url, 1)
	st, logs, done := faultNight(t, cfg, openStore(t, cfg), nil)
	rep := waitNight(t, done, logs)
	ctx := context.Background()
	tk, _ := st.Get(ctx, 1)
	if tk.State != store.StateDone || tk.Attempts != 1 || strings.ContainsAny(tk.Title, "\x00\x07") {
		t.Errorf("ticket: %s after %d attempt(s), title %q (%s); want done at once, its title clean", tk.State, tk.Attempts, tk.Title, tk.Reason)
	}
	warned := false
	evs, _ := st.Events(ctx, 1)
	for _, e := range evs {
		warned = warned || e.Kind == "note" && strings.Contains(e.Reason, "NUL")
	}
	if !warned {
		t.Errorf("no note on the ticket warns of the NUL; events %+v", evs)
	}
	skips, _ := st.IntakeSkips(ctx)
	if len(skips) != 1 || skips[0].Path != "99.md" || !strings.Contains(skips[0].Reason, "front matter") {
		t.Errorf("intake skips %+v; want 99.md with its reason", skips)
	}
	t.Logf("night %s: %s", rep.Outcome, rep.Error)
}
