package scriptedmodel

import (
	"encoding/json"
	"fmt"
	"strings"
)

// pastCall is one tool call the conversation already holds, with the result sent back.
type pastCall struct {
	name, args string
	argsValid  bool
	result     string
	hasResult  bool
	turn       int
}

// history is what the maker can learn from the messages alone: the model is stateless,
// like a real one, and decides every answer from the conversation it is sent.
type history struct {
	calls    []pastCall
	lastTurn int // turn index of the last assistant message with tool calls, -1 if none
	prose    int // assistant answers without a tool call
	// answered: the ticket shows an earlier question with its answer.
	answered bool
}

// readHistory pairs assistant tool calls with their tool results.
func readHistory(msgs []message) history {
	h := history{lastTurn: -1}
	byID := map[string]int{}
	turn := 0
	for _, m := range msgs {
		switch m.Role {
		case "assistant":
			if len(m.ToolCalls) == 0 {
				if strings.TrimSpace(m.text) != "" {
					h.prose++
				}
				continue
			}
			for _, tc := range m.ToolCalls {
				byID[tc.ID] = len(h.calls)
				h.calls = append(h.calls, pastCall{
					name: tc.Function.Name, args: tc.Function.Arguments,
					argsValid: json.Valid([]byte(tc.Function.Arguments)), turn: turn,
				})
			}
			h.lastTurn = turn
			turn++
		case "tool":
			if i, ok := byID[m.ToolCallID]; ok {
				h.calls[i].result, h.calls[i].hasResult = m.text, true
			}
		case "user":
			h.answered = h.answered || hasAnswer(m.text)
		}
	}
	return h
}

// hasAnswer reads a ticket as a model does: a "Question N:" line followed by an "Answer"
// line that holds an answer.
func hasAnswer(text string) bool {
	asked := false
	for line := range strings.SplitSeq(text, "\n") {
		switch {
		case strings.HasPrefix(line, "Question "):
			asked = true
		case asked && strings.HasPrefix(line, "Answer"):
			_, answer, _ := strings.Cut(line, ": ")
			if a := strings.TrimSpace(answer); a != "" && a != "(not answered)" {
				return true
			}
		}
	}
	return false
}

func (c pastCall) ok() bool     { return c.hasResult && !strings.HasPrefix(c.result, "error:") }
func (c pastCall) failed() bool { return c.hasResult && strings.HasPrefix(c.result, "error:") }

// refused reads a submit's answer as a model would: an accepted submit ends the
// conversation, so a submit that got an answer at all was judged and not accepted —
// unless the answer is a tool error (nothing to submit, bad arguments), which judged nothing.
func (c pastCall) refused() bool { return c.hasResult && !c.failed() }

