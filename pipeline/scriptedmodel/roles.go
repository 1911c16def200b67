package scriptedmodel

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// RoleLinePrefix starts the line of a system message that names the role of a request,
// e.g. "ticketd role: maker".
const RoleLinePrefix = "ticketd role: "

// detectRole finds the role line in the system (or developer) messages.
func detectRole(msgs []message) (string, error) {
	for _, m := range msgs {
		if m.Role != "system" && m.Role != "developer" {
			continue
		}
		for line := range strings.SplitSeq(m.text, "\n") {
			rest, ok := strings.CutPrefix(strings.TrimSpace(line), RoleLinePrefix)
			if !ok {
				continue
			}
			switch role := strings.TrimSpace(rest); role {
			case "triage", "maker", "checker", "judge", "arbiter":
				return role, nil
			default:
				return "", fmt.Errorf("system message says %q; the scripted model knows the roles triage, maker, checker, judge and arbiter", strings.TrimSpace(line))
			}
		}
	}
	return "", errors.New(`no system message contains a line "ticketd role: <triage|maker|checker|judge>"; the scripted model answers by role`)
}

// matchCase picks the case for the ticket: the case whose Match occurs earliest in the
// first user message (which opens with the ticket, before any diff or file text that might
// quote another ticket), the longer Match on a tie; else the same over all user messages;
// else the default.
func matchCase(plans []*plan, def *plan, msgs []message) (*plan, error) {
	var users []string
	for _, m := range msgs {
		if m.Role == "user" {
			users = append(users, m.text)
		}
	}
	if len(users) > 0 {
		for _, text := range []string{users[0], strings.Join(users, "\n")} {
			var best *plan
			bestAt := -1
			for _, p := range plans {
				at := strings.Index(text, p.Match)
				if at < 0 {
					continue
				}
				if best == nil || at < bestAt || at == bestAt && len(p.Match) > len(best.Match) {
					best, bestAt = p, at
				}
			}
			if best != nil {
				return best, nil
			}
		}
	}
	if def != nil {
		return def, nil
	}
	return nil, fmt.Errorf("no scenario case matched the ticket: none of the %d cases' Match strings occurs in the user messages, and there is no default case (Match \"\")", len(plans))
}

// ticketTitle is what a model would echo as the ticket's name: the value of a "Title:"
// line in the first user message if there is one (ticketd puts the repository part before
// the ticket), else its first non-empty line without Markdown heading marks.
func ticketTitle(msgs []message) string {
	for _, m := range msgs {
		if m.Role != "user" {
			continue
		}
		first := ""
		for line := range strings.SplitSeq(m.text, "\n") {
			line = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "#"))
			if low := strings.ToLower(line); strings.HasPrefix(low, "title:") {
				return clipTitle(strings.TrimSpace(line[len("title:"):]))
			}
			if first == "" && line != "" && line != "---" {
				first = line
			}
		}
		return clipTitle(first)
	}
	return ""
}

func clipTitle(line string) string {
	if r := []rune(line); len(r) > 120 {
		return string(r[:120])
	}
	return line
}

type triageAnswer struct {
	Summary            string   `json:"summary"`
	AcceptanceCriteria []string `json:"acceptance_criteria"`
	SuspectedFiles     []string `json:"suspected_files"`
}

func triageContent(p *plan, title string) string {
	return mustJSON(triageAnswer{
		Summary: "Scripted triage: " + title,
		AcceptanceCriteria: []string{
			"The problem described in the ticket no longer occurs: " + title,
			"The existing tests still pass",
		},
		SuspectedFiles: p.allPaths,
	})
}

// finding is the checker's fixed schema, as ticketd's checker prompt asks for it.
type finding struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Severity string `json:"severity"`
	Category string `json:"category"`
	Finding  string `json:"finding"`
	Evidence string `json:"evidence"`
}

type checkerAnswer struct {
	Findings []finding `json:"findings"`
}

// checkerReview is what the scripted checker says on its n-th review (1-based) of a case.
// A blocker quotes a line the fix adds, so a pipeline that verifies evidence finds it; an
// invented finding quotes code that is nowhere; from the second review on, a checker that
// keeps blocking also adds a new minor remark, as real models do when asked to confirm.
func checkerReview(p *plan, n int) string {
	ans := checkerAnswer{Findings: []finding{}}
	if p.CheckerInventsEvidence {
		ans.Findings = append(ans.Findings, finding{
			File: p.allPaths[0], Line: 1, Severity: "blocker", Category: "correctness",
			Finding:  "Scripted checker: an invented defect whose evidence is in no file.",
			Evidence: "return scripted_invented_evidence_that_is_nowhere()",
		})
	}
	if p.CheckerBlocksAlways || p.CheckerBlocksOnce && n == 1 {
		file, line, evidence := blockerSpot(p)
		ans.Findings = append(ans.Findings, finding{
			File: file, Line: line, Severity: "blocker", Category: "test",
			Finding:  "Scripted checker blocker: the change lacks a regression test for the reported case.",
			Evidence: evidence,
		})
		if p.CheckerBlocksAlways && n > 1 {
			ans.Findings = append(ans.Findings, finding{
				File: file, Line: line, Severity: "minor", Category: "style",
				Finding:  "Scripted checker: a new remark in a confirming round.",
				Evidence: evidence,
			})
		}
	}
	return mustJSON(ans)
}

