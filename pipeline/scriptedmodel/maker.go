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
	// offered are the tools the request offers; nil when it names none (a test's bare
	// request), read as every tool.
	offered map[string]bool
}

// offers says whether the request offers tool name: a model calls no tool it was not given.
func (h history) offers(name string) bool { return h.offered == nil || h.offered[name] }

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
// turn); then, when the last submit or run_checks names lint findings in a file it wrote
// whole, it mends them (lintFixes); then submit, re-reading after each failed submit.
func makerTurn(p *plan, h history, title string) []intent {
	if p.Behaviour == BehaviourLoop {
		return []intent{p.read}
	}
	r := p.real
	st := p.scan(h)
	if p.Behaviour == BehaviourMalformedArgs && !st.sentMalformed {
		broken := strings.TrimSuffix(p.read.args, "}") // valid JSON minus its closing brace
		return []intent{{key: "malformed", name: "read_files", args: broken}}
	}
	if next := r.findFile(st); next != nil {
		return next
	}
	if st.retryAfterRead || !st.readOK {
		return []intent{p.read}
	}
	if p.Behaviour == BehaviourAsk && h.offers("ask_human") && !h.answered && !askRefused(h) {
		return []intent{p.question(title)}
	}
	if next := r.hesitate(st, h, p.read); next != nil {
		return next
	}
	if next := p.guess(st, title); next != nil {
		return next
	}
	wrongApplied := st.applied["wrong"] > st.applied["revert"]
	if edits := p.fixEdits(st, wrongApplied); len(edits) > 0 {
		return edits
	}
	if mends := lintFixes(h); len(mends) > 0 {
		return mends
	}
	if st.lastWasSubmit {
		return []intent{p.read}
	}
	return []intent{submitIntent("Fix for: "+title, p.addedTests)}
}

// question is the ask_human call of a maker that asks (BehaviourAsk).
func (p *plan) question(title string) intent {
	q := p.Question
	if q == "" {
		q = "The report leaves the intended behaviour open: which result is expected for " + title + "?"
	}
	return intent{key: "ask", name: "ask_human", args: mustJSON(map[string]string{"question": q})}
}

// hesitate is what the realism does before its first edit: read the file again (read), or
// answer once in prose without a tool; nil when it does neither.
func (r *realism) hesitate(st seen, h history, read intent) []intent {
	if r == nil || len(st.applied)+len(st.failed) > 0 {
		return nil
	}
	if r.redundantRead && st.okReads == 1 {
		return []intent{read}
	}
	if r.prose != "" && h.prose == 0 {
		return []intent{{key: "prose", args: r.prose}}
	}
	return nil
}

// findFile is the realism's search for the bug's file: a read of a path that does not exist,
// then list_files once the error came back; nil once the file was read, or without realism.
func (r *realism) findFile(st seen) []intent {
	if r == nil || r.missingPath == "" || st.readOK {
		return nil
	}
	if !st.missingSent {
		return []intent{r.missingRead()}
	}
	if st.missingReported && !st.listed {
		return []intent{{key: "list", name: "list_files", args: "{}"}}
	}
	return nil
}

// guess is the turn of a maker still in its wrong-guess cycles (see wrongCycles): the wrong
// edit, then a submit of it (or, late_fix, run_checks after a refusal); nil once the cycles
// are spent and the right fix comes.
func (p *plan) guess(st seen, title string) []intent {
	r := p.real
	cycles := p.wrongCycles()
	if r != nil && r.wrongFirst {
		cycles = 1
	}
	unhelpful := st.failedSubmits
	late := p.Behaviour == BehaviourLateFix && (r == nil || !r.wrongFirst)
	if late {
		unhelpful += st.checkRuns
	}
	if cycles >= 0 && unhelpful >= cycles {
		return nil
	}
	if st.applied["wrong"] == 0 && st.failed["wrong"] < 2 {
		return append([]intent{p.wrong}, p.testsWithGuess(st.applied, st.failed)...)
	}
	if st.lastWasSubmit {
		return []intent{p.read}
	}
	if late && st.failedSubmits > 0 {
		// A model that was refused checks again rather than resubmitting the same change.
		return []intent{{key: "checks", name: "run_checks", args: "{}"}}
	}
	return []intent{submitIntent(fmt.Sprintf("First guess (try %d) for: %s", st.failedSubmits+1, title), p.addedTests)}
}

