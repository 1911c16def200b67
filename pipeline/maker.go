package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ticketd/ticketd/pipeline/diskfault"
	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/pipeline/tools"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/store"
)

// maxIdleTurns bounds consecutive answers without a tool call.
const maxIdleTurns = 3

// makerMessages builds the opening of the maker conversation: static system prompt, then the
// repository part, then the ticket part. See prompts.go for why the order matters.
func (a *attempt) openingMessages(role model.Role, triage *Triage) []openai.ChatCompletionMessage {
	user := RepoContext(a.job.Ticket.Repo, a.job.Instructions, a.job.RepoMap) + "\n" +
		TicketContext(a.job.Ticket, triage, a.job.Dir, a.r.now())
	system := SystemPrompt(role)
	if a.r.Layout == LayoutDynamicFirst {
		system = fmt.Sprintf("Working directory: %s\nDate: %s\n\n", a.job.Dir, a.r.now().UTC().Format(time.DateOnly)) + system
	}
	return []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: system},
		{Role: openai.ChatMessageRoleUser, Content: user},
	}
}

func (a *attempt) makerLoop(ctx context.Context, out Outcome) Outcome {
	ws := a.job.Workspace
	if ws == nil {
		var err error
		if ws, err = tools.NewWorkspace(a.job.Dir); err != nil {
			return a.stop(ctx, out, err)
		}
	}
	toolDefs := tools.MakerTools()
	msgs := a.openingMessages(model.RoleMaker, out.Triage)
	guard := &loopGuard{}
	fit := newCompactor(a.r.ContextWindows[model.RoleMaker], a.r.CompactAt)
	idle := 0
	overflowed := false
	for {
		if err := a.spend.checkMaker(); err != nil {
			return a.stop(ctx, out, err)
		}
		compacted, passes, err := fit.fit(ctx, msgs, toolDefs, a.summariseWith(model.RoleTriage))
		if passes > 0 {
			a.compactions += passes
			a.unrecorded += passes
			a.note("conversation compacted (%d pass(es)): about %d tokens now", passes, estimateTokens(compacted, toolDefs))
		}
		if err != nil {
			if fit.refused != nil {
				// The server's refusal is why the window is full: keep it findable (its
				// *model.Fault tells the night whether every ticket meets it).
				err = &refusedBy{err: err, refused: fit.refused}
			}
			return a.stop(ctx, out, err)
		}
		msgs = compacted
		a.spend.steps++
		resp, err := a.chat(ctx, model.RoleMaker, msgs, toolDefs, false)
		if errors.Is(err, model.ErrContextOverflow) && !overflowed && ctx.Err() == nil {
			// The server's window is smaller than configured or estimated: compact to well
			// under what was just refused, once, before giving up on the attempt.
			overflowed = true
			fit.lower(estimateTokens(msgs, toolDefs), err)
			a.note("maker request refused as too long for the context window; compacting and retrying")
			continue
		}
		if err != nil {
			return a.stop(ctx, out, fmt.Errorf("maker: %w", err))
		}
		a.makerAnswers++
		msg := resp.Message
		msg.Role = openai.ChatMessageRoleAssistant
		msgs = append(msgs, msg)
		if len(msg.ToolCalls) == 0 {
			idle++
			if idle >= maxIdleTurns {
				return a.stop(ctx, out, fmt.Errorf("maker answered %d times without using a tool; last answer: %q", idle, clip(msg.Content, 200)))
			}
			msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser,
				Content: "Nobody reads plain answers here. Use the tools to change the code, then call submit."})
			continue
		}
		idle = 0
		results := a.execTools(ctx, ws, msg.ToolCalls)
		for i, tc := range msg.ToolCalls {
			res := results[i]
			if res.final != nil {
				final := *res.final
				final.Triage = out.Triage
				return final
			}
			nudge, stop, seen := guard.observe(tc.Function.Name, tc.Function.Arguments, res.text)
			if stop {
				return a.stop(ctx, out, fmt.Errorf("%w: %s%s called %d times with the same arguments and the same result within %d tool calls",
					errBudget, loopStopPrefix, tc.Function.Name, seen, loopWindow))
			}
			if nudge != "" {
				a.note("loop guard: nudged after %s repeated %d times", tc.Function.Name, seen)
			}
			msgs = append(msgs, openai.ChatCompletionMessage{
				Role: openai.ChatMessageRoleTool, ToolCallID: tc.ID, Name: tc.Function.Name, Content: res.text + nudge,
			})
		}
		if ctx.Err() != nil {
			return a.stop(ctx, out, ctx.Err())
		}
		// A submit that passed the gate but failed review carries the outcome so far.
		for _, res := range results {
			if res.review != nil {
				r := res.review
				out.Findings, out.Verdict, out.Checks, out.Gate, out.Summary = r.Findings, r.Verdict, r.Checks, r.Gate, r.Summary
				out.Evidence = r.Evidence
			}
		}
	}
}

