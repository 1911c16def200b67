package pipeline

import (
	"context"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
)

// Review rounds, asserted on the recorded model calls: invented evidence is dropped and
// counted, a real blocker sends the maker back once, round 2 adds nothing new, and there is
// never a third review.
func TestReviewRounds(t *testing.T) {
	t.Parallel() // each runs its own scripted model, repository and pytest
	tests := []struct {
		name          string
		c             scriptedmodel.Case
		advisory      bool
		status        Status
		reason        string
		checkerCalls  int
		judgeCalls    int
		dropped       int
		submits       int
		verdict       string
		findingsAtEnd int
	}{
		{name: "invented evidence dropped, real blocker withdrawn in round 2",
			c:      scriptedmodel.Case{CheckerInventsEvidence: true, CheckerBlocksOnce: true},
			status: StatusFixed, checkerCalls: 2, judgeCalls: 1, dropped: 2, submits: 2, verdict: "pass"},
		{name: "blocker confirmed in round 2 ends the attempt; its new remark is dropped",
			c:      scriptedmodel.Case{CheckerBlocksAlways: true},
			status: StatusFailed, reason: "after 2 review rounds", checkerCalls: 2, judgeCalls: 0, dropped: 1, submits: 2, findingsAtEnd: 1},
		{name: "judge's unmet criterion sends the maker back, twice ends it",
			c:      scriptedmodel.Case{JudgeFailsAlways: true},
			status: StatusFailed, reason: "judge still rejects", checkerCalls: 2, judgeCalls: 2, submits: 2, verdict: "fail"},
		{name: "advisory judge only annotates",
			c: scriptedmodel.Case{JudgeFailsAlways: true}, advisory: true,
			status: StatusFixed, checkerCalls: 1, judgeCalls: 1, submits: 1, verdict: "fail"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, job, rec := setupAttempt(t, tt.c)
			r.JudgeAdvisory = tt.advisory
			job.Budget.MaxSteps = 20
			out := r.Run(context.Background(), job)
			if out.Status != tt.status || !strings.Contains(out.Reason, tt.reason) {
				t.Fatalf("status %s (%s), want %s containing %q\nhistory:\n%s", out.Status, out.Reason, tt.status, tt.reason, strings.Join(out.History, "\n"))
			}
			byRole := map[model.Role]int{}
			for _, c := range rec.model {
				byRole[c.Role]++
			}
			if byRole[model.RoleChecker] != tt.checkerCalls || byRole[model.RoleJudge] != tt.judgeCalls {
				t.Errorf("checker calls %d, judge calls %d; want %d and %d", byRole[model.RoleChecker], byRole[model.RoleJudge], tt.checkerCalls, tt.judgeCalls)
			}
			if out.DroppedFindings != tt.dropped || out.Submits != tt.submits {
				t.Errorf("dropped %d findings over %d submits; want %d over %d", out.DroppedFindings, out.Submits, tt.dropped, tt.submits)
			}
			recorded := 0
			for _, rv := range rec.reviews {
				recorded += rv.Dropped
			}
			if len(rec.reviews) != byRole[model.RoleChecker] || recorded != tt.dropped {
				t.Errorf("recorded %d review rounds dropping %d; want one per checker call (%d) dropping %d", len(rec.reviews), recorded, byRole[model.RoleChecker], tt.dropped)
			}
			if out.ReviewRounds > MaxReviewRounds {
				t.Errorf("%d review rounds, at most %d allowed", out.ReviewRounds, MaxReviewRounds)
			}
			if tt.verdict != "" && (out.Verdict == nil || out.Verdict.Verdict != tt.verdict) {
				t.Errorf("verdict %+v, want %s", out.Verdict, tt.verdict)
			}
			if len(out.Findings) != tt.findingsAtEnd {
				t.Errorf("findings at the end %+v, want %d", out.Findings, tt.findingsAtEnd)
			}
		})
	}
}