// firstTry is fix edit f as the realism sends it the first time: mangled as a real model
// mangles it, or with broken JSON arguments (once per attempt).
func (r *realism) firstTry(f intent, sentMalformed bool) intent {
	if r == nil {
		return f
	}
	if m, ok := r.mangled[f.key]; ok {
		f = m
	}
	if r.brokenJSON == f.key && !sentMalformed {
		f.args = brokenArgs(f.args)
	}
	return f
}

// seen is what the maker's earlier calls tell it, as makerTurn reads them.
type seen struct {
	applied, failed map[string]int // edits by key that applied, and that failed
	readOK          bool           // a read of the bug's file succeeded
	sentMalformed   bool           // a call with arguments that are not JSON was sent
	failedSubmits   int
	okReads         int
	checkRuns       int // run_checks calls answered
	lastWasSubmit   bool
	retryAfterRead  bool // an edit of the last turn failed on text the model must read again
	missingSent     bool // the read of a missing path (realism) was sent
	missingReported bool // and answered with its error
	listed          bool // list_files was called
	mixedSent       bool // the realism's mixed turn was sent
}

// scan reads the maker's calls so far.
func (p *plan) scan(h history) seen {
	st := seen{applied: map[string]int{}, failed: map[string]int{}}
	for _, c := range h.calls {
		if !c.argsValid {
			st.sentMalformed = true
			continue
		}
		switch c.name {
		case "submit":
			if c.refused() {
				st.failedSubmits++
			}
			st.lastWasSubmit = st.lastWasSubmit || c.turn == h.lastTurn
		case "list_files":
			st.listed = true
		case "run_checks":
			if c.hasResult {
				st.checkRuns++
			}
		}
		p.scanIntent(&st, h, c)
	}
	return st
}

// scanIntent counts one well-formed call by what it was meant to do (plan.identify).
func (p *plan) scanIntent(st *seen, h history, c pastCall) {
	k := p.identify(c.name, c.args)
	switch {
	case k == "read":
		if c.ok() {
			st.readOK = true
			st.okReads++
		}
	case k == "missing":
		st.missingSent = true
		st.missingReported = st.missingReported || strings.Contains(c.result, p.real.missingPath+": error:")
	case k == "mixed":
		st.mixedSent = true
	case k == "":
	case c.ok():
		st.applied[k]++
	case c.failed():
		st.failed[k]++
		if c.turn == h.lastTurn && st.failed[k] < 2 && !p.blockQuoted(k, c.result) {
			st.retryAfterRead = true
		}
	}
}

// fixEdits are the edits of the right fix still to make (the revert of an applied wrong
// guess first), each as the realism mangles or breaks it on its first try; none when every
// edit applied or failed twice.
func (p *plan) fixEdits(st seen, wrongApplied bool) []intent {
	r := p.real
	var edits []intent
	if wrongApplied && p.revert != nil && st.failed["revert"] < 2 {
		edits = append(edits, *p.revert)
	}
	fixing := false
	for _, f := range p.fixes {
		if st.applied[f.key] == 0 && st.failed[f.key] < 2 {
			if st.failed[f.key] == 0 {
				f = r.firstTry(f, st.sentMalformed)
			}
			edits = append(edits, f)
			fixing = fixing || st.applied[f.key]+st.failed[f.key] == 0
		}
	}
	if r != nil && r.mixedTurn != nil && !st.mixedSent && fixing {
		edits = append([]intent{*r.mixedTurn}, edits...)
	}
	return edits
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