// makerTurn decides the maker's next tool calls for plan p from the conversation.
// The state machine is written out in Behaviour's doc comments; the rules, in order:
// loop repeats its read; malformed_args sends its broken call once; a realistic case
// first reads a path that does not exist and lists the files when told so; an edit that
// just failed is followed by a re-read (each edit is retried once) unless the refusal
// quoted the real block, which is copied; nothing happens before a successful read; a
// realistic case may re-read, or answer in prose once; the wrong phase lasts until enough
// submits have failed; then the fix (reverting the wrong guess first; a realistic case may
// mangle an edit's old_text, break one call's JSON, or read the lines it edits in the same
// turn); then submit, re-reading after each failed submit.
func makerTurn(p *plan, h history, title string) []intent {
	if p.Behaviour == BehaviourLoop {
		return []intent{p.read}
	}
	r := p.real
	applied, failed := map[string]int{}, map[string]int{}
	readOK, sentMalformed, failedSubmits, okReads, checkRuns := false, false, 0, 0, 0
	lastWasSubmit, retryAfterRead := false, false
	missingSent, missingReported, listed, mixedSent := false, false, false, false
	for _, c := range h.calls {
		if !c.argsValid {
			sentMalformed = true
			continue
		}
		if c.name == "submit" && c.refused() {
			failedSubmits++
		}
		if c.name == "list_files" {
			listed = true
		}
		if c.name == "run_checks" && c.hasResult {
			checkRuns++
		}
		k := p.identify(c.name, c.args)
		switch {
		case k == "read":
			if c.ok() {
				readOK = true
				okReads++
			}
		case k == "missing":
			missingSent = true
			missingReported = missingReported || strings.Contains(c.result, r.missingPath+": error:")
		case k == "mixed":
			mixedSent = true
		case k == "":
		case c.ok():
			applied[k]++
		case c.failed():
			failed[k]++
			if c.turn == h.lastTurn && failed[k] < 2 && !p.blockQuoted(k, c.result) {
				retryAfterRead = true
			}
		}
		if c.turn == h.lastTurn && c.name == "submit" {
			lastWasSubmit = true
		}
	}
	if p.Behaviour == BehaviourMalformedArgs && !sentMalformed {
		broken := strings.TrimSuffix(p.read.args, "}") // valid JSON minus its closing brace
		return []intent{{key: "malformed", name: "read_files", args: broken}}
	}
	if r != nil && r.missingPath != "" && !readOK {
		if !missingSent {
			return []intent{r.missingRead()}
		}
		if missingReported && !listed {
			return []intent{{key: "list", name: "list_files", args: "{}"}}
		}
	}
	if retryAfterRead || !readOK {
		return []intent{p.read}
	}
	if p.Behaviour == BehaviourAsk && !h.answered && !askRefused(h) {
		q := p.Question
		if q == "" {
			q = "The report leaves the intended behaviour open: which result is expected for " + title + "?"
		}
		return []intent{{key: "ask", name: "ask_human", args: mustJSON(map[string]string{"question": q})}}
	}
	edited := len(applied)+len(failed) > 0
	if r != nil && !edited {
		if r.redundantRead && okReads == 1 {
			return []intent{p.read}
		}
		if r.prose != "" && h.prose == 0 {
			return []intent{{key: "prose", args: r.prose}}
		}
	}
	wrongApplied := applied["wrong"] > applied["revert"]
	cycles := p.wrongCycles()
	if r != nil && r.wrongFirst {
		cycles = 1
	}
	unhelpful := failedSubmits
	late := p.Behaviour == BehaviourLateFix && (r == nil || !r.wrongFirst)
	if late {
		unhelpful += checkRuns
	}
	if cycles < 0 || unhelpful < cycles {
		if applied["wrong"] == 0 && failed["wrong"] < 2 {
			return append([]intent{p.wrong}, p.testsWithGuess(applied, failed)...)
		}
		if lastWasSubmit {
			return []intent{p.read}
		}
		if late && failedSubmits > 0 {
			// A model that was refused checks again rather than resubmitting the same change.
			return []intent{{key: "checks", name: "run_checks", args: "{}"}}
		}
		return []intent{submitIntent(fmt.Sprintf("First guess (try %d) for: %s", failedSubmits+1, title), p.addedTests)}
	}
	var edits []intent
	if wrongApplied && p.revert != nil && failed["revert"] < 2 {
		edits = append(edits, *p.revert)
	}
	fixing := false
	for _, f := range p.fixes {
		if applied[f.key] == 0 && failed[f.key] < 2 {
			if r != nil && failed[f.key] == 0 {
				if m, ok := r.mangled[f.key]; ok {
					f = m
				}
				if r.brokenJSON == f.key && !sentMalformed {
					f.args = brokenArgs(f.args)
				}
			}
			edits = append(edits, f)
			fixing = fixing || applied[f.key]+failed[f.key] == 0
		}
	}
	if r != nil && r.mixedTurn != nil && !mixedSent && fixing {
		edits = append([]intent{*r.mixedTurn}, edits...)
	}
	if len(edits) > 0 {
		return edits
	}
	if lastWasSubmit {
		return []intent{p.read}
	}
	return []intent{submitIntent("Fix for: "+title, p.addedTests)}
}

// askRefused reports an ask_human call answered with an error: no question is left.
func askRefused(h history) bool {
	for _, c := range h.calls {
		if c.name == "ask_human" && c.failed() {
			return true
		}
	}
	return false
}

// blockQuoted reports whether an edit_file refusal of fix k quotes the very lines the fix
// replaces, so a model copies them instead of reading the file again.
func (p *plan) blockQuoted(k, result string) bool {
	for i, f := range p.fixes {
		if f.key != k || f.name != "edit_file" {
			continue
		}
		block := closestBlock(result)
		old := p.fixEdit(i).hunk.OldText
		return block != "" && strings.TrimRight(block, "\n") == strings.TrimRight(old, "\n")
	}
	return false
}

// submitIntent is a submit with the summary and, when the fix added tests, their node ids.
func submitIntent(summary string, tests []string) intent {
	args := map[string]any{"summary": summary}
	if len(tests) > 0 {
		args["tests"] = tests
	}
	return intent{key: "submit", name: "submit", args: mustJSON(args)}
}