type toolResult struct {
	text string
	// failed marks a call that did not do what was asked: a tool error, checks that
	// fail, a submit that was not accepted. It is the recorded tool call's OK flag.
	failed bool
	rung   string   // edit_file's matching rung, for the record
	final  *Outcome // set by a submit that passed everything
	review *Outcome // set by a submit that passed the checks but not the review
}

// execTools runs one turn's tool calls in the order the model gave them, so each result
// reflects every earlier call of the turn (a read after an edit shows the edit). A run of
// consecutive read-only calls runs concurrently; any other call is a barrier. After a
// submit that ended the attempt, the remaining calls are not run.
func (a *attempt) execTools(ctx context.Context, ws *tools.Workspace, calls []openai.ToolCall) []toolResult {
	results := make([]toolResult, len(calls))
	for i := 0; i < len(calls); {
		if !tools.ReadOnly(calls[i].Function.Name) {
			results[i] = a.execOne(ctx, ws, calls[i])
			if results[i].final != nil {
				return results
			}
			i++
			continue
		}
		j := i
		for j < len(calls) && tools.ReadOnly(calls[j].Function.Name) {
			j++
		}
		var wg sync.WaitGroup
		for k := i; k < j; k++ {
			wg.Go(func() { results[k] = a.execOne(ctx, ws, calls[k]) })
		}
		wg.Wait()
		i = j
	}
	return results
}

func (a *attempt) execOne(ctx context.Context, ws *tools.Workspace, tc openai.ToolCall) toolResult {
	start := a.r.now()
	var res toolResult
	var err error
	switch tc.Function.Name {
	case tools.RunChecks:
		var gate Gate
		var changed []string
		if a.job.Diff != nil {
			if diff, err := a.job.Diff(ctx); err == nil {
				changed = a.changedPaths(ctx, diff)
			}
		}
		res.text, gate = a.runChecks(ctx, changed)
		res.failed = !gate.Passed
		if gate.Cancelled && ctx.Err() != nil {
			stopped := a.stop(ctx, Outcome{Checks: gate.Results, Gate: &gate}, context.Cause(ctx))
			res.final = &stopped
		} else if reason := validate.Aborted(gate.Results); reason != "" {
			failed := a.stop(ctx, Outcome{Checks: gate.Results, Gate: &gate}, errors.New(reason))
			res.final = &failed
		}
	case tools.Submit:
		res = a.submit(ctx, tc.Function.Arguments)
	case tools.AskHuman:
		res = a.askHuman(tc.Function.Arguments)
	default:
		var r tools.Result
		r, err = ws.Run(ctx, tc.Function.Name, tc.Function.Arguments)
		res.text, res.rung = r.Text, string(r.Rung)
		if err != nil {
			res.text = "error: " + err.Error()
			res.failed = true
			if a.job.DiskFault != nil && diskfault.Is(err) {
				a.job.DiskFault(err)
			}
		}
	}
	if a.r.Recorder != nil {
		_, rerr := a.r.Recorder.RecordToolCall(context.WithoutCancel(ctx), store.ToolCall{
			TicketID: a.job.Ticket.ID, Attempt: a.job.Ticket.Attempt, Step: a.spend.steps,
			Tool: clip(tc.Function.Name, 128), Args: clip(tc.Function.Arguments, 4096), Result: clip(res.text, 4096),
			OK: !res.failed, Rung: res.rung,
			Duration: a.r.now().Sub(start), At: start,
		})
		if rerr != nil {
			a.log.Warn("record tool call", "tool", tc.Function.Name, "err", rerr)
		}
	}
	return res
}

