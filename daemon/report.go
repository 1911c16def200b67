package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ticketd/ticketd/daemon/record"
	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/pipeline/secret"
	"github.com/ticketd/ticketd/pipeline/timing"
	"github.com/ticketd/ticketd/store"
)

// resultsFolder writes and reads the tickets' results folders (<output>/<ticket id>/), and
// keeps each file in the database too.
type resultsFolder struct {
	st     *store.Store
	output string
	// identity is the ticket database's (store.Identity), written in each results folder.
	identity string
	// faults keeps the storage faults met while writing, for the attempt's ending.
	faults *machineFaults
	now    func() time.Time
}

// writeResult writes the ticket's patch (the attempt's diff, partial or not) and report.md
// under <output>/<ticket id>/, and returns that folder with its files for the database
// (kept with the attempt's transition, store.EndAttempt, so that ticketctl on any node
// shows them). Failures to write are logged: the ticket's transition matters more than its
// report.
func (w *resultsFolder) writeResult(ctx context.Context, log *slog.Logger, lease store.Lease, tree fixTree, out pipeline.Outcome, ending record.Ending, branch string) (string, []store.ArtifactFile) {
	t := lease.Ticket
	dir := resultDir(w.output, w.identity, t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		log.Error("create result folder", "dir", dir, "err", err)
		w.faults.noteTicket(t.ID, err)
		return "", nil
	}
	var files []store.ArtifactFile
	save := func(rel string, data []byte) { files = append(files, store.ArtifactFile{Path: rel, Content: data}) }
	if err := writeTicketRecord(dir, w.identity, t, string(ending)); err != nil {
		log.Error("write the ticket's record", "dir", dir, "err", err)
		w.faults.noteTicket(t.ID, err)
	}
	diff, err := tree.diff(ctx)
	if err != nil {
		log.Warn("diff for report", "err", err)
	}
	leftovers, err := tree.leftovers(ctx)
	if err != nil {
		log.Warn("list what the checks left", "err", err)
	}
	if len(leftovers) > 0 {
		log.Info("the checks also wrote files; they are discarded, not committed", "count", len(leftovers), "paths", strings.Join(clipList(leftovers, 20), ", "))
	}
	patch := []byte(capText(diff, MaxPatchBytes, "the whole change is on the ticket's branch"))
	if err := os.WriteFile(filepath.Join(dir, "patch"), patch, 0o644); err != nil {
		log.Error("write patch", "dir", dir, "err", err)
		w.faults.noteTicket(t.ID, err)
	}
	save("patch", patch)
	writeAttempt(log, dir, save, func(err error) { w.faults.noteTicket(t.ID, err) }, record.Attempt{
		Attempt: lease.Attempt, Ending: ending, Status: out.Status, Reason: out.Reason, Branch: branch,
		Summary: out.Summary, Submits: out.Submits, Steps: out.Steps, Rounds: out.ReviewRounds,
		Dropped: out.DroppedFindings, Flaky: out.Flaky, Findings: out.Findings, Verdict: out.Verdict, History: out.History,
		Time: timing.From(ctx).Split(),
	}, attemptFolder(t.ID, lease.Attempt, branch), diff, out)
	calls, err := w.st.ModelCalls(ctx, t.ID)
	if err != nil {
		log.Warn("model calls for report", "err", err)
	}
	events, err := w.st.Events(ctx, t.ID)
	if err != nil {
		log.Warn("events for report", "err", err)
	}
	questions, err := w.st.Questions(ctx, t.ID)
	if err != nil {
		log.Warn("questions for report", "err", err)
	}
	report := renderReport(reportInput{
		Ticket: t, Attempt: lease.Attempt, Branch: branch, Base: tree.BaseCommit, Ending: ending,
		Outcome: out, Diff: diff, Leftovers: leftovers, Calls: calls, Events: events, Now: w.now(), Attempts: w.readAttempts(ctx, log, t.ID, dir),
		Questions: questions, GitHub: t.Source == "github",
	})
	// Check output and model text in it may quote a credential: cut before it is stored or
	// becomes a pull request body.
	body := []byte(capText(secret.Redact(report), MaxReportBytes, "see patch and attempt-*/ beside it"))
	if err := os.WriteFile(filepath.Join(dir, "report.md"), body, 0o644); err != nil {
		log.Error("write report", "dir", dir, "err", err)
		w.faults.noteTicket(t.ID, err)
	}
	save("report.md", body)
	return dir, files
}

