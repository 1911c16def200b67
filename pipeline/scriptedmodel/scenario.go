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
	// BehaviourWrongThenRight first inserts a leftover merge marker (a syntax error), submits,
	// and once that submit is answered (not accepted) reverts it, applies the real hunks and
	// submits again.
	BehaviourWrongThenRight Behaviour = "wrong_then_right"
	// BehaviourNever inserts the wrong edit and then alternates re-reading and submitting;
	// it never applies the fix, so only a step limit or loop guard ends it.
	BehaviourNever Behaviour = "never"
	// BehaviourMalformedArgs sends one tool call with invalid JSON arguments first, then
	// behaves like BehaviourSolve.
	BehaviourMalformedArgs Behaviour = "malformed_args"
	// BehaviourLoop repeats the identical read_files call forever.
	BehaviourLoop Behaviour = "loop"
	// BehaviourLateFix keeps the wrong edit through LateAfter failed submits, then fixes.
	BehaviourLateFix Behaviour = "late_fix"
)

// WrongEditMarker is the line the wrong first guess inserts: a leftover merge marker, a
// syntax error in Python, so any test run fails.
const WrongEditMarker = "<<<<<<< ticketd scripted first guess"

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
	// LateAfter is the number of failed submits before the fix under BehaviourLateFix;
	// 0 means 2.
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
	// Latency is added to Options.Latency for every answer about this ticket (a slow case).
	Latency time.Duration
}

// intent is one tool call the maker may make; key names its role in the plan.
type intent struct {
	key  string // "fix:N", "wrong", "revert"
	name string
	args string
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
	// addedTests are the pytest node ids of test functions the patch adds in test files,
	// which the maker names on submit as a model that wrote them would.
	addedTests []string
}

func compileCase(i int, c Case) (*plan, error) {
	name := fmt.Sprintf("case %d (match %q)", i, c.Match)
	switch c.Behaviour {
	case "":
		c.Behaviour = BehaviourSolve
	case BehaviourSolve, BehaviourWrongThenRight, BehaviourNever, BehaviourMalformedArgs, BehaviourLoop, BehaviourLateFix:
	default:
		return nil, fmt.Errorf("%s: unknown behaviour %q (want solve, wrong_then_right, never, malformed_args, loop or late_fix)", name, c.Behaviour)
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
	return p, nil
}

// wrongGuess builds the deliberately broken first edit and its revert: the marker line
// inserted in the first hunk's old text just before the first line the fix changes (or, for
// a patch that only adds files, a new file starting with the marker, which the real
// write_file later overwrites). The changed line is code, so the marker is a syntax error
// there; at the top of the hunk it could fall inside a docstring and break nothing.
func wrongGuess(files []FileEdit) (intent, *intent) {
	for _, f := range files {
		if f.New {
			continue
		}
		h := f.Hunks[0]
		old := h.OldText
		oldLines := strings.SplitAfter(old, "\n")
		newLines := strings.SplitAfter(h.NewText, "\n")
		k := 0
		for k < len(oldLines) && k < len(newLines) && oldLines[k] == newLines[k] {
			k++
		}
		broken := strings.Join(oldLines[:k], "") + WrongEditMarker + "\n" + strings.Join(oldLines[k:], "")
		revert := intent{key: "revert", name: "edit_file",
			args: mustJSON(map[string]string{"path": f.Path, "old_text": broken, "new_text": old})}
		return intent{key: "wrong", name: "edit_file",
			args: mustJSON(map[string]string{"path": f.Path, "old_text": old, "new_text": broken})}, &revert
	}
	f := files[0]
	return intent{key: "wrong", name: "write_file",
		args: mustJSON(map[string]string{"path": f.Path, "content": WrongEditMarker + "\n" + f.Content()})}, nil
}

// wrongCycles is how many failed submits the behaviour makes before it fixes; -1 is never.
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