// runChecks runs the gate and reports, for the model, the comparison with the baseline. The
// tests the change can affect run first (see firstTier); their failures come back at once,
// and the whole suite, on which the verdict is made, runs only when they pass.
func (a *attempt) runChecks(ctx context.Context, changed []string) (string, Gate) {
	a.changed = changed
	first, failed := a.firstTier(ctx, changed)
	if first != nil {
		a.firstTierTime += first.Duration
	}
	if failed != nil {
		a.firstTierCaught++
		a.note("first tier failed in %s (%d test file(s), %d target(s)); whole suite not run", first.Duration.Round(time.Millisecond), len(first.Files), len(first.Targets))
		return "The checks fail (compared with the base commit): " + failed.Text, *failed
	}
	if first != nil {
		a.note("first tier passed in %s (%d test file(s), %d target(s)); running the whole suite", first.Duration.Round(time.Millisecond), len(first.Files), len(first.Targets))
	}
	g := a.fullChecks(ctx)
	g.Tier, g.FirstTier = TierFull, first
	if g.Cancelled {
		return "The checks were cut short (" + context.Cause(ctx).Error() + "); they judged nothing.", g
	}
	if g.Passed {
		return "The checks pass (compared with the base commit): " + g.Text, g
	}
	return "The checks fail (compared with the base commit): " + g.Text, g
}

// noteFlaky records tests that failed, then passed alone, once each per attempt.
func (a *attempt) noteFlaky(flaky []string) {
	for _, f := range flaky {
		if !slices.Contains(a.flaky, f) {
			a.flaky = append(a.flaky, f)
			a.note("flaky test: %s failed, then passed when re-run alone; not blamed on the fix", f)
		}
	}
}

// Who refused a submit, in the words the maker reads. Each names the gate that spoke and
// what already passed, so a model never chases a test failure that a reviewer's remark was.
const (
	refusedByChecks  = "Not accepted: the checks failed (tests, lint and type checks, compared with the base commit). The change was not reviewed.\n\n"
	refusedByChecker = "Not accepted: the checks passed, but the code reviewer (checker) found blocking defects in your change.\n\n"
	refusedByJudge   = "Not accepted: the checks passed and the code reviewer found no blocker, but the judge found acceptance criteria not met.\n\n"
	refusedNoProof   = "Not accepted: the checks pass, but nothing shows that your change fixes the reported bug. The change was not reviewed.\n\n"
)

// sameRefusalStop opens the reason of an attempt stopped because a submit was refused with
// the same failures as the one before, with no file changed in between: a loop, which more
// submits would only pay for.
const sameRefusalStop = "the same checks failed twice with no change"

// refusal is a refused submit: what refused it, the keys of what failed, and the diff.
type refusal struct {
	kind string
	keys []string
	diff string
}

// repeated records a refused submit and reports whether it repeats the previous one: the
// same gate refused it for the same failures, and no file changed since.
func (a *attempt) repeated(kind string, keys []string, diff string) bool {
	r := &refusal{kind: kind, keys: slices.Clone(keys), diff: diff}
	prev := a.lastRefusal
	a.lastRefusal = r
	return prev != nil && prev.kind == r.kind && slices.Equal(prev.keys, r.keys) && prev.diff == r.diff
}

