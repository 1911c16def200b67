package pipeline

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
)

// recordingChatter keeps the requests of one role on their way to the model.
type recordingChatter struct {
	inner Chatter
	role  model.Role
	mu    sync.Mutex
	reqs  []string
}

func (c *recordingChatter) Chat(ctx context.Context, req model.Request) (model.Response, error) {
	if req.Role == c.role {
		var b strings.Builder
		for _, m := range req.Messages {
			b.WriteString(m.Content)
		}
		c.mu.Lock()
		c.reqs = append(c.reqs, b.String())
		c.mu.Unlock()
	}
	return c.inner.Chat(ctx, req)
}

// The triage's verification commands run on the candidate and the judge sees their results;
// a failing one is an unmet criterion that sends the maker back (gate) or only annotates
// (advisory).
func TestJudgeWithEvidence(t *testing.T) {
	t.Parallel() // each runs its own scripted model, repository and pytest
	triage := `{"summary":"double adds one","acceptance_criteria":["double(2) == 4","double(3) == 7"],` +
		`"verifications":[{"criterion":"double(2) == 4","python":"from calc import double; assert double(2) == 4"},` +
		`{"criterion":"the test passes","test":"test_calc.py::test_double"},` +
		`{"criterion":"double(3) == 7","python":"from calc import double; assert double(3) == 7, double(3)"}]}`
	tests := []struct {
		name     string
		advisory bool
		status   Status
		judges   int
	}{
		{"gate: unmet criterion sends the maker back, then ends", false, StatusFailed, 2},
		{"advisory: annotates only", true, StatusFixed, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, job, _ := setupAttempt(t, scriptedmodel.Case{})
			rc := &recordingChatter{inner: r.Models, role: model.RoleJudge}
			r.Models, r.JudgeAdvisory = rc, tt.advisory
			job.Ticket.Triage = triage
			out := r.Run(context.Background(), job)
			if out.Status != tt.status || len(rc.reqs) != tt.judges {
				t.Fatalf("status %s (%s) after %d judge calls, want %s after %d\nhistory:\n%s", out.Status, out.Reason, len(rc.reqs), tt.status, tt.judges, strings.Join(out.History, "\n"))
			}
			req := rc.reqs[0]
			for _, want := range []string{
				"- criterion: double(2) == 4\n  command: python -c",
				"result: passed",
				"command: pytest test_calc.py::test_double\n  result: passed",
				"- criterion: double(3) == 7",
				"result: FAILED",
				"AssertionError: 6",
			} {
				if !strings.Contains(req, want) {
					t.Errorf("judge request lacks %q:\n%s", want, req)
				}
			}
			if out.Verdict == nil || out.Verdict.Verdict != "fail" || len(out.Verdict.Unmet) != 1 || out.Verdict.Unmet[0] != "double(3) == 7" {
				t.Errorf("verdict %+v, want fail naming double(3) == 7", out.Verdict)
			}
		})
	}
}
