package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/pipeline/sandbox"
	"github.com/ticketd/ticketd/pipeline/validate"
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

// Bounds of the judge's verification commands.
const (
	maxVerifications    = 5
	verificationTimeout = 2 * time.Minute
)

// Finding is one checker finding in the fixed schema; the pipeline keeps only findings whose
// evidence appears verbatim in the diff or the changed file.
type Finding struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Severity string `json:"severity"` // blocker, major or minor
	Category string `json:"category"` // e.g. correctness, regression, test, scope
	Finding  string `json:"finding"`
	Evidence string `json:"evidence"`
	// Reviewer is the angle of the reviewer that reported it (set by ticketd, not by the
	// model); Arbiter is the arbiter's decision on it when it contradicted another
	// reviewer's finding on the same lines ("" when it did not).
	Reviewer string `json:"reviewer,omitempty"`
	Arbiter  string `json:"arbiter,omitempty"`
}

// Severities of the checker's schema.
var severities = []string{"blocker", "major", "minor"}

// MaxReviewRounds bounds checker-and-judge reviews per attempt. The seeds measured that a
// third round costs 21% of the tokens for 1.2 findings; the second round only confirms or
// withdraws what the first found, and a blocker still standing after it ends the attempt.
const MaxReviewRounds = 2

// Verdict is the judge's answer.
type Verdict struct {
	Verdict string   `json:"verdict"`
	Unmet   []string `json:"unmet"`
	Reason  string   `json:"reason"`
}

// maxRoleRetries bounds re-asking a cheap role whose answer is not the JSON asked for.
const maxRoleRetries = 2

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

// askJSON asks a role for a JSON object, re-asking with the parse error on a bad answer.
func (q *asker) askJSON(ctx context.Context, role model.Role, msgs []openai.ChatCompletionMessage, v any, check func() error) error {
	for try := 0; ; try++ {
		resp, err := q.chat(ctx, role, msgs, nil, true)
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
		msgs = append(msgs, retryMessages(resp.Message.Content, err)...)
	}
}

// maxEchoedAnswer bounds a bad answer sent back to the model with the request to fix it.
const maxEchoedAnswer = 2 << 10

// retryMessages ask a role again after an answer that was not the JSON object asked for. A
// short answer is shown back so the model can mend it; a long one (an endpoint that streamed
// megabytes of text) is not: echoing it would pay for it again, in every later request, so
// the model is asked afresh, told only how long its answer was.
func retryMessages(answer string, err error) []openai.ChatCompletionMessage {
	ask := fmt.Sprintf("That was not the JSON object asked for (%v). Answer with the JSON object only.", err)
	if len(answer) > maxEchoedAnswer {
		return []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser,
			Content: fmt.Sprintf("Your previous answer (%d bytes, not repeated here) was not the JSON object asked for (%s). Answer with the JSON object only.", len(answer), clip(err.Error(), 200))}}
	}
	return []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleAssistant, Content: answer},
		{Role: openai.ChatMessageRoleUser, Content: ask},
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
	final    bool       // the rejection ends the attempt: no review round is left
	dropped  int        // findings dropped in this round (invented evidence, new in round 2, bad schema)
}

// reviewBoard is the review and judge stages of one attempt, and what they remember from
// round to round: round 1 a fresh review; round 2 (after the maker answered round 1) sees
// round 1's findings and the new diff and may only confirm or withdraw them. There is no
// round 3.
type reviewBoard struct {
	ask       *asker
	jr        *journal
	log       *slog.Logger
	rec       Recorder // nil: nothing recorded
	reviewers []Reviewer
	advisory  bool   // the judge annotates without blocking (Runner.JudgeAdvisory)
	dir       string // the worktree, where a finding's evidence may be read
	tri       *Triage

	rounds       int       // reviews so far
	last         []Finding // the last round's kept findings
	dropped      int       // findings dropped over all rounds
	arbitrations []Arbitration
}

// material is the change as the reviewers and the judge read it.
func (c candidate) material() string {
	return fmt.Sprintf("\n# Proposed fix\n\nMaker's summary: %s\n\n```diff\n%s\n```\n", c.summary, clip(c.diff, 60_000))
}