// noEvidence answers a submit that passed the checks with nothing showing that it fixes the
// bug: sent back for a regression test while the repository has tests and refusals are left,
// else the attempt ends unverified, its patch kept for a human and never shipped.
func (a *attempt) noEvidence(summary, diff string, gate Gate, ev *Evidence) toolResult {
	why := "no test fails at the base commit and passes with the change"
	if a.tri != nil && len(a.tri.Verifications) > 0 {
		why += ", and no verification command fails at the base commit and passes with it"
	}
	var b strings.Builder
	if len(ev.PassAtBase) > 0 {
		fmt.Fprintf(&b, "Your test(s) %s pass at the base commit too: ticketd ran them against the code as it was before your change, and they passed, so they do not reproduce the bug. Change them so that they fail without your fix.\n",
			strings.Join(clipList(ev.PassAtBase, 10), ", "))
		why += fmt.Sprintf(" (the change's tests %s pass at the base commit too)", strings.Join(clipList(ev.PassAtBase, 5), ", "))
	} else {
		b.WriteString("No test fails at the base commit and passes with your change.\n")
	}
	for _, n := range ev.Notes {
		fmt.Fprintf(&b, "Note: %s\n", n)
	}
	b.WriteString("Add a regression test beside the existing tests, in their style, that fails without your fix and passes with it (ticketd runs it against the base commit to check), name its pytest node id in submit's \"tests\", and submit again.")
	keys := append([]string{"no evidence"}, ev.PassAtBase...)
	repeat := a.repeated("evidence", keys, diff)
	if a.hasTestSuite() && a.evidenceRefusals < MaxEvidenceRefusals && !repeat {
		a.evidenceRefusals++
		a.note("submit %d: checks passed, but nothing shows the fix works (%s); asked for a regression test (%d of %d)", a.submits, why, a.evidenceRefusals, MaxEvidenceRefusals)
		return toolResult{failed: true, text: refusedNoProof + b.String()}
	}
	switch {
	case repeat:
		why += "; the same change was submitted again without one"
	case a.evidenceRefusals > 0:
		why += fmt.Sprintf("; asked %d time(s) for a regression test", a.evidenceRefusals)
	case !a.hasTestSuite():
		why += "; the repository has no test suite to add one to"
	}
	out := Outcome{Summary: summary, Checks: gate.Results, Gate: &gate, Evidence: ev, Status: StatusUnverified,
		Reason: "unverified, patch attached: the checks pass, but " + why}
	if prior := a.job.Ticket.Unverified; prior != nil && samePatch(prior.Patch, diff) {
		out.RepeatsUnverified = prior.Attempt
		out.Reason += fmt.Sprintf("; the same patch as attempt %d, unverified again: a further attempt would only repeat it", prior.Attempt)
	}
	a.note("stopped: %s", out.Reason)
	return toolResult{failed: true, text: refusedNoProof + b.String(), final: &out}
}

// maxQuestionBytes bounds the question a maker asks: it goes into a GitHub comment, the
// report and every later prompt of the ticket.
const maxQuestionBytes = 2000

// refusedQuestion answers ask_human once the ticket's questions are used up.
const refusedQuestion = "error: ask_human refused: this ticket has no question left (budget.max_questions), and nobody will answer now. Decide from what you have: choose the most plausible reading of the report, fix that, and say in the submit summary which reading you chose and why."

