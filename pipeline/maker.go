package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ticketd/ticketd/pipeline/diskfault"
	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/pipeline/tools"
	"github.com/ticketd/ticketd/pipeline/validate"
	"github.com/ticketd/ticketd/store"
)

// maxIdleTurns bounds consecutive answers without a tool call.
const maxIdleTurns = 3

func (a *attempt) makerLoop(ctx context.Context, out Outcome) Outcome {
	ws := a.job.Workspace
	if ws == nil {
		var err error
		if ws, err = tools.NewWorkspace(a.job.Dir); err != nil {
			return a.stop(ctx, out, err)
		}
	}
	toolDefs := tools.MakerTools(a.ask.asking, a.ask.checking)
	msgs := a.ask.opening(model.RoleMaker, out.Triage)
	guard := &loopGuard{}
	fit := newCompactor(a.r.ContextWindows[model.RoleMaker], a.r.CompactAt)
	idle := 0
	overflowed := false
	for {
		if err := a.spend.checkMaker(); err != nil {
			return a.stop(ctx, out, err)
		}
		compacted, passes, err := fitWindow(ctx, fit, a.ask, a.jr, msgs, toolDefs)
		a.compactions += passes
		if err != nil {
			return a.stop(ctx, out, err)
		}
		msgs = compacted
		a.spend.steps++
		resp, err := a.ask.chat(ctx, model.RoleMaker, msgs, toolDefs, false)
		if errors.Is(err, model.ErrContextOverflow) && !overflowed && ctx.Err() == nil {
			// The server's window is smaller than configured or estimated: compact to well
			// under what was just refused, once, before giving up on the attempt.
			overflowed = true
			fit.lower(estimateTokens(msgs, toolDefs), err)
			a.jr.note("maker request refused as too long for the context window; compacting and retrying")
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
			what, nudge := idleAnswer(resp)
			if idle >= maxIdleTurns {
				return a.stop(ctx, out, fmt.Errorf("maker answered %d times without using a tool; last answer: %s", idle, what))
			}
			a.jr.note("maker answered without a tool call: %s", what)
			msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: nudge})
			continue
		}
		idle = 0
		// An answer cut at the output limit stopped inside its last tool call: its arguments
		// may be cut too (or "repaired" by the server into a shorter file), so it is not run.
		results := a.execTools(ctx, ws, msg.ToolCalls, resp.FinishReason == string(openai.FinishReasonLength))
		answers, final := a.toolAnswers(ctx, guard, msg.ToolCalls, results, out)
		if final != nil {
			return *final
		}
		msgs = append(msgs, answers...)
		if ctx.Err() != nil {
			return a.stop(ctx, out, ctx.Err())
		}
		out = lastReviewed(out, results)
	}
}

// fitWindow compacts the maker's conversation to fit its context window (see compact.go)
// and counts the passes on the next maker request.
func fitWindow(ctx context.Context, fit *compactor, q *asker, jr *journal, msgs []openai.ChatCompletionMessage, defs []openai.Tool) ([]openai.ChatCompletionMessage, int, error) {
	compacted, passes, err := fit.fit(ctx, msgs, defs, q.summariseWith(model.RoleTriage))
	if passes > 0 {
		q.unrecorded += passes
		jr.note("conversation compacted (%d pass(es)): about %d tokens now", passes, estimateTokens(compacted, defs))
	}
	if err != nil && fit.refused != nil {
		// The server's refusal is why the window is full: keep it findable (its
		// *model.Fault tells the night whether every ticket meets it).
		err = &refusedBy{err: err, refused: fit.refused}
	}
	return compacted, passes, err
}