// blockerSpot is where the scripted checker's blocker points: the first line the patch adds,
// in the first file it edits.
func blockerSpot(p *plan) (file string, line int, evidence string) {
	f, h := p.files[0], Hunk{NewStart: 1}
	for _, fe := range p.files {
		if len(fe.Hunks) > 0 {
			f, h = fe, fe.Hunks[0]
			break
		}
	}
	evidence = firstLine(h.NewText)
	for l := range strings.SplitSeq(h.NewText, "\n") {
		if strings.TrimSpace(l) != "" && !strings.Contains(h.OldText, l) {
			evidence = l
			break
		}
	}
	return f.Path, max(h.NewStart, 1), evidence
}

// reviewAngle is the angle a checker request asks for: the "# Review angle: X" heading of a
// user message, or "correctness" when there is none.
func reviewAngle(msgs []message) string {
	for _, m := range msgs {
		if m.Role != "user" {
			continue
		}
		if rest, ok := strings.CutPrefix(strings.TrimSpace(m.text), "# Review angle: "); ok {
			angle, _, _ := strings.Cut(rest, "\n")
			return strings.TrimSpace(angle)
		}
	}
	return "correctness"
}

// Patterns the scripted angle reviewers look for in the lines a diff adds, as a reviewer
// model reads for them: code that handles paths, shell, SQL, deserialisation or secrets for
// security; loops, sorts and searches for performance.
var (
	securityLine    = regexp.MustCompile(`\b(open|os\.path\.join|subprocess|os\.system|eval|exec|pickle|yaml\.load|execute)\b|\.\./|startswith\(|(?i)password|token|secret`)
	performanceLine = regexp.MustCompile(`^\s*(for|while)\s|\bsorted\(|\.sort\(|\.index\(|\bin\s+list\(`)
)

// angleReview is what a scripted security or performance reviewer says about the diff it is
// shown. Like a real reviewer with a narrow angle it reports the first added line that looks
// like its concern, as a minor remark (true or not: most such remarks are noise), or nothing.
// A round-2 request only repeats the findings it is shown. Under ReviewersDisagree it
// contradicts the correctness blocker on the very line that blocker quotes.
func angleReview(p *plan, angle string, msgs []message) string {
	ans := checkerAnswer{Findings: []finding{}}
	if confirming(msgs) {
		return mustJSON(ans) // withdraws: a narrow reviewer rarely insists
	}
	if p.ReviewersDisagree {
		file, line, evidence := blockerSpot(p)
		ans.Findings = append(ans.Findings, finding{File: file, Line: line, Severity: "minor", Category: angle,
			Finding:  "Scripted " + angle + " reviewer: this line is fine as it is; no further test is needed for it.",
			Evidence: evidence})
		return mustJSON(ans)
	}
	re := securityLine
	if angle == "performance" {
		re = performanceLine
	}
	file := ""
	for _, m := range msgs {
		if m.Role != "user" {
			continue
		}
		for l := range strings.SplitSeq(m.text, "\n") {
			if rest, ok := strings.CutPrefix(l, "+++ b/"); ok {
				file = strings.TrimSpace(rest)
				continue
			}
			if !strings.HasPrefix(l, "+") || strings.HasPrefix(l, "+++") || file == "" || isTestFile(file) {
				continue
			}
			if re.MatchString(l[1:]) {
				ans.Findings = append(ans.Findings, finding{File: file, Line: 1, Severity: "minor", Category: angle,
					Finding:  "Scripted " + angle + " reviewer: this line deserves a second look for " + angle + ".",
					Evidence: l[1:]})
				return mustJSON(ans)
			}
		}
	}
	return mustJSON(ans)
}

// confirming reports a round-2 review request.
func confirming(msgs []message) bool {
	for _, m := range msgs {
		if m.Role == "user" && strings.Contains(m.text, "# Review round 2 of") {
			return true
		}
	}
	return false
}

// arbiterContent decides each pair an arbiter request shows as a decisive model would: the
// more severe finding holds; equal severities are both kept.
func arbiterContent(msgs []message) string {
	rank := map[string]int{"blocker": 3, "major": 2, "minor": 1}
	type side struct {
		Severity string `json:"severity"`
		Reviewer string `json:"reviewer"`
	}
	type decision struct {
		Pair     int    `json:"pair"`
		Decision string `json:"decision"`
		Reason   string `json:"reason"`
	}
	out := struct {
		Decisions []decision `json:"decisions"`
	}{Decisions: []decision{}}
	for _, m := range msgs {
		if m.Role != "user" {
			continue
		}
		var a side
		pair := 0
		for l := range strings.SplitSeq(m.text, "\n") {
			switch {
			case strings.HasPrefix(l, "Pair "):
				fmt.Sscanf(l, "Pair %d:", &pair)
			case strings.HasPrefix(l, "A: "):
				a = side{}
				_ = json.Unmarshal([]byte(l[3:]), &a)
			case strings.HasPrefix(l, "B: ") && pair > 0:
				var b side
				_ = json.Unmarshal([]byte(l[3:]), &b)
				d := decision{Pair: pair, Decision: "both", Reason: "Scripted arbiter: both findings can hold."}
				switch {
				case rank[a.Severity] > rank[b.Severity]:
					d.Decision, d.Reason = "A", "Scripted arbiter: the "+a.Reviewer+" finding is the more severe and shown by its evidence."
				case rank[b.Severity] > rank[a.Severity]:
					d.Decision, d.Reason = "B", "Scripted arbiter: the "+b.Reviewer+" finding is the more severe and shown by its evidence."
				}
				out.Decisions = append(out.Decisions, d)
			}
		}
	}
	return mustJSON(out)
}

