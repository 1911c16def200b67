package pipeline

import (
	"context"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/pipeline/tools"
)

// The maker is told which gate refused a submit, and the recorded tool call's OK flag says
// whether the call did what was asked; nothing depends on a magic prefix.
func TestSubmitFeedbackNamesTheGate(t *testing.T) {
	t.Parallel() // each runs its own scripted model, repository and pytest
	tests := []struct {
		name    string
		c       scriptedmodel.Case
		refusal string // start of the first refused submit's answer
		absent  string
	}{
		{"checks", scriptedmodel.Case{Behaviour: scriptedmodel.BehaviourWrongThenRight, Patch: fixPatch + doubleTwoTest}, refusedByChecks, "code reviewer (checker) found"},
		{"no evidence", scriptedmodel.Case{Behaviour: scriptedmodel.BehaviourWrongThenRight}, refusedNoProof, "the checks failed"},
		{"checker", scriptedmodel.Case{CheckerBlocksOnce: true}, refusedByChecker, "the checks failed"},
		{"judge", scriptedmodel.Case{JudgeFailsOnce: true}, refusedByJudge, "the checks failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, job, rec := setupAttempt(t, tt.c)
			out := r.Run(context.Background(), job)
			if out.Status != StatusFixed {
				t.Fatalf("status %s (%s), want fixed", out.Status, out.Reason)
			}
			var submits []string
			var oks []bool
			for _, tc := range rec.tools {
				if tc.Tool == tools.Submit {
					submits = append(submits, tc.Result)
					oks = append(oks, tc.OK)
				}
			}
			if len(submits) < 2 {
				t.Fatalf("%d submits recorded, want a refused one then an accepted one", len(submits))
			}
			first := submits[0]
			if !strings.HasPrefix(first, tt.refusal) || strings.Contains(first, tt.absent) {
				t.Errorf("first submit answered:\n%s\nwant it to start %q and not to say %q", first, tt.refusal, tt.absent)
			}
			if oks[0] || !oks[len(oks)-1] {
				t.Errorf("OK flags %v: want false for the refused submit, true for the accepted one", oks)
			}
		})
	}
}