type reportInput struct {
	Ticket  store.Ticket
	Attempt int
	Branch  string
	Base    string
	Ending  record.Ending
	Outcome pipeline.Outcome
	Diff    string
	// Leftovers are the paths the checks wrote that no tool did: discarded, never committed.
	Leftovers []string
	Calls     []store.ModelCall
	Events    []store.Event
	Now       time.Time
	// Attempts are every attempt's record so far (results/<id>/attempt-<n>/).
	Attempts []record.Attempt
	// Questions are the questions asked on the ticket so far, answered or not; GitHub says
	// the ticket came from a GitHub issue (where its question is posted).
	Questions []store.Question
	GitHub    bool
}

// renderReport is report.md: what ended the attempt, what was asked, what changed, what the
// checks and the review said, what was tried, what it cost, and what a human can do next.
func renderReport(in reportInput) string {
	var b strings.Builder
	for _, section := range []func(*strings.Builder, reportInput){
		writeHeading, writeAsked, writeChanged, writeGate, writeAttempts, writeTried, writeCost, writeNextStep,
	} {
		section(&b, in)
	}
	return b.String()
}

// writeHeading writes the title, how the attempt ended and what that ending asks for.
func writeHeading(b *strings.Builder, in reportInput) {
	t, out := in.Ticket, in.Outcome
	fmt.Fprintf(b, "# Ticket %d: %s\n\n**%s** after attempt %d of %d.\n\n", t.ID, t.Title, endingKind(in.Ending).heading(), in.Attempt, t.MaxAttempts)
	switch in.Ending {
	case record.Done:
		fmt.Fprintf(b, "Branch `%s` (from `%s`). Review it with:\n\n    git log -p %s..%s\n\n", in.Branch, short(in.Base), short(in.Base), in.Branch)
	case record.NeedsInfo:
		fmt.Fprintf(b, "## Question\n\n%s\n\n", quote(out.Question))
		b.WriteString("The ticket is out of the queue until someone answers. Answer it with:\n\n")
		fmt.Fprintf(b, "    ticketctl answer %d \"your answer\"\n\n", t.ID)
		if in.GitHub {
			b.WriteString("or reply on the GitHub issue (the question is posted there): a comment by the issue's author or by a maintainer with write access, after the question, is taken as the answer.\n\n")
		}
		b.WriteString("The next attempt starts with the question and the answer; the triage is kept.\n\n")
	case record.NeedsBudget:
		fmt.Fprintf(b, "Why it stopped: %s\n\n", out.Reason)
		if in.Branch != "" {
			fmt.Fprintf(b, "Its partial work is on `%s`. ", in.Branch)
		} else {
			b.WriteString("It left no change to keep. ")
		}
		fmt.Fprintf(b, "Give it more money per attempt with:\n\n    ticketctl budget %d +2.50\n\n", t.ID)
	default:
		fmt.Fprintf(b, "Why it stopped: %s\n\n", out.Reason)
	}
}

// writeAsked writes the ticket as asked, its answered questions and its triage.
func writeAsked(b *strings.Builder, in reportInput) {
	t, out := in.Ticket, in.Outcome
	b.WriteString("## What was asked\n\n")
	fmt.Fprintf(b, "Source: %s %s, repository `%s`", t.Source, t.ExternalID, t.Repo)
	if len(t.Labels) > 0 {
		fmt.Fprintf(b, ", labels: %s", strings.Join(t.Labels, ", "))
	}
	fmt.Fprintf(b, ".\n\n%s\n\n", quote(t.Body))
	for _, q := range in.Questions {
		if !q.Answered {
			continue
		}
		fmt.Fprintf(b, "Question %d (asked by attempt %d): %s\n\nAnswer by %s:\n\n%s\n\n", q.N, q.Attempt, oneLine(q.Text), orDashReport(q.AnsweredBy), quote(q.Answer))
	}
	if out.Triage != nil {
		fmt.Fprintf(b, "Triage:\n\n%s\n\n", pipeline.Fence("text", out.Triage.Summary))
		for _, c := range out.Triage.AcceptanceCriteria {
			fmt.Fprintf(b, "- [ ] %s\n", c)
		}
		b.WriteString("\n")
	}
}

