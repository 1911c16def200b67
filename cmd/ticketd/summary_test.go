package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/store"
)

// TestNightCounts: the summary of `ticketd once` gives the night's done and escalated
// counts only where its run's end is recorded and readable. Before, a night whose database
// died at its end said "0 done" although its fixes were done; now it says the counts are
// unknown, and why.
func TestNightCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "ticketd.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ended, err := st.StartRun(ctx, "once")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.FinishRun(ctx, ended); err != nil {
		t.Fatal(err)
	}
	open, err := st.StartRun(ctx, "once")
	if err != nil {
		t.Fatal(err)
	}
	closed, err := store.Open(ctx, filepath.Join(t.TempDir(), "ticketd.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	t.Cleanup(func() { st.Close() })
	for _, tc := range []struct {
		name string
		st   *store.Store
		id   int64
		want string
	}{
		{"end recorded", st, ended, "0 done, 0 escalated"},
		{"end not recorded", st, open, "done and escalated unknown: the night's end is not recorded"},
		{"no such night", st, open + 1, "done and escalated unknown: the ticket database holds no night"},
		{"database unreadable", closed, ended, "done and escalated unknown: the ticket database could not be read: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := nightCounts(ctx, tc.st, tc.id)
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("nightCounts(night %d) = %q; want it to start %q", tc.id, got, tc.want)
			}
		})
	}
}
