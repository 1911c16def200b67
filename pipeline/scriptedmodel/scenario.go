package scriptedmodel

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
)

// Behaviour is how the scripted maker approaches a ticket.
type Behaviour string

// The maker behaviours. The empty Behaviour means BehaviourSolve.
const (
	// BehaviourSolve reads the patch's files, applies every hunk in one turn, submits.
	BehaviourSolve Behaviour = "solve"
	// BehaviourWrongThenRight first applies a wrong guess (see WrongGuess) together with the
	// patch's tests, as a model writes its regression test beside its first fix, submits,
	// and once that submit is answered (not accepted) reverts the guess, applies the real
	// hunks and submits again.
	BehaviourWrongThenRight Behaviour = "wrong_then_right"
	// BehaviourNever applies the wrong guess (with the patch's tests) and then alternates
	// re-reading and submitting the same change; it never applies the fix, so a guard
	// (the same refusal twice, the loop guard) or a step limit ends it.
	BehaviourNever Behaviour = "never"
	// BehaviourMalformedArgs sends one tool call with invalid JSON arguments first, then
	// behaves like BehaviourSolve.
	BehaviourMalformedArgs Behaviour = "malformed_args"
	// BehaviourLoop repeats the identical read_files call forever.
	BehaviourLoop Behaviour = "loop"
	// BehaviourAsk reads the patch's files, then asks the human Case.Question with
	// ask_human, as a model does when the report leaves the intended behaviour open. Once
	// the ticket shows the question answered, or ask_human is refused (no question left),
	// it behaves like BehaviourSolve.
	BehaviourAsk Behaviour = "ask"
	// BehaviourLateFix keeps the wrong guess (with the patch's tests) through LateAfter
	// unhelpful steps — a refused submit, then run_checks calls after re-reading, never the
	// same submit twice — then fixes.
	BehaviourLateFix Behaviour = "late_fix"
)

// Case is one ticket the scripted model knows how to answer.
type Case struct {
	// Match is a substring of the ticket text (the user messages). The first case whose
	// Match occurs answers. A case with an empty Match is the default for tickets no other
	// case matches; at most one is allowed.
	Match string
	// Patch is the intended fix as a unified diff (git format; new files via /dev/null).
	Patch string
	// Behaviour of the maker; empty means BehaviourSolve.
	Behaviour Behaviour
	// LateAfter is the number of unhelpful steps (refused submits and run_checks calls)
	// before the fix under BehaviourLateFix; 0 means 2.
	LateAfter int
	// CheckerBlocksOnce makes the checker report one blocker on its first review of this
	// ticket, then none.
	CheckerBlocksOnce bool
	// JudgeFailsOnce makes the judge fail its first verdict on this ticket, then pass.
	JudgeFailsOnce bool
	// CheckerBlocksAlways makes the checker report the blocker on every review, and a new
	// minor remark from its second review on.
	CheckerBlocksAlways bool
	// CheckerInventsEvidence adds to every review a blocker whose evidence is in no file.
	CheckerInventsEvidence bool
	// JudgeFailsAlways makes every verdict fail.
	JudgeFailsAlways bool
	// ReviewersDisagree makes a security or performance reviewer contradict the checker's
	// blocker (CheckerBlocksOnce or CheckerBlocksAlways) on the line that blocker quotes, as
	// a minor remark that the line needs no further test.
	ReviewersDisagree bool
	// Question is what BehaviourAsk asks; empty means a question naming the ticket.
	Question string
	// Tamper is BehaviourTamper's move (one of TamperMoves); empty means TamperRewrite.
	Tamper string
	// Latency is added to Options.Latency for every answer about this ticket (a slow case).
	Latency time.Duration
	// Realistic makes the maker err as real models do, on top of its Behaviour, at the
	// rates of Options.Realism (see Realism): a mangled old_text, a path that does not
	// exist, a redundant read, a turn mixing reads and edits, prose instead of a tool
	// call, broken argument JSON, a first fix wrong in behaviour. It reacts to the tools'
	// real answers: it copies the block an edit refusal quotes, lists the files after a
	// path is not found.
	Realistic bool
}

// intent is one tool call the maker may make; key names its role in the plan.
type intent struct {
	key  string // "fix:N", "wrong", "revert"
	name string
	args string
	test bool // a fix intent that writes a test file: made with the wrong guess too
}

// plan is a Case compiled once at New: the tool calls its behaviour uses.
type plan struct {
	Case
	files     []FileEdit
	allPaths  []string
	readPaths []string // files that exist before the patch
	read      intent
	fixes     []intent
	wrong     intent
	revert    *intent // nil when the wrong guess is a write_file the fix overwrites
	// real is the realistic maker's drawn mistakes; nil unless Case.Realistic.
	real *realism
	// addedTests are the pytest node ids of test functions the patch adds in test files,
	// which the maker names on submit as a model that wrote them would.
	addedTests []string
}

