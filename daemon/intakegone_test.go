package daemon

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/scripts/testenv"
	"github.com/ticketd/ticketd/store"
)

// TestIntakeNotesAGoneIssueFile: removing an issue file does not withdraw its queued ticket;
// the scan says so, in the log and once in the ticket's history, with how to withdraw it.
func TestIntakeNotesAGoneIssueFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	issues := filepath.Join(dir, "issues")
	write(t, filepath.Join(issues, "a.md"), "---\ntitle: mean crashes\n---\nmean([]) raises\n")
	testenv.SettleIssues(t, issues)
	st, err := store.Open(ctx, filepath.Join(dir, "t.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var logs strings.Builder
	d := &Daemon{Store: st, Logger: slog.New(slog.NewTextHandler(&logs, nil)), Config: config.Config{
		Output: filepath.Join(dir, "results"),
		Intake: []config.Source{{Kind: "dir", Path: issues, Repo: "app"}},
		Repos:  map[string]config.Repo{"app": {}},
	}}
	if _, err := d.Intake(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(issues, "a.md")); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := d.Intake(ctx); err != nil {
			t.Fatal(err)
		}
	}
	evs, _ := st.Events(ctx, 1)
	notes := 0
	for _, e := range evs {
		if e.Kind == store.EventNote && strings.Contains(e.Reason, "a.md is no longer in") && strings.Contains(e.Reason, "ticketctl cancel 1") {
			notes++
		}
	}
	if notes != 1 {
		t.Errorf("%d notes say a.md is gone, want 1; events %+v", notes, evs)
	}
	if !strings.Contains(logs.String(), "issue file of a queued ticket is gone") {
		t.Errorf("the log does not say a.md is gone:\n%s", logs.String())
	}
}