// askHuman ends the attempt with the maker's question when the ticket has a question left;
// otherwise it refuses, and the maker goes on.
func (a *attempt) askHuman(args string) toolResult {
	var q struct {
		Question string `json:"question"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(orEmptyObject(args))), &q); err != nil {
		return toolResult{failed: true, text: fmt.Sprintf("error: ask_human arguments are not valid JSON (%v); send {\"question\": \"...\"}", err)}
	}
	question := strings.TrimSpace(q.Question)
	if question == "" {
		return toolResult{failed: true, text: `error: ask_human needs a non-empty "question"`}
	}
	if a.job.Ticket.QuestionsLeft <= 0 {
		a.note("ask_human refused (no question left): %s", clip(question, 200))
		return toolResult{failed: true, text: refusedQuestion}
	}
	question = clip(question, maxQuestionBytes)
	a.note("asked a human: %s", question)
	out := Outcome{Status: StatusNeedsInfo, Question: question, Reason: "needs info: the maker asked: " + clip(question, 300)}
	return toolResult{text: "Question recorded. The attempt ends here; the ticket resumes once it is answered.", final: &out}
}

// evidenceText is the last evidence step's finding, for the judge.
func (a *attempt) evidenceText() string {
	if a.lastEvidence == nil || !a.lastEvidence.Found() {
		return ""
	}
	return "\n# Evidence that the fix works\n\n" + a.lastEvidence.Text()
}

func (a *attempt) submit(ctx context.Context, args string) toolResult {
	var s struct {
		Summary string   `json:"summary"`
		Tests   []string `json:"tests"` // node ids the maker added or that reproduce the bug
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(orEmptyObject(args))), &s); err != nil {
		return toolResult{failed: true, text: fmt.Sprintf("error: submit arguments are not valid JSON (%v); send {\"summary\": \"...\"}", err)}
	}
	diff, err := a.job.Diff(ctx)
	if err != nil {
		return toolResult{failed: true, text: "error: could not read your changes: " + err.Error()}
	}
	if strings.TrimSpace(diff) == "" {
		a.note("submit refused: no changes")
		return toolResult{failed: true, text: "error: submit refused: there are no changes in the repository; edit the code first"}
	}
	a.submits++
	if text, refused := a.needsTestFirst(ctx, diff); refused {
		return toolResult{failed: true, text: text}
	}
	for _, id := range s.Tests {
		if id = strings.TrimSpace(id); id != "" && !slices.Contains(a.targets, id) {
			a.targets = append(a.targets, id)
		}
	}
	changed := a.changedPaths(ctx, diff)
	if found := a.submitFindings(diff, changed); len(found) > 0 {
		return a.answerFindings(s.Summary, found)
	}
	_, gate := a.runChecks(ctx, changed)
	a.lastGate = &gate
	if gate.Cancelled && ctx.Err() != nil {
		// The budget or a shutdown cut the checks short: that is how the attempt ends, never
		// a failure of the change.
		stopped := a.stop(ctx, Outcome{Summary: s.Summary, Checks: gate.Results, Gate: &gate}, context.Cause(ctx))
		return toolResult{failed: true, text: "The checks were cut short: " + context.Cause(ctx).Error(), final: &stopped}
	}
	if reason := validate.Aborted(gate.Results); reason != "" {
		// A check broke a limit (the worktree outgrew max_worktree_size): nothing more runs in it.
		failed := a.stop(ctx, Outcome{Summary: s.Summary, Checks: gate.Results, Gate: &gate}, errors.New(reason))
		return toolResult{final: &failed}
	}
	if len(gate.Weakened) > 0 {
		return a.weakenedStop(s.Summary, gate)
	}
	if !gate.Passed {
		a.note("submit %d: checks failed: %s", a.submits, clip(gate.Text, 300))
		text := refusedByChecks + gate.Text + "\nFix these and call submit again."
		if a.repeated("checks", gate.failedKeys, diff) {
			stopped := Outcome{Summary: s.Summary, Checks: gate.Results, Gate: &gate, Status: StatusFailed,
				Reason: fmt.Sprintf("%s: %s", sameRefusalStop, clip(strings.Join(strings.Fields(strings.Join(gate.failedKeys, "; ")), " "), 300))}
			a.note("stopped: %s", stopped.Reason)
			return toolResult{failed: true, text: text, final: &stopped}
		}
		return toolResult{failed: true, text: text}
	}
	ev, err := a.evidence(ctx, diff, changed, gate)
	if err == nil && ctx.Err() != nil {
		err = context.Cause(ctx) // the evidence runs were cut short: they showed nothing
	}
	if err != nil {
		failed := a.stop(ctx, Outcome{Summary: s.Summary, Checks: gate.Results, Gate: &gate}, err)
		return toolResult{final: &failed}
	}
	a.lastEvidence = ev
	if !ev.Found() {
		return a.noEvidence(s.Summary, diff, gate, ev)
	}
	a.lastRefusal = nil
	a.note("submit %d: checks passed; evidence: %s", a.submits, clip(strings.Join(strings.Fields(ev.Text()), " "), 300))
	out := Outcome{Summary: s.Summary, Checks: gate.Results, Gate: &gate, Evidence: ev}
	rev, err := a.review(ctx, diff, s.Summary)
	if err != nil {
		// A review that cannot run is not the fix's fault, but the fix may not ship unreviewed.
		failed := a.stop(ctx, out, fmt.Errorf("review: %w", err))
		return toolResult{final: &failed}
	}
	out.Findings, out.Verdict = rev.findings, rev.verdict
	if rev.feedback != "" {
		who, prefix := "checker", refusedByChecker
		if rev.by == model.RoleJudge {
			who, prefix = "judge", refusedByJudge
		}
		a.note("submit %d: checks passed, %s rejected (review round %d of %d): %s", a.submits, who, a.reviewRounds, MaxReviewRounds, clip(rev.feedback, 300))
		if rev.final {
			stopped := out
			stopped.Status = StatusFailed
			stopped.Reason = fmt.Sprintf("the %s still rejects the fix after %d review rounds: %s", who, MaxReviewRounds, clip(strings.Join(strings.Fields(rev.feedback), " "), 400))
			a.note("stopped: %s", stopped.Reason)
			return toolResult{failed: true, text: prefix + rev.feedback, final: &stopped}
		}
		return toolResult{failed: true, text: prefix + rev.feedback, review: &out}
	}
	a.note("submit %d: checks passed and review passed", a.submits)
	out.Status = StatusFixed
	out.Reason = "checks, checker and judge passed"
	return toolResult{final: &out}
}

func orEmptyObject(s string) string {
	if strings.TrimSpace(s) == "" {
		return "{}"
	}
	return s
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
