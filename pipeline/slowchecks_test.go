package pipeline

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/pipeline/validate"
)

// hogConftest makes a pytest run hang while TICKETD_TEST_HOG is set: the deterministic
// stand-in for a machine so loaded that the suite overruns its time-out.
const hogConftest = "import os\nimport time\n\nif os.environ.get(\"TICKETD_TEST_HOG\"):\n    time.sleep(120)\n"

// hogTimeout is the time-out of a hogged run: it always expires (the run sleeps 120 s).
const hogTimeout = 3 * time.Second

// hogChecks runs the real checks, with TICKETD_TEST_HOG set on the whole-suite runs it is
// told to slow (counted from 1 after the baseline), and can cut a run short from outside.
type hogChecks struct {
	inner CheckRunner
	slow  func(n int) bool // which whole-suite run hangs
	// cancel, when set, is called before the first whole-suite run (the budget or a
	// shutdown arriving while the checks run).
	cancel func()

	mu   sync.Mutex
	full int
}

func (h *hogChecks) Run(ctx context.Context, dir string, checks []validate.Check) []validate.Result {
	run := make([]validate.Check, len(checks))
	for i, c := range checks {
		run[i] = c
		if len(c.Only) > 0 {
			continue
		}
		h.mu.Lock()
		h.full++
		n := h.full
		h.mu.Unlock()
		if h.cancel != nil && n == 1 {
			h.cancel()
		}
		if h.slow != nil && h.slow(n) {
			env := maps.Clone(c.Env)
			if env == nil {
				env = map[string]string{}
			}
			env["TICKETD_TEST_HOG"] = "1"
			// The hogged run hangs (120 s) past a short time-out; every other run has the
			// check's own generous one, so none times out by the machine's load alone.
			run[i].Env, run[i].Timeout = env, hogTimeout
		}
	}
	return h.inner.Run(ctx, dir, run)
}

// A suite that times out once under a hog is re-run on its own and judged on that run: the
// fix ships and the gate says why it was slow. One that times out every time is reported as
// timed out twice, never as a failure the change caused (the negative control).
func TestTimeoutIsTheMachines(t *testing.T) {
	t.Parallel() // each runs its own scripted model, repository and pytest
	tests := []struct {
		name   string
		slow   func(n int) bool
		status Status
	}{
		{"slow once", func(n int) bool { return n == 1 }, StatusFixed},
		{"slow every time", func(int) bool { return true }, StatusFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, job, _ := setupAttemptWith(t, scriptedmodel.Case{Patch: fixPatch + doubleTwoTest}, map[string]string{"conftest.py": hogConftest})
			job.Checks = everySubmit(job.Checks)
			job.Checks[0].Timeout = 2 * time.Minute
			r.Checks = &hogChecks{inner: r.Checks, slow: tt.slow}
			out := r.Run(context.Background(), job)
			history := strings.Join(out.History, "\n")
			if out.Status != tt.status {
				t.Fatalf("status %s (%s), want %s\nhistory:\n%s", out.Status, out.Reason, tt.status, history)
			}
			if strings.Contains(history, "you caused") || strings.Contains(out.Reason, "you caused") {
				t.Errorf("a time-out was blamed on the change:\n%s", history)
			}
			switch tt.status {
			case StatusFixed:
				if out.Gate == nil || len(out.Gate.Slow) != 1 || !strings.Contains(out.Gate.Slow[0], "timed out at first (load ") {
					t.Errorf("gate's slow checks %v; want the one that timed out at first, with the load", out.Gate)
				}
			default:
				if !strings.Contains(history, "timed out twice") {
					t.Errorf("history does not say the check timed out twice:\n%s", history)
				}
			}
		})
	}
}

// A budget or a shutdown that cuts the checks short ends the attempt as what it is, never as
// checks the change failed.
func TestCancelledChecksAreNotFailures(t *testing.T) {
	t.Parallel() // each runs its own scripted model, repository and pytest
	tests := []struct {
		name   string
		cause  error
		status Status
	}{
		{"budget", fmt.Errorf("%w: wall clock of 1m0s", errBudget), StatusBudget},
		{"shutdown", errors.New("ticketd is shutting down"), StatusStopped},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, job, _ := setupAttempt(t, scriptedmodel.Case{Patch: fixPatch + doubleTwoTest})
			job.Checks = everySubmit(job.Checks)
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			r.Checks = &hogChecks{inner: r.Checks, cancel: func() { cancel(tt.cause) }}
			out := r.Run(ctx, job)
			history := strings.Join(out.History, "\n")
			if out.Status != tt.status || !strings.Contains(out.Reason, tt.cause.Error()) {
				t.Fatalf("status %s (%s), want %s naming %q\nhistory:\n%s", out.Status, out.Reason, tt.status, tt.cause, history)
			}
			if strings.Contains(history, "checks failed") || strings.Contains(history, "you caused") {
				t.Errorf("cut-short checks were counted as failed:\n%s", history)
			}
			if out.Gate == nil || !out.Gate.Cancelled {
				t.Errorf("gate %+v; want it marked cancelled for the report", out.Gate)
			}
		})
	}
}