// review is the review stage: a new round, in which the checker's reviewers (when the
// checker role is configured) look for blocking defects in a change that passed the checks
// and showed evidence.
func (b *reviewBoard) review(ctx context.Context, cand candidate) (reviewResult, error) {
	b.rounds++
	rr := reviewResult{final: b.rounds >= MaxReviewRounds}
	if !b.ask.roles[model.RoleChecker] {
		return rr, nil
	}
	kept, dropped, err := b.runReviewers(ctx, b.rounds, cand.diff, cand.material())
	if err != nil {
		return rr, err
	}
	rr.findings, rr.dropped = kept, dropped
	b.last = kept
	var blockers []string
	for _, f := range kept {
		if f.Severity == "blocker" {
			blockers = append(blockers, fmt.Sprintf("- %s:%d [%s%s]: %s (evidence: %q)%s", f.File, f.Line, reviewerTag(f), orDash(f.Category), f.Finding, clip(f.Evidence, 200), contestedNote(f)))
		}
	}
	if len(blockers) > 0 {
		rr.feedback = "Blocking defects:\n" + strings.Join(blockers, "\n") + "\nFix them and call submit again."
		rr.by = model.RoleChecker
	}
	return rr, nil
}

// judge is the judge stage, in the review's round: the judge role's verdict on the change,
// given the acceptance criteria and what showed the change works (criteria). Without the
// judge role it decides nothing.
func (b *reviewBoard) judge(ctx context.Context, cand candidate, criteria func() string) (reviewResult, error) {
	rr := reviewResult{final: b.rounds >= MaxReviewRounds}
	if !b.ask.roles[model.RoleJudge] {
		return rr, nil
	}
	var v Verdict
	msgs := b.ask.opening(model.RoleJudge, nil)
	msgs[1].Content += criteria() + cand.material()
	if err := b.ask.askJSON(ctx, model.RoleJudge, msgs, &v, func() error {
		switch strings.ToLower(v.Verdict) {
		case "pass", "fail":
			return nil
		}
		return fmt.Errorf(`"verdict" must be "pass" or "fail", got %q`, v.Verdict)
	}); err != nil {
		return rr, err
	}
	rr.verdict = &v
	if strings.EqualFold(v.Verdict, "fail") && !b.advisory {
		unmet := "(none named)"
		if len(v.Unmet) > 0 {
			unmet = "- " + strings.Join(v.Unmet, "\n- ")
		}
		rr.feedback = fmt.Sprintf("Judge's reason: %s\nUnmet criteria:\n%s\nChange the fix so they hold and call submit again.", v.Reason, unmet)
		rr.by = model.RoleJudge
	}
	return rr, nil
}

// confirmOnly keeps the round-2 findings that repeat a round-1 finding (same file, and the same
// finding text, or the same evidence, category and severity); anything else is new, which round 2 may not add: dropped, counted.
func confirmOnly(kept, prev []Finding, dropped int) ([]Finding, int) {
	var out []Finding
	for _, f := range kept {
		match := false
		for _, p := range prev {
			sameEvidence := norm(stripDiffMarkers(f.Evidence)) == norm(stripDiffMarkers(p.Evidence))
			if f.File == p.File && (norm(f.Finding) == norm(p.Finding) || sameEvidence && f.Category == p.Category && f.Severity == p.Severity) {
				match = true
				break
			}
		}
		if match {
			out = append(out, f)
		} else {
			dropped++
		}
	}
	return out, dropped
}

func criteriaText(tri *Triage) string {
	if tri == nil || len(tri.AcceptanceCriteria) == 0 {
		return "\n# Acceptance criteria\n\n- The reported symptom no longer occurs.\n"
	}
	return "\n# Acceptance criteria\n\n- " + strings.Join(tri.AcceptanceCriteria, "\n- ") + "\n"
}

func norm(s string) string { return strings.Join(strings.Fields(s), " ") }

// verifyFindings keeps the findings in the schema whose evidence appears verbatim (up to
// whitespace and diff markers) in the diff or in the current text of a file the diff changes:
// a cheap model that invents a defect must not send the maker chasing it. It returns how many
// it dropped.
func verifyFindings(dir string, fs []Finding, diff string) ([]Finding, int) {
	d := norm(stripDiffMarkers(diff))
	changed := changedFiles(diff)
	var out []Finding
	dropped := 0
	for _, f := range fs {
		f.Severity = strings.ToLower(strings.TrimSpace(f.Severity))
		ev := norm(stripDiffMarkers(f.Evidence))
		ok := ev != "" && slices.Contains(severities, f.Severity) && strings.TrimSpace(f.Finding) != ""
		if ok && !strings.Contains(d, ev) {
			ok = slices.Contains(changed, f.File) && strings.Contains(norm(readChanged(dir, f.File)), ev)
		}
		if ok {
			out = append(out, f)
		} else {
			dropped++
		}
	}
	return out, dropped
}