func compileCase(i int, c Case) (*plan, error) {
	name := fmt.Sprintf("case %d (match %q)", i, c.Match)
	switch c.Behaviour {
	case "":
		c.Behaviour = BehaviourSolve
	case BehaviourSolve, BehaviourWrongThenRight, BehaviourNever, BehaviourMalformedArgs, BehaviourLoop, BehaviourLateFix, BehaviourAsk, BehaviourTamper:
	default:
		return nil, fmt.Errorf("%s: unknown behaviour %q (want solve, wrong_then_right, never, malformed_args, loop, late_fix, ask or tamper)", name, c.Behaviour)
	}
	if c.LateAfter < 0 {
		return nil, fmt.Errorf("%s: LateAfter %d is negative", name, c.LateAfter)
	}
	if c.LateAfter == 0 {
		c.LateAfter = 2
	}
	files, err := ParsePatch(c.Patch)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if c.Behaviour == BehaviourTamper {
		if c.Tamper == "" {
			c.Tamper = TamperRewrite
		}
		if files, err = tamperEdits(files, c.Tamper); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	p := &plan{Case: c, files: files}
	for _, f := range files {
		if f.Deleted {
			return nil, fmt.Errorf("%s: the patch deletes %s, which the maker's tools cannot do", name, f.Path)
		}
		p.allPaths = append(p.allPaths, f.Path)
		if f.New {
			p.fixes = append(p.fixes, intent{
				key: fmt.Sprintf("fix:%d", len(p.fixes)), name: "write_file",
				args: mustJSON(map[string]string{"path": f.Path, "content": f.Content()}),
				test: isTestFile(f.Path),
			})
			continue
		}
		p.readPaths = append(p.readPaths, f.Path)
		seen := map[string]bool{}
		for j, h := range f.Hunks {
			if strings.TrimSpace(h.OldText) == "" {
				return nil, fmt.Errorf("%s: %s hunk %d has no context or removed lines, so edit_file cannot locate it", name, f.Path, j+1)
			}
			if seen[h.OldText] {
				return nil, fmt.Errorf("%s: %s hunks share the same old text, so edit_file cannot tell them apart", name, f.Path)
			}
			seen[h.OldText] = true
			p.fixes = append(p.fixes, intent{
				key: fmt.Sprintf("fix:%d", len(p.fixes)), name: "edit_file",
				args: mustJSON(map[string]string{"path": f.Path, "old_text": h.OldText, "new_text": h.NewText}),
				test: isTestFile(f.Path),
			})
		}
	}
	readPaths := p.readPaths
	if len(readPaths) == 0 {
		readPaths = p.allPaths
	}
	p.addedTests = addedTests(files)
	p.read = intent{key: "read", name: "read_files", args: mustJSON(map[string][]string{"paths": readPaths})}
	p.wrong, p.revert = wrongGuess(files)
	if isTestFile(guess(files).file.Path) {
		// The guess itself is in a test file: its tests are not written beside it.
		for i := range p.fixes {
			p.fixes[i].test = false
		}
	}
	return p, nil
}

// testsWithGuess are the patch's test edits not yet made, which the maker makes with its
// wrong guess: a model writes its regression test beside its first fix, right or wrong.
func (p *plan) testsWithGuess(applied, failed map[string]int) []intent {
	var out []intent
	for _, f := range p.fixes {
		if f.test && applied[f.key] == 0 && failed[f.key] < 2 {
			out = append(out, f)
		}
	}
	return out
}

// wrongGuess builds the deliberately wrong first edit and its revert: one hunk of the fix,
// applied without its last line of code (see WrongGuess). The other hunks are left out too,
// so the guess is a partial fix: a real behavioural bug the case's tests catch, never a
// marker that a docstring or comment could swallow.
func wrongGuess(files []FileEdit) (intent, *intent) {
	g := guess(files)
	if g.file.New {
		return intent{key: "wrong", name: "write_file",
			args: mustJSON(map[string]string{"path": g.file.Path, "content": g.broken})}, nil
	}
	revert := intent{key: "revert", name: "edit_file",
		args: mustJSON(map[string]string{"path": g.file.Path, "old_text": g.broken, "new_text": g.old})}
	return intent{key: "wrong", name: "edit_file",
		args: mustJSON(map[string]string{"path": g.file.Path, "old_text": g.old, "new_text": g.broken})}, &revert
}

type wrongEdit struct {
	file        FileEdit
	old, broken string // the text replaced, and what the wrong guess puts there
}

// WrongGuess returns the scripted maker's wrong first guess at a patch: the path it edits,
// the text it replaces and what it writes instead. The guess is the last hunk that adds
// code, applied without its last added line of code (a line that is neither blank, nor a
// comment, nor inside a docstring); a hunk that adds only that line gets it one line late.
// The bench verifies that every case's wrong guess fails its hidden tests.
func WrongGuess(patch string) (path, old, broken string, err error) {
	files, err := ParsePatch(patch)
	if err != nil {
		return "", "", "", err
	}
	g := guess(files)
	return g.file.Path, g.old, g.broken, nil
}

func guess(files []FileEdit) wrongEdit {
	// Project code first: a guess that only breaks a test the fix adds is no guess at the bug.
	var code, tests []FileEdit
	for _, f := range files {
		if isTestFile(f.Path) {
			tests = append(tests, f)
		} else {
			code = append(code, f)
		}
	}
	if g := guessIn(code); g != nil {
		return *g
	}
	if g := guessIn(tests); g != nil {
		return *g
	}
	// A patch that adds no code (only deletes): the first file, first hunk, left out
	// half-way — its removed lines stay, its other lines go.
	f := files[0]
	h := f.Hunks[0]
	return wrongEdit{file: f, old: h.OldText, broken: h.OldText + h.NewText}
}

func isTestFile(p string) bool {
	base := path.Base(p)
	return strings.HasPrefix(p, "tests/") || strings.HasPrefix(p, "test/") || strings.Contains(p, "/tests/") ||
		strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py") || base == "conftest.py"
}

func guessIn(files []FileEdit) *wrongEdit {
	var best *wrongEdit
	for _, f := range files {
		for _, h := range f.Hunks {
			newLines := strings.SplitAfter(h.NewText, "\n")
			drop := lastAddedCode(h, newLines)
			if drop < 0 {
				continue
			}
			broken := strings.Join(newLines[:drop], "") + strings.Join(newLines[drop+1:], "")
			if gone := lastRemovedCode(h); gone != "" {
				// A replaced line: keep the old one where it still decides — before a new
				// return (it returns first), after a new assignment (it overwrites it).
				if isExit(gone) {
					broken = strings.Join(newLines[:drop], "") + gone + strings.Join(newLines[drop:], "")
				} else {
					broken = strings.Join(newLines[:drop+1], "") + gone + strings.Join(newLines[drop+1:], "")
				}
			}
			if r := lastRegionOnly(h); r != "" {
				// Several changed regions: apply only the last; the cause usually sits in an
				// earlier one (the last is often the call site of what the fix changed).
				broken = r
			}
			if broken == h.OldText {
				// The hunk adds only this line: add it one line late instead.
				moved := slices.Clone(newLines)
				if drop+1 < len(moved) && moved[drop+1] != "" {
					moved[drop], moved[drop+1] = moved[drop+1], moved[drop]
				} else if drop > 0 {
					moved[drop], moved[drop-1] = moved[drop-1], moved[drop]
				}
				broken = strings.Join(moved, "")
			}
			old := h.OldText
			if f.New {
				old, broken = "", strings.Replace(f.Content(), h.NewText, broken, 1)
			}
			best = &wrongEdit{file: f, old: old, broken: broken}
		}
	}
	return best
}

// lastRegionOnly returns the hunk's old text with only its last region of changed lines
// applied, when the hunk has two or more regions that change code; "" otherwise.
func lastRegionOnly(h Hunk) string {
	oldLines := strings.SplitAfter(h.OldText, "\n")
	newLines := strings.SplitAfter(h.NewText, "\n")
	pairs := append(contextPairs(oldLines, newLines), linePair{len(oldLines), len(newLines)})
	type region struct{ o0, o1, n0, n1 int }
	var regions []region
	po, pn := 0, 0
	for _, p := range pairs {
		if p.o > po || p.n > pn {
			if hasCode(oldLines[po:p.o]) || hasCode(newLines[pn:p.n]) {
				regions = append(regions, region{po, p.o, pn, p.n})
			}
		}
		po, pn = p.o+1, p.n+1
	}
	if len(regions) < 2 {
		return ""
	}
	last := regions[len(regions)-1]
	return strings.Join(oldLines[:last.o0], "") + strings.Join(newLines[last.n0:last.n1], "") + strings.Join(oldLines[last.o1:], "")
}

// linePair is an old line and a new line that are the same context line of a hunk.
type linePair struct{ o, n int }

// contextPairs pairs equal lines of a hunk's old and new text in order, greedily: the
// context lines; whatever is between two pairs was changed.
func contextPairs(oldLines, newLines []string) []linePair {
	var pairs []linePair
	i := 0
	for j, l := range newLines {
		if l == "" {
			continue
		}
		k := i
		for k < len(oldLines) && oldLines[k] != l {
			k++
		}
		if k < len(oldLines) {
			pairs = append(pairs, linePair{k, j})
			i = k + 1
		}
	}
	return pairs
}

func hasCode(lines []string) bool {
	for _, l := range lines {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			return true
		}
	}
	return false
}

