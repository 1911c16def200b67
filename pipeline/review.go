package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"

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
}

// Finding is one checker finding whose evidence was found in the diff.
type Finding struct {
	Severity string `json:"severity"`
	File     string `json:"file"`
	Line     int    `json:"line"`
	Message  string `json:"message"`
	Evidence string `json:"evidence"`
}

// Verdict is the judge's answer.
type Verdict struct {
	Verdict string   `json:"verdict"`
	Unmet   []string `json:"unmet"`
	Reason  string   `json:"reason"`
}

// maxRoleRetries bounds re-asking a cheap role whose answer is not the JSON asked for.
const maxRoleRetries = 2

// triage returns the cached triage or asks the triage role once, saving the answer.
func (a *attempt) triage(ctx context.Context) (*Triage, error) {
	if cached := strings.TrimSpace(a.job.Ticket.Triage); cached != "" {
		var t Triage
		if err := json.Unmarshal([]byte(cached), &t); err == nil {
			a.note("triage reused from an earlier attempt")
			return &t, nil
		}
	}
	if !a.r.Roles[model.RoleTriage] {
		return nil, nil
	}
	var t Triage
	if err := a.askJSON(ctx, model.RoleTriage, a.openingMessages(model.RoleTriage, nil), &t, func() error {
		if strings.TrimSpace(t.Summary) == "" {
			return errors.New(`"summary" is empty`)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	raw, _ := json.Marshal(t)
	if a.job.SaveTriage != nil {
		if err := a.job.SaveTriage(ctx, string(raw)); err != nil {
			return nil, fmt.Errorf("save triage: %w", err)
		}
	}
	a.note("triage: %s", clip(t.Summary, 200))
	return &t, nil
}

// askJSON asks a role for a JSON object, re-asking with the parse error on a bad answer.
func (a *attempt) askJSON(ctx context.Context, role model.Role, msgs []openai.ChatCompletionMessage, v any, check func() error) error {
	for try := 0; ; try++ {
		resp, err := a.chat(ctx, role, msgs, nil, true)
		if err != nil {
			return fmt.Errorf("%s: %w", role, err)
		}
		content := stripFence(resp.Message.Content)
		err = json.Unmarshal([]byte(content), v)
		if err == nil && check != nil {
			err = check()
		}
		if err == nil {
			return nil
		}
		if try >= maxRoleRetries {
			return fmt.Errorf("%s answered %d times without the JSON object asked for; last error: %v; last answer: %q",
				role, try+1, err, clip(content, 200))
		}
		msgs = append(msgs,
			openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: resp.Message.Content},
			openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser,
				Content: fmt.Sprintf("That was not the JSON object asked for (%v). Answer with the JSON object only.", err)})
	}
}

// stripFence removes a ```json fence some models wrap around JSON answers.
func stripFence(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "```") {
		s = strings.TrimPrefix(s, "```json")
		s = strings.TrimPrefix(s, "```")
		s = strings.TrimSuffix(strings.TrimSpace(s), "```")
	}
	return strings.TrimSpace(s)
}

type reviewResult struct {
	findings []Finding
	verdict  *Verdict
	feedback string     // non-empty: the fix was rejected, and this goes back to the maker
	by       model.Role // who rejected it: the checker or the judge
}

// review runs the checker, then the judge, on a diff that passed the checks.
func (a *attempt) review(ctx context.Context, diff, summary string) (reviewResult, error) {
	var rr reviewResult
	material := fmt.Sprintf("\n# Proposed fix\n\nMaker's summary: %s\n\n```diff\n%s\n```\n", summary, clip(diff, 60_000))
	if a.r.Roles[model.RoleChecker] {
		var ans struct {
			Findings []Finding `json:"findings"`
		}
		msgs := a.openingMessages(model.RoleChecker, nil)
		msgs[1].Content += material
		if err := a.askJSON(ctx, model.RoleChecker, msgs, &ans, nil); err != nil {
			return rr, err
		}
		rr.findings = verifyEvidence(ans.Findings, diff)
		var blockers []string
		for _, f := range rr.findings {
			if strings.EqualFold(f.Severity, "blocker") {
				blockers = append(blockers, fmt.Sprintf("- %s:%d: %s (evidence: %q)", f.File, f.Line, f.Message, clip(f.Evidence, 200)))
			}
		}
		if len(blockers) > 0 {
			rr.feedback = "Blocking defects:\n" + strings.Join(blockers, "\n") + "\nFix them and call submit again."
			rr.by = model.RoleChecker
			return rr, nil
		}
	}
	if a.r.Roles[model.RoleJudge] {
		var v Verdict
		msgs := a.openingMessages(model.RoleJudge, nil)
		msgs[1].Content += a.criteriaText() + material
		if err := a.askJSON(ctx, model.RoleJudge, msgs, &v, func() error {
			switch strings.ToLower(v.Verdict) {
			case "pass", "fail":
				return nil
			}
			return fmt.Errorf(`"verdict" must be "pass" or "fail", got %q`, v.Verdict)
		}); err != nil {
			return rr, err
		}
		rr.verdict = &v
		if strings.EqualFold(v.Verdict, "fail") {
			unmet := "(none named)"
			if len(v.Unmet) > 0 {
				unmet = "- " + strings.Join(v.Unmet, "\n- ")
			}
			rr.feedback = fmt.Sprintf("Judge's reason: %s\nUnmet criteria:\n%s\nChange the fix so they hold and call submit again.", v.Reason, unmet)
			rr.by = model.RoleJudge
		}
	}
	return rr, nil
}

func (a *attempt) criteriaText() string {
	if a.tri == nil || len(a.tri.AcceptanceCriteria) == 0 {
		return "\n# Acceptance criteria\n\n- The reported symptom no longer occurs.\n"
	}
	return "\n# Acceptance criteria\n\n- " + strings.Join(a.tri.AcceptanceCriteria, "\n- ") + "\n"
}

// verifyEvidence keeps only findings whose evidence really appears in the diff: a cheap model
// that invents a defect must not send the maker chasing it.
func verifyEvidence(fs []Finding, diff string) []Finding {
	norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	d := norm(stripDiffMarkers(diff))
	var out []Finding
	for _, f := range fs {
		ev := norm(stripDiffMarkers(f.Evidence))
		if ev != "" && strings.Contains(d, ev) {
			out = append(out, f)
		}
	}
	return out
}

// stripDiffMarkers drops the leading +/-/space of diff lines so evidence quoted with or
// without them matches.
func stripDiffMarkers(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if len(l) > 0 && (l[0] == '+' || l[0] == '-' || l[0] == ' ') && !strings.HasPrefix(l, "+++") && !strings.HasPrefix(l, "---") {
			lines[i] = l[1:]
		}
	}
	return strings.Join(lines, "\n")
}
