package pipeline

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/pipeline/validate"
)

// TestAttemptStopsWhenWorktreeOutgrowsLimit: a check that grows the worktree past the size
// limit ends the attempt as failed with that reason, even though the fix itself is right.
func TestAttemptStopsWhenWorktreeOutgrowsLimit(t *testing.T) {
	t.Parallel() // each runs its own scripted model, repository and pytest
	r, job, _ := setupAttempt(t, scriptedmodel.Case{Behaviour: scriptedmodel.BehaviourSolve})
	r.Checks = &validate.Runner{Sandbox: testSandbox(t), MaxWorktreeSize: 2 << 20, SizePoll: 20 * time.Millisecond}
	job.Checks = append(job.Checks, validate.Check{Name: "fill", Kind: validate.KindCommand,
		Command: []string{"sh", "-c", "head -c 3000000 /dev/zero > big.bin; sleep 120"}, Timeout: 3 * time.Minute})
	out := r.Run(context.Background(), job)
	// Not stopped, the fill check alone would take 2 minutes; stopped, the attempt takes
	// seconds, and 90 s holds at any load we have seen.
	if out.Status != StatusFailed || !strings.Contains(out.Reason, "size limit") || out.Duration > 90*time.Second {
		t.Errorf("got status %s, reason %q after %s; want failed on the size limit", out.Status, out.Reason, out.Duration)
	}
}