// toolAnswers turns one turn's results into the tool messages the maker reads next, or into
// the outcome that ends the attempt: a submit that ended it, or the loop guard.
func (a *attempt) toolAnswers(ctx context.Context, guard *loopGuard, calls []openai.ToolCall, results []toolResult, out Outcome) ([]openai.ChatCompletionMessage, *Outcome) {
	var msgs []openai.ChatCompletionMessage
	for i, tc := range calls {
		res := results[i]
		if res.final != nil {
			final := *res.final
			final.Triage = out.Triage
			return nil, &final
		}
		if res.same {
			msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: tc.ID, Name: tc.Function.Name, Content: res.text})
			continue
		}
		nudge, stop, seen := guard.observe(tc.Function.Name, tc.Function.Arguments, res.text)
		if stop {
			stopped := a.stop(ctx, out, fmt.Errorf("%w: %s%s called %d times with the same arguments and the same result within %d tool calls",
				errBudget, loopStopPrefix, tc.Function.Name, seen, loopWindow))
			return nil, &stopped
		}
		if nudge != "" {
			a.jr.note("loop guard: nudged after %s repeated %d times", tc.Function.Name, seen)
		}
		msgs = append(msgs, openai.ChatCompletionMessage{
			Role: openai.ChatMessageRoleTool, ToolCallID: tc.ID, Name: tc.Function.Name, Content: res.text + nudge,
		})
	}
	return msgs, nil
}

// lastReviewed is out with the artifacts of the turn's last submit that passed the gate but
// failed review, which carries the outcome so far; out itself when there was none.
func lastReviewed(out Outcome, results []toolResult) Outcome {
	for _, res := range results {
		if res.review != nil {
			r := res.review
			out.Findings, out.Verdict, out.Checks, out.Gate, out.Summary = r.Findings, r.Verdict, r.Checks, r.Gate, r.Summary
			out.Evidence = r.Evidence
		}
	}
	return out
}

type toolResult struct {
	text string
	// failed marks a call that did not do what was asked: a tool error, checks that
	// fail, a submit that was not accepted. It is the recorded tool call's OK flag.
	failed bool
	rung   string   // edit_file's matching rung, for the record
	final  *Outcome // set by a submit that passed everything
	review *Outcome // set by a submit that passed the checks but not the review
	// same marks a call answered by reference to an identical one of the same answer: the
	// loop guard counts the one that ran.
	same bool
}

// Answers to calls of a turn that are not run.
const (
	// cutCall answers the last tool call of an answer cut at the output limit.
	cutCall = "error: not run: your answer was cut off at the output limit (finish_reason length) while it was writing this call, so its arguments may be incomplete. Send the call again in a shorter answer: keep the text before it brief, and change a long file with several edit_file calls rather than one write_file of the whole file."
	// tooManyCalls answers the calls of an answer past maxTurnCalls.
	tooManyCalls = "error: not run: one answer may make at most %d tool calls, and yours made %d. Send this call again in your next answer if you still need it (read_files takes many paths in one call)."
	// sameCall answers a call that repeats an earlier one of the same answer, with no call
	// between them that could change the worktree.
	sameCall = "Not run again: the same call, with the same arguments, as %s earlier in this answer, with no change made between them; its result is above."
)

// maxTurnCalls bounds the tool calls run for one answer: a model that repeats itself can
// emit hundreds in one answer, each a walk of the repository and up to MaxResultBytes of
// result for the next request.
const maxTurnCalls = 32

// execTools runs one turn's tool calls in the order the model gave them, so each result
// reflects every earlier call of the turn (a read after an edit shows the edit). A run of
// consecutive read-only calls runs concurrently; any other call is a barrier. After a
// submit that ended the attempt, the remaining calls are not run. Some calls are answered
// without being run: one that repeats an earlier call of the answer with no change made
// between them (sameCall: models repeat parallel calls, and an edit whose new text holds
// its old text would apply twice), the last of an answer cut at the output limit (cut:
// cutCall), and those past maxTurnCalls (tooManyCalls).
func (a *attempt) execTools(ctx context.Context, ws *tools.Workspace, calls []openai.ToolCall, cut bool) []toolResult {
	results := make([]toolResult, len(calls))
	pre := make([]*toolResult, len(calls)) // the answers of calls that are not run
	for i := maxTurnCalls; i < len(calls); i++ {
		pre[i] = &toolResult{text: fmt.Sprintf(tooManyCalls, maxTurnCalls, len(calls)), failed: true}
	}
	if cut && len(calls) > 0 {
		pre[len(calls)-1] = &toolResult{text: cutCall, failed: true}
	}
	lastChange := -1           // the last call to run that may change the worktree
	latest := map[string]int{} // the last call to run with these name and arguments
	for k, tc := range calls {
		if pre[k] != nil {
			continue
		}
		key := tc.Function.Name + "\x00" + strings.Join(strings.Fields(tc.Function.Arguments), " ")
		if f, seen := latest[key]; seen && f >= lastChange {
			pre[k] = &toolResult{text: fmt.Sprintf(sameCall, calls[f].ID), same: true}
			continue
		}
		latest[key] = k
		if !tools.ReadOnly(tc.Function.Name) {
			lastChange = k
		}
	}
	alone := func(k int) bool { return pre[k] == nil && !tools.ReadOnly(calls[k].Function.Name) }
	for i := 0; i < len(calls); {
		if alone(i) {
			results[i] = a.execOne(ctx, ws, calls[i], nil)
			if results[i].final != nil {
				return results
			}
			i++
			continue
		}
		j := i
		for j < len(calls) && !alone(j) {
			j++
		}
		var wg sync.WaitGroup
		for k := i; k < j; k++ {
			wg.Go(func() { results[k] = a.execOne(ctx, ws, calls[k], pre[k]) })
		}
		wg.Wait()
		i = j
	}
	return results
}

