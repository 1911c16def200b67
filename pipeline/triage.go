package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ticketd/ticketd/pipeline/model"
)

// Triage is the triage role's note on a ticket, computed once and reused by later attempts.
type Triage struct {
	Summary            string   `json:"summary"`
	AcceptanceCriteria []string `json:"acceptance_criteria"`
	SuspectedFiles     []string `json:"suspected_files"`
	// TargetTests are pytest node ids that should show the bug (fail before the fix); those
	// failing at the base must pass for a fix to be accepted.
	TargetTests []string `json:"target_tests,omitempty"`
	// Verifications pair criteria with a command that shows them; the pipeline runs them on
	// the candidate and gives the judge their results.
	Verifications []Verification `json:"verifications,omitempty"`
}

// Verification is one way to show a criterion holds: a pytest node id, or Python code run
// as `python -c` by the project's interpreter. Exactly one of Test and Python is set.
type Verification struct {
	Criterion string `json:"criterion"`
	Test      string `json:"test,omitempty"`
	Python    string `json:"python,omitempty"`
}

// triage returns the cached triage or asks the triage role once, saving the answer.
func triage(ctx context.Context, q *asker, jr *journal) (*Triage, error) {
	if cached := strings.TrimSpace(q.job.Ticket.Triage); cached != "" {
		var t Triage
		if err := json.Unmarshal([]byte(cached), &t); err == nil {
			jr.note("triage reused from an earlier attempt")
			return &t, nil
		}
	}
	if !q.roles[model.RoleTriage] {
		return nil, nil
	}
	var t Triage
	if err := q.askJSON(ctx, model.RoleTriage, q.opening(model.RoleTriage, nil), &t, func() error {
		if strings.TrimSpace(t.Summary) == "" {
			return errors.New(`"summary" is empty`)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	raw, _ := json.Marshal(t)
	if q.job.SaveTriage != nil {
		if err := q.job.SaveTriage(ctx, string(raw)); err != nil {
			return nil, fmt.Errorf("save triage: %w", err)
		}
	}
	jr.note("triage: %s", clip(t.Summary, 200))
	return &t, nil
}

func criteriaText(tri *Triage) string {
	if tri == nil || len(tri.AcceptanceCriteria) == 0 {
		return "\n# Acceptance criteria\n\n- The reported symptom no longer occurs.\n"
	}
	return "\n# Acceptance criteria\n\n- " + strings.Join(tri.AcceptanceCriteria, "\n- ") + "\n"
}
