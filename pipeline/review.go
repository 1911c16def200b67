package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/pipeline/sandbox"
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

// material is the change as the reviewers and the judge read it. The summary and the diff
// are the maker's: each is fenced so that no line of them closes its block and reads as
// ticketd's own framing (a "# Evidence" section, a second "Proposed fix"). The diff is
// whole: a submit whose diff is longer than MaxReviewDiff never reaches the reviewers
// (reviewable); the clip is only a net.
func (c candidate) material() string {
	return fmt.Sprintf("\n# Proposed fix\n\nMaker's summary (the maker's words, not ticketd's):\n\n%s\n\nThe change (%d bytes of diff, shown whole):\n\n%s\n",
		Fence("text", c.summary), len(c.diff), Fence("diff", clip(c.diff, MaxReviewDiff)))
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
		switch verdict := strings.ToLower(strings.TrimSpace(v.Verdict)); verdict {
		case "pass", "fail":
			v.Verdict = verdict // recorded and reported in the schema's words
			return nil
		}
		return fmt.Errorf(`"verdict" must be "pass" or "fail", got %q`, v.Verdict)
	}); err != nil {
		return rr, err
	}
	rr.verdict = &v
	if v.Verdict == "fail" && !b.advisory {
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