// execOne runs one tool call and records it; pre, when not nil, is the result of a call
// that is not run.
func (a *attempt) execOne(ctx context.Context, ws *tools.Workspace, tc openai.ToolCall, pre *toolResult) toolResult {
	start := a.r.now()
	var res toolResult
	var err error
	switch name := tc.Function.Name; {
	case pre != nil:
		res = *pre
	case name == tools.RunChecks && a.ask.checking: // not offered otherwise: an unknown tool
		var gate Gate
		cand := candidate{targets: targetTests(a.named, a.issueTests, a.tri, a.job.Baseline)}
		if a.job.Diff != nil {
			diff, err := a.job.Diff(ctx)
			if err == nil {
				cand.diff, cand.changed = diff, changedPaths(ctx, a.job, a.log, diff)
			}
			a.diskFault(err)
		}
		res.text, gate = a.runChecks(ctx, a.checkRun(cand), cand.diff)
		res.failed = !gate.Passed
		if gate.Cancelled && ctx.Err() != nil {
			stopped := a.stop(ctx, Outcome{Artifacts: Artifacts{Checks: gate.Results, Gate: &gate}}, context.Cause(ctx))
			res.final = &stopped
		} else if reason := validate.Aborted(gate.Results); reason != "" {
			failed := a.stop(ctx, Outcome{Artifacts: Artifacts{Checks: gate.Results, Gate: &gate}}, errors.New(reason))
			res.final = &failed
		}
	case name == tools.Submit:
		res = a.submit(ctx, tc.Function.Arguments)
	case name == tools.AskHuman && a.ask.asking: // not offered otherwise: an unknown tool
		res = askHuman(a.job.Ticket, a.jr, tc.Function.Arguments)
	default:
		var r tools.Result
		r, err = ws.Run(ctx, tc.Function.Name, tc.Function.Arguments)
		res.text, res.rung = r.Text, string(r.Rung)
		if err != nil {
			res.text = "error: " + err.Error()
			res.failed = true
			a.diskFault(err)
		}
	}
	if name := tc.Function.Name; pre == nil && (name == tools.Submit || name == tools.RunChecks && a.ask.checking) {
		res.text += checkoutFormNote(ws)
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

// diskFault tells the job's DiskFault of err when it is a storage failure of the machine
// (diskfault.Is), which ends the attempt as the machine's before the model reads it.
func (a *attempt) diskFault(err error) {
	if err != nil && a.job.DiskFault != nil && diskfault.Is(err) {
		a.job.DiskFault(err)
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// checkoutFormNote tells the maker, once, which files it wrote the checks read in another
// form: the caller's checks read each file as a checkout of the fix's commit gives it (the
// repository's line-ending and encoding rules; daemon/fixtree.go), and a test about those
// bytes would otherwise fail for a reason the maker cannot see. "" when there are none.
func checkoutFormNote(ws *tools.Workspace) string {
	paths := ws.TakeRewritten()
	if len(paths) == 0 {
		return ""
	}
	return fmt.Sprintf("\n\nNote: the repository's rules for line endings or encodings (.gitattributes, git config) make a checkout of your commit write other bytes to %s than you wrote; the checks read that checkout's bytes, as will everyone who checks out the fix. Read the file again before relying on its exact bytes.", strings.Join(paths, ", "))
}