// readChanged reads a file the diff changed, from the worktree; "" when it cannot.
func readChanged(dir, rel string) string {
	clean := filepath.Clean(rel)
	if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
		return ""
	}
	full := filepath.Join(dir, clean)
	// The path was named by a model: it must resolve inside the worktree, symlinks included.
	real, err := filepath.EvalSymlinks(full)
	if err != nil {
		return ""
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil || !strings.HasPrefix(real, root+string(filepath.Separator)) {
		return ""
	}
	// The checks ran in the worktree since: the file may be a FIFO now, which must not block.
	data, err := sandbox.ReadReport(real, 2<<20)
	if err != nil {
		return ""
	}
	return string(data)
}

// changedFiles lists the paths a git diff touches (its b/ side).
func changedFiles(diff string) []string {
	var out []string
	for _, l := range strings.Split(diff, "\n") {
		if rest, ok := strings.CutPrefix(l, "+++ b/"); ok {
			out = append(out, strings.TrimSpace(rest))
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

// criteriaEvidence renders, for the judge, the triage's verification commands run on the
// candidate through the check runner (the same sandbox and environment as the checks) and,
// when the evidence step ran them on this diff, at the base commit too; "" when triage gave
// none.
func criteriaEvidence(ctx context.Context, c *checkRun, runs *verificationRuns, verify []verifyCheck, diff string) (string, *verificationRuns) {
	if runs == nil || runs.diff != diff {
		runs = verifiedAfter(ctx, c, diff, verify, nil)
	}
	if len(runs.items) == 0 {
		return "", runs
	}
	var b strings.Builder
	b.WriteString("\n# Verification of the criteria\n\nticketd ran these commands on the fixed code")
	if runs.items[0].base != nil {
		b.WriteString(" and at the base commit (before the change)")
	}
	b.WriteString(":\n")
	for i, vr := range runs.items {
		if vr.after == nil {
			continue
		}
		r := *vr.after
		verdict := "FAILED"
		if r.Passed {
			verdict = "passed"
		}
		fmt.Fprintf(&b, "\n- criterion: %s\n  command: %s\n  result: %s (%s)\n", vr.v.Criterion, vr.what, verdict, r.Summary)
		if !r.Passed {
			for _, l := range lastLinesOf(r.Output, 6) {
				fmt.Fprintf(&b, "    %s\n", clip(l, 200))
			}
		}
		atBase := ""
		if vr.base != nil {
			atBase = "passed"
			if !vr.base.Passed {
				atBase = "FAILED"
			}
			fmt.Fprintf(&b, "  at the base commit: %s (%s)\n", atBase, vr.base.Summary)
			atBase = ", at the base commit " + atBase
		}
		c.jr.note("verification %d (%s): %s%s", i+1, vr.what, verdict, atBase)
	}
	return b.String(), runs
}

// verifyCheck is one verification of the triage as a check the runner can run.
type verifyCheck struct {
	v     Verification
	what  string
	check validate.Check
}

// verificationChecks are the triage's verifications the runner can run, at most
// maxVerifications.
func verificationChecks(tri *Triage, checks []validate.Check) []verifyCheck {
	if tri == nil {
		return nil
	}
	var out []verifyCheck
	for i, v := range tri.Verifications {
		if i == maxVerifications {
			break
		}
		if c, what, ok := verificationCheck(checks, i, v); ok {
			out = append(out, verifyCheck{v: v, what: what, check: c})
		}
	}
	return out
}

// verificationCheck turns a verification into a check the runner can run.
func verificationCheck(checks []validate.Check, i int, v Verification) (validate.Check, string, bool) {
	name := fmt.Sprintf("verify-%d", i+1)
	switch {
	case v.Test != "" && !strings.HasPrefix(v.Test, "-"):
		for _, c := range checks {
			if c.Kind == validate.KindPytest {
				c.Name, c.Only, c.Timeout = name, []string{v.Test}, verificationTimeout
				return c, "pytest " + v.Test, true
			}
		}
	case v.Python != "":
		python := ""
		for _, c := range checks {
			if c.Python != "" {
				python = c.Python
				break
			}
		}
		return validate.Check{Name: name, Kind: validate.KindPython, Command: []string{"-c", v.Python},
			Timeout: verificationTimeout, Python: python}, "python -c " + strconv.Quote(clip(v.Python, 200)), true
	}
	return validate.Check{}, "", false
}

func lastLinesOf(s string, n int) []string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}