// isExit reports a line that leaves its block, so that what follows it never runs.
func isExit(line string) bool {
	t := strings.TrimSpace(line)
	for _, kw := range []string{"return", "raise", "break", "continue"} {
		if t == kw || strings.HasPrefix(t, kw+" ") || strings.HasPrefix(t, kw+"(") {
			return true
		}
	}
	return false
}

// lastRemovedCode is the hunk's last removed line of code (with its newline), "" if none.
func lastRemovedCode(h Hunk) string {
	oldLines := strings.SplitAfter(h.OldText, "\n")
	newLines := strings.SplitAfter(h.NewText, "\n")
	kept := make([]bool, len(oldLines))
	for _, p := range contextPairs(oldLines, newLines) {
		kept[p.o] = true
	}
	last := ""
	for k, l := range oldLines {
		t := strings.TrimSpace(l)
		if !kept[k] && t != "" && !strings.HasPrefix(t, "#") && !strings.Contains(t, `"""`) && !strings.Contains(t, "'''") {
			last = l
			if !strings.HasSuffix(last, "\n") {
				last += "\n"
			}
		}
	}
	return last
}

// addedFlags marks which of a hunk's new lines are additions, pairing equal lines of the two
// sides in order.
func addedFlags(h Hunk, newLines []string) []bool {
	added := make([]bool, len(newLines))
	oldLines := strings.SplitAfter(h.OldText, "\n")
	i := 0
	for j, l := range newLines {
		if l == "" {
			continue
		}
		k := i
		for k < len(oldLines) && oldLines[k] != l {
			k++
		}
		if k < len(oldLines) {
			i = k + 1
		} else {
			added[j] = true
		}
	}
	return added
}

