package status

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store"
)

// TestNightMetrics: the page starts with how the last night that ended went (a failed one
// marked so, with why); /metrics counts the nights by outcome and says when each last ended.
func TestNightMetrics(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "t.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ok, _ := st.StartRun(ctx, "cron")
	if err := st.EndRun(ctx, ok, store.OutcomeOK, ""); err != nil {
		t.Fatal(err)
	}
	failed, _ := st.StartRun(ctx, "cron")
	const why = `no repository passed its start-up checks: repos.app.path /srv/app is not a git repository <b>`
	if err := st.EndRun(ctx, failed, store.OutcomeFailed, why); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Enqueue(ctx, store.NewTicket{Source: "dir", ExternalID: "p", Repo: "app", Title: "parked one"}); err != nil {
		t.Fatal(err)
	}
	l, err := st.Claim(ctx, "w1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Park(ctx, l.Ticket.ID, l.Token, time.Now().Add(time.Hour), "parked until the next night: released 3 times tonight for transport faults"); err != nil {
		t.Fatal(err)
	}
	st.StartRun(ctx, "cron") // tonight's, running

	srv := serve(t, st)
	code, page := get(t, srv.URL+"/")
	if code != 200 {
		t.Fatalf("GET / = %d", code)
	}
	head := section(t, page, "night")
	for _, w := range []string{"outcome-failed", "failed", "Night 2 (cron)", "is not a git repository &lt;b&gt;"} {
		if !strings.Contains(head, w) {
			t.Errorf("last night's section lacks %q:\n%s", w, head)
		}
	}
	for _, w := range []string{"parked one", "released 3 times tonight", `action="/tickets/1/requeue"`} {
		if !strings.Contains(section(t, page, "needs-you"), w) {
			t.Errorf("needs-you lacks %q", w)
		}
	}
	_, metrics := get(t, srv.URL+"/metrics")
	for _, w := range []string{`ticketd_nights_total{outcome="failed"} 1`, `ticketd_nights_total{outcome="ok"} 1`, `ticketd_nights_total{outcome="partial"} 0`,
		`ticketd_tickets{state="parked"} 1`} {
		if !strings.Contains(metrics, w) {
			t.Errorf("/metrics lacks %q", w)
		}
	}
	if !strings.Contains(metrics, `ticketd_last_night_end_timestamp_seconds{outcome="ok"} 1.`) {
		t.Errorf("/metrics lacks the ok night's end time:\n%s", metrics)
	}
}

// TestPageNamesNodes: with several nodes on one store, a running ticket says which node
// holds it, and tonight's heading lists the nodes in the night, the running ones marked.
func TestPageNamesNodes(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "t.db")
	a, err := store.Open(ctx, path, store.Options{Node: "vm-a"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	b, err := store.Open(ctx, path, store.Options{Node: "vm-b"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	run, _, err := a.JoinRun(ctx, "cron", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, joined, err := b.JoinRun(ctx, "cron", time.Hour); err != nil || !joined {
		t.Fatalf("vm-b JoinRun: joined %v, %v", joined, err)
	}
	if _, _, err := a.Enqueue(ctx, store.NewTicket{Source: "dir", ExternalID: "1", Repo: "app", Title: "held by vm-b"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Claim(ctx, "w1-7", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := a.FinishRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	_, page := get(t, serve(t, a).URL+"/")
	for _, w := range []string{`<span class="meta">node vm-b</span>`, "nodes vm-a vm-b (running)"} {
		if !strings.Contains(page, w) {
			t.Errorf("page lacks %q", w)
		}
	}
}