type judgeAnswer struct {
	Verdict string   `json:"verdict"`
	Unmet   []string `json:"unmet"`
	Reason  string   `json:"reason"`
}

// failedVerifications reads the verification results a judge request shows ("- criterion: X"
// followed by "result: FAILED ..."), as a judge model weighs what was run over the diff.
func failedVerifications(msgs []message) []string {
	var out []string
	for _, m := range msgs {
		if m.Role != "user" {
			continue
		}
		crit := ""
		for line := range strings.SplitSeq(m.text, "\n") {
			t := strings.TrimSpace(line)
			if rest, ok := strings.CutPrefix(t, "- criterion:"); ok {
				crit = strings.TrimSpace(rest)
			} else if strings.HasPrefix(t, "result: FAILED") && crit != "" {
				out = append(out, crit)
				crit = ""
			}
		}
	}
	return out
}

func judgeContent(title string, fail bool, failed []string, complete bool) string {
	if !complete {
		crit := "The problem described in the ticket no longer occurs: " + title
		return mustJSON(judgeAnswer{Verdict: "fail", Unmet: []string{crit},
			Reason: "Scripted judge: the diff does not hold the whole fix; part of the cause is left as it was."})
	}
	if len(failed) > 0 {
		return mustJSON(judgeAnswer{Verdict: "fail", Unmet: failed,
			Reason: "Scripted judge: the verification of these criteria failed on the fixed code."})
	}
	if fail {
		crit := "The problem described in the ticket no longer occurs: " + title
		return mustJSON(judgeAnswer{Verdict: "fail", Unmet: []string{crit},
			Reason: "Scripted judge: first verdict fails by scenario (JudgeFailsOnce)."})
	}
	return mustJSON(judgeAnswer{Verdict: "pass", Unmet: []string{},
		Reason: "Scripted judge: the change addresses " + title + "."})
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// fixReviewed reports whether the diff a judge is shown holds the whole intended fix: the new
// side of each of the case's hunks (its changed lines in their context) appears, in order,
// on the new side of the shown diff. A partial fix, a replaced line kept beside the new one,
// or a right line in the wrong place all fail, as a careful judge would fail them.
func fixReviewed(p *plan, msgs []message) bool {
	var side strings.Builder
	for _, m := range msgs {
		if m.Role != "user" {
			continue
		}
		for l := range strings.SplitSeq(m.text, "\n") {
			switch {
			case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
			case strings.HasPrefix(l, "-"): // the old side: not part of the new text
			case strings.HasPrefix(l, "+"), strings.HasPrefix(l, " "):
				side.WriteString(l[1:])
				side.WriteString("\n")
			case l == "":
				side.WriteString("\n") // an empty context line whose space was stripped
			default:
				side.WriteString("\x00\n") // anything else breaks a run of lines
			}
		}
	}
	shown := "\n" + side.String()
	for _, f := range p.files {
		if hiddenPath(f.Path) {
			continue // a CI or editor file holds no part of a bug's cause: a judge does not ask for it
		}
		for _, h := range f.Hunks {
			if !strings.Contains(shown, "\n"+changedCore(h)) {
				return false
			}
		}
	}
	return true
}

// changedCore is a hunk's new side from one line before its first change to one line after
// its last: what any diff of the same fix shows, whatever its amount of context.
func changedCore(h Hunk) string {
	newLines := strings.SplitAfter(h.NewText, "\n")
	added := addedFlags(h, newLines)
	first, last := -1, -1
	for j, a := range added {
		if a {
			if first < 0 {
				first = j
			}
			last = j
		}
	}
	if first < 0 {
		// Only removals: the lines on either side of the gap must now be neighbours.
		return h.NewText
	}
	lo, hi := max(first-1, 0), min(last+2, len(newLines))
	core := strings.Join(newLines[lo:hi], "")
	if !strings.HasSuffix(core, "\n") {
		core += "\n"
	}
	return core
}

// hiddenPath reports a path with a dot-folder or dot-file in it (.github/workflows/ci.yml,
// .vscode/settings.json): configuration around the code, never the code a fix changes.
func hiddenPath(p string) bool {
	for _, part := range strings.Split(p, "/") {
		if strings.HasPrefix(part, ".") {
			return true
		}
	}
	return false
}
