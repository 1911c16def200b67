package daemon

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/store"
)

// TestWindowGrace: when the run window closes, claims stop; an attempt still running gets
// the grace period. One that finishes inside it is done; one that does not is stopped and
// released without spending its attempt.
func TestWindowGrace(t *testing.T) {
	requirePytest(t)
	tests := []struct {
		name         string
		grace        time.Duration
		wantState    store.State
		wantAttempts int
	}{
		{name: "finishes within the grace period", grace: time.Minute, wantState: store.StateDone, wantAttempts: 1},
		{name: "stopped when the grace period ends", grace: 100 * time.Millisecond, wantState: store.StateQueued, wantAttempts: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, 2)
			// Every model answer takes 150 ms: an attempt (about 6 calls) outlives the window.
			_, url := f.scripted(t, scriptedmodel.Options{Seed: 1, Latency: 150 * time.Millisecond})
			cfg := f.config(t, url, 1)
			cfg.Night.Window = 300 * time.Millisecond
			cfg.Night.Grace = tt.grace
			n := runNight(t, cfg, pipeline.LayoutCacheFriendly)
			if !errors.Is(n.rep.Stopped, ErrWindowClosed) {
				t.Errorf("night stopped by %v, want the window", n.rep.Stopped)
			}
			if len(n.rep.Touched) != 1 {
				t.Fatalf("night touched tickets %v, want only the first: no claim after the window", n.rep.Touched)
			}
			tk, err := n.store.Get(context.Background(), n.rep.Touched[0])
			if err != nil {
				t.Fatal(err)
			}
			if tk.State != tt.wantState || tk.Attempts != tt.wantAttempts {
				t.Errorf("ticket %d: %s with %d attempts (%s); want %s with %d", tk.ID, tk.State, tk.Attempts, tk.Reason, tt.wantState, tt.wantAttempts)
			}
			if tt.wantState == store.StateQueued && !strings.Contains(tk.Reason, "grace period") {
				t.Errorf("released with reason %q, want it to name the grace period", tk.Reason)
			}
		})
	}
}
