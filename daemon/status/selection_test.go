package status

import (
	"io"
	"net/http"
	"testing"
)

// /metrics counts per repository the fixes the night's whole suite refused after the
// selected tests passed them.
func TestSelectionMissedMetric(t *testing.T) {
	b := newBuilder(t)
	app := b.ticket("app", "one")
	b.ticket("lib", "two")
	for range 2 {
		if err := b.st.NoteSelectionMissed(b.ctx, app, "vm", "tests/test_cli.py failed"); err != nil {
			t.Fatal(err)
		}
	}
	srv := serveWith(t, b.st, Options{})
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	mustContain(t, "metrics", string(body), `ticketd_selection_missed_total{repo="app"} 2`)
}