// writeChanged writes the change the attempt made (or left).
func writeChanged(b *strings.Builder, in reportInput) {
	out := in.Outcome
	b.WriteString("## What changed\n\n")
	if out.Summary != "" {
		// The maker's words: fenced, so that no line of them (a heading, an HTML comment
		// that hides what follows) renders as the report's own Markdown.
		fmt.Fprintf(b, "The maker's summary:\n\n%s\n\n", pipeline.Fence("text", out.Summary))
	}
	if strings.TrimSpace(in.Diff) == "" {
		b.WriteString("The maker's tools changed no file.\n\n")
	} else {
		fmt.Fprintf(b, "%s, %s:\n\n%s\n\n", changeLabel(in), diffStat(in.Diff), pipeline.Fence("diff", clipLines(in.Diff, 300)))
	}
	if len(in.Leftovers) > 0 {
		fmt.Fprintf(b, "The checks also wrote (discarded, not part of the change): %s\n\n", strings.Join(clipList(in.Leftovers, 50), ", "))
	}
}

// writeGate writes the checks, the review and the judge on the last change.
func writeGate(b *strings.Builder, in reportInput) {
	out := in.Outcome
	b.WriteString("## Checks\n\n")
	writeChecks(b, in)
	if ft := out.FirstTierCaught; ft > 0 || (out.Gate != nil && out.Gate.FirstTier != nil) {
		fmt.Fprintf(b, "- first tier (tests importing the change, run before the whole suite): caught %d failing run(s) without the whole suite, %s in all", ft, out.FirstTierTime.Round(time.Millisecond))
		if out.Gate != nil && out.Gate.FirstTier != nil && out.Gate.Tier != pipeline.TierFirst {
			fmt.Fprintf(b, "; on the last run it passed (%d test file(s): %s) and the whole suite gave the verdict", len(out.Gate.FirstTier.Files), out.Gate.FirstTier.Summary)
		}
		b.WriteString("\n")
	}
	for _, f := range out.Flaky {
		fmt.Fprintf(b, "- flaky: %s failed, then passed when re-run alone (not blamed on the fix)\n", f)
	}
	writeReview(b, out)
	b.WriteString("\n")
}

// writeReview writes the checker's findings, the arbiter's decisions and the judge's verdict.
func writeReview(b *strings.Builder, out pipeline.Outcome) {
	if len(out.Findings) > 0 {
		b.WriteString("\nChecker findings (reviewer: severity [category] file:line):\n")
		for _, f := range out.Findings {
			fmt.Fprintf(b, "- %s: %s [%s] %s:%d: %s\n", reviewerName(f.Reviewer), f.Severity, f.Category, f.File, f.Line, f.Finding)
			if f.Arbiter != "" {
				fmt.Fprintf(b, "  - arbiter: %s\n", f.Arbiter)
			}
		}
	}
	if len(out.Arbitrations) > 0 {
		b.WriteString("\nArbiter (findings of two reviewers on the same lines that disagree; it only decides):\n")
		for _, a := range out.Arbitrations {
			kept := map[string]string{"A": "the " + reviewerName(a.A.Reviewer) + " finding holds", "B": "the " + reviewerName(a.B.Reviewer) + " finding holds"}[a.Decision]
			if kept == "" {
				kept = "both kept, marked as contested"
			}
			fmt.Fprintf(b, "- round %d, %s:%d: %s (%s) \"%s\" against %s (%s) \"%s\": **%s**. %s\n", a.Round, a.A.File, a.A.Line,
				reviewerName(a.A.Reviewer), a.A.Severity, oneLine(a.A.Finding), reviewerName(a.B.Reviewer), a.B.Severity, oneLine(a.B.Finding), kept, a.Reason)
		}
	}
	if out.DroppedFindings > 0 {
		fmt.Fprintf(b, "\nChecker findings dropped (evidence not in the diff or changed files, bad schema, or new in round 2): %d, over %d review round(s).\n", out.DroppedFindings, out.ReviewRounds)
	}
	if out.Verdict != nil {
		mode := "Judge"
		if out.JudgeAdvisory {
			mode = "Judge (advisory, does not block)"
		}
		fmt.Fprintf(b, "\n%s: %s. %s\n", mode, out.Verdict.Verdict, out.Verdict.Reason)
		for _, u := range out.Verdict.Unmet {
			fmt.Fprintf(b, "- unmet: %s\n", u)
		}
	}
}