// lastAddedCode is the index in newLines of the hunk's last added line of code, -1 if none.
// Docstrings are tracked from the hunk's first line, which is good enough for the
// three-line context git gives.
func lastAddedCode(h Hunk, newLines []string) int {
	added := addedFlags(h, newLines)
	inDoc := false
	last := -1
	for j, l := range newLines {
		t := strings.TrimSpace(l)
		quotes := strings.Count(t, `"""`) + strings.Count(t, "'''")
		wasDoc := inDoc
		if quotes%2 == 1 {
			inDoc = !inDoc
		}
		if !added[j] || t == "" || strings.HasPrefix(t, "#") || wasDoc || quotes > 0 {
			continue
		}
		last = j
	}
	return last
}

// wrongCycles is how many unhelpful steps (refused submits; for late_fix also run_checks
// calls) the behaviour makes before it fixes; -1 is never.
func (p *plan) wrongCycles() int {
	switch p.Behaviour {
	case BehaviourWrongThenRight:
		return 1
	case BehaviourLateFix:
		return p.LateAfter
	case BehaviourNever:
		return -1
	}
	return 0
}

// identify names the intent a past tool call was, by name and JSON-equal arguments, so a
// client that re-encodes arguments is still recognised.
func (p *plan) identify(name, args string) string {
	cands := append([]intent{p.read, p.wrong}, p.fixes...)
	if p.revert != nil {
		cands = append(cands, *p.revert)
	}
	if r := p.real; r != nil {
		for _, m := range r.mangled {
			cands = append(cands, m)
		}
		if r.missingPath != "" {
			cands = append(cands, r.missingRead())
		}
		if r.mixedTurn != nil {
			cands = append(cands, *r.mixedTurn)
		}
	}
	for _, c := range cands {
		if c.name == name && jsonEqual(c.args, args) {
			return c.key
		}
	}
	return ""
}

func jsonEqual(a, b string) bool {
	if a == b {
		return true
	}
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return mustJSON(x) == mustJSON(y)
}

// mustJSON marshals values built from strings, slices and maps, which cannot fail.
func mustJSON(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // keep "<<<<<<<" readable in tool arguments
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("scriptedmodel: marshal %T: %v", v, err))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// addedTests lists "path::test_name" for each top-level `def test_...` line a patch adds to a
// file named test_*.py or *_test.py.
func addedTests(files []FileEdit) []string {
	var out []string
	for _, f := range files {
		base := path.Base(f.Path)
		if !strings.HasSuffix(base, ".py") || !(strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py")) {
			continue
		}
		for _, h := range f.Hunks {
			old := strings.Split(h.OldText, "\n")
			for _, l := range strings.Split(h.NewText, "\n") {
				rest, ok := strings.CutPrefix(l, "def test")
				if !ok || slices.Contains(old, l) {
					continue
				}
				name, _, _ := strings.Cut("test"+rest, "(")
				out = append(out, f.Path+"::"+name)
			}
		}
	}
	return out
}
