package daemon

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/store"
)

// TestUnrecordedNightEnd: a night whose database took no writes at its end kept that end
// in the workspace. Before, the next start closed the night as a process that died and
// charged a crash to the ticket in flight; now it records the kept end (partial, naming the
// outage), charges no crash, and forgets the file. A kept end whose night is closed
// already, or is not in this database, is dropped without writing anything.
func TestUnrecordedNightEnd(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		closed bool // the night was closed before the start that reads the file
	}{
		{"open night", false},
		{"closed night", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			st, err := store.Open(ctx, filepath.Join(dir, "ticketd.db"), store.Options{Node: "vm"})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			run, _, err := st.JoinRun(ctx, "once", time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			id, _, err := st.Enqueue(ctx, store.NewTicket{Source: "dir", ExternalID: "a", Repo: "shop", Title: "t", Body: "b"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Claim(ctx, "w1-1", time.Minute); err != nil {
				t.Fatal(err)
			}
			if tc.closed {
				if err := st.EndRun(ctx, run, store.OutcomeOK, ""); err != nil {
					t.Fatal(err)
				}
			}
			d := &Daemon{Config: config.Config{Workspace: filepath.Join(dir, "work")}, Store: st, Logger: slog.New(slog.DiscardHandler)}
			d.keepUnrecorded(d.logger(), NightReport{RunID: run, Outcome: store.OutcomePartial, Error: "the ticket database took no writes from 01:00 to the night's end"})
			dead, err := d.SettleDeadNights(ctx, true)
			if err != nil {
				t.Fatal(err)
			}
			runs, err := st.Runs(ctx, 0)
			if err != nil || len(runs) != 1 {
				t.Fatalf("nights %+v, %v; want one", runs, err)
			}
			tk, err := st.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("dead %v; night %s (%s); ticket %s, %d crashes", store.DescribeDead(dead), runs[0].Outcome, runs[0].Error, tk.State, tk.Crashes)
			switch {
			case tc.closed && (runs[0].Outcome != store.OutcomeOK || len(dead) != 0):
				t.Errorf("a closed night was written over: %s (%s), dead %v", runs[0].Outcome, runs[0].Error, dead)
			case !tc.closed && (len(dead) != 0 || runs[0].Outcome != store.OutcomePartial || !strings.Contains(runs[0].Error, "took no writes")):
				t.Errorf("night %s (%s), dead %v; want partial naming the outage, not a process that died", runs[0].Outcome, runs[0].Error, dead)
			}
			if tk.Crashes != 0 {
				t.Errorf("ticket %d: %d crashes; want none: its night ran to its end", id, tk.Crashes)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, "work", "*")); len(left) > 0 {
				t.Errorf("the kept end is still there: %v", left)
			}
		})
	}
}