// writeAttempts lists every attempt so far.
func writeAttempts(b *strings.Builder, in reportInput) {
	if len(in.Attempts) > 0 {
		b.WriteString("## Attempts\n\n")
		for _, a := range in.Attempts {
			fmt.Fprintf(b, "- attempt %d (%s, %s): %s", a.Attempt, a.Ending, a.Status, oneLine(a.Reason))
			if a.Branch != "" {
				fmt.Fprintf(b, "; branch `%s`", a.Branch)
			}
			fmt.Fprintf(b, "; patch `attempt-%d/patch`, %d submit(s), %d review round(s)\n", a.Attempt, a.Submits, a.Rounds)
		}
		b.WriteString("\n")
	}
}

// writeTried writes the ticket's events and this attempt's history.
func writeTried(b *strings.Builder, in reportInput) {
	out := in.Outcome
	b.WriteString("## What was tried\n\n")
	for _, e := range in.Events {
		if e.Kind == "claimed" || e.Kind == "enqueued" {
			continue
		}
		fmt.Fprintf(b, "- attempt %d, %s: %s", e.Attempt, e.At.UTC().Format("15:04:05"), e.Kind)
		if e.Reason != "" {
			fmt.Fprintf(b, ": %s", e.Reason)
		}
		b.WriteString("\n")
	}
	for _, h := range out.History {
		fmt.Fprintf(b, "- attempt %d: %s\n", in.Attempt, h)
	}
	b.WriteString("\n")
}

// writeCost writes what the ticket cost in calls, tokens, dollars and time.
func writeCost(b *strings.Builder, in reportInput) {
	t, out := in.Ticket, in.Outcome
	b.WriteString("## Cost and time\n\n")
	var prompt, cached, completion int64
	var cost float64
	unknown, estimated := false, false
	for _, c := range in.Calls {
		prompt += c.PromptTokens
		cached += c.CachedTokens
		completion += c.CompletionTokens
		if c.CostUSD == nil || c.CompletionUnknown {
			unknown = true
		}
		if c.CostUSD != nil {
			cost += *c.CostUSD
		}
		estimated = estimated || c.UsageEstimated
	}
	costText := model.FormatCost(cost, estimated, unknown)
	switch {
	case estimated && unknown:
		costText += " (~: partly estimated, the server sent no usage or the request was abandoned; + unknown: calls to models without a price, or answers never received)"
	case estimated:
		costText += " (~: partly estimated, the server sent no usage or the request was abandoned)"
	case unknown:
		costText += " (+ unknown: calls to models without a price, or answers never received)"
	}
	fmt.Fprintf(b, "- model calls: %d (all attempts); tokens: %d prompt (%d cached), %d completion\n", len(in.Calls), prompt, cached, completion)
	fmt.Fprintf(b, "- cost: %s\n", costText)
	fmt.Fprintf(b, "- this attempt: %d maker steps, %d submits, %s\n", out.Steps, out.Submits, out.Duration.Round(time.Millisecond))
	fmt.Fprintf(b, "- ticket age: %s\n", in.Now.Sub(t.CreatedAt).Round(time.Second))
}

// reviewerName is a finding's reviewer as the report names it.
func reviewerName(r string) string {
	if r == "" {
		return "correctness"
	}
	return r
}

func orDashReport(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func quote(s string) string {
	if strings.TrimSpace(s) == "" {
		return "> (no description)"
	}
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, l := range lines {
		lines[i] = "> " + l
	}
	return strings.Join(lines, "\n")
}

func diffStat(diff string) string {
	files, add, del := 0, 0, 0
	for _, l := range strings.Split(diff, "\n") {
		switch {
		case strings.HasPrefix(l, "diff --git "):
			files++
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
		case strings.HasPrefix(l, "+"):
			add++
		case strings.HasPrefix(l, "-"):
			del++
		}
	}
	return fmt.Sprintf("%d file(s), +%d -%d", files, add, del)
}

func clipLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) <= n {
		return strings.Join(lines, "\n")
	}
	return strings.Join(lines[:n], "\n") + fmt.Sprintf("\n… %d more lines in the patch file", len(lines)-n)
}

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}

// oneLine flattens s to one line of at most 300 bytes.
func oneLine(s string) string { return oneLineUpTo(s, 300) }

// oneLineUpTo is oneLine cut at n bytes: for the night's error, where a path and what to do
// come after git's command line.
func oneLineUpTo(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// clipList keeps the first n items of list, naming how many more there were.
func clipList(list []string, n int) []string {
	if len(list) <= n {
		return list
	}
	return append(slices.Clone(list[:n]), fmt.Sprintf("and %d more", len(list)-n))
}
