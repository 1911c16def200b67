package status

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store"
)

// storedTicket works one ticket to done as the daemon does since issue 33: its results
// files written with the ending (store.EndAttempt), and a results folder on disk that says
// something else (an export from another node, or stale). It returns the ticket's id.
func (b *builder) storedTicket(title, diskNote string) int64 {
	b.t.Helper()
	b.n++
	id, _, err := b.st.Enqueue(b.ctx, store.NewTicket{Source: "dir", ExternalID: fmt.Sprintf("issue-%d.md", b.n), Repo: "app", Title: title, Body: title, MaxAttempts: 2})
	if err != nil {
		b.t.Fatal(err)
	}
	b.clk.Advance(2 * time.Second)
	l, err := b.st.Claim(b.ctx, "w1-100", time.Hour)
	if err != nil {
		b.t.Fatal(err)
	}
	rec, _ := json.Marshal(map[string]any{"attempt": 1, "ending": "done", "status": "fixed", "reason": "stored reason"})
	files := []store.ArtifactFile{
		{Path: "report.md", Content: []byte("# Ticket\n\nThe report from the database.\n")},
		{Path: "patch", Content: []byte("--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-bug\n+stored fix\n")},
		{Path: "attempt-1/attempt.json", Content: rec},
		{Path: "attempt-1/patch", Content: []byte("--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-bug\n+stored fix\n")},
	}
	dir := ""
	if diskNote != "" {
		dir = b.resultDir(id, 1, "done", diskNote, "--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-bug\n+"+diskNote+"\n")
		if err := os.WriteFile(filepath.Join(dir, "report.md"), []byte("# Ticket\n\n"+diskNote+"\n"), 0o644); err != nil {
			b.t.Fatal(err)
		}
	}
	if _, err := b.st.EndAttempt(b.ctx, store.Ending{ID: id, Token: l.Token, Kind: store.EndComplete,
		Result: store.Result{Branch: "ticketd/x", ResultDir: dir, Summary: "fixed"}, Artifacts: files}); err != nil {
		b.t.Fatal(err)
	}
	return id
}

// TestPageReadsTheStore: the ticket page shows the attempt records, patch and report the
// database holds, not what a results folder on this disk says; the folder is read only for
// a ticket whose files the database does not hold (one worked before they were kept there).
func TestPageReadsTheStore(t *testing.T) {
	b := newBuilder(t)
	stale := b.storedTicket("Stored and exported differently", "folder copy")
	noFolder := b.storedTicket("Stored, no folder on this node", "")
	old := b.ticket("app", "Worked before results were stored", attemptPlan{1, "done", ""})
	srv := serveWith(t, b.st, Options{})
	for _, id := range []int64{stale, noFolder} {
		_, page := get(t, fmt.Sprintf("%s/tickets/%d", srv.URL, id))
		mustContain(t, fmt.Sprintf("ticket %d", id), page, "The report from the database.", "stored fix", "ended <b>done</b>")
		if strings.Contains(page, "folder copy") {
			t.Errorf("ticket %d's page shows the results folder's text instead of the database's", id)
		}
		if strings.Contains(page, `class="problems"`) {
			t.Errorf("ticket %d's page reports a problem:\n%s", id, page)
		}
		code, file := get(t, fmt.Sprintf("%s/tickets/%d/files/attempt-1/patch", srv.URL, id))
		if code != 200 || !strings.Contains(file, "+stored fix") {
			t.Errorf("GET attempt-1/patch of %d = %d %q, want the stored patch", id, code, file)
		}
	}
	_, page := get(t, fmt.Sprintf("%s/tickets/%d", srv.URL, old))
	mustContain(t, "the old ticket (folder fallback)", page, "&#43;fix", "ended <b>done</b>")
	if code, _ := get(t, fmt.Sprintf("%s/tickets/%d/files/attempt-9/patch", srv.URL, stale)); code != 404 {
		t.Errorf("a file the database does not hold for a stored ticket = %d, want 404", code)
	}
}
