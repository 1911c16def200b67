package scriptedmodel

import (
	"fmt"
	"path"
	"strings"
)

// Realism is how often a realistic scripted maker (Case.Realistic) makes each of the
// mistakes real models make. Every rate is a probability in [0, 1], drawn per ticket (or
// per edit, where said) from Options.Seed, the case and the mistake, so a run is
// reproducible and two seeds give two different nights.
//
// Where the rates come from:
//   - Aider's code editing leaderboard (aider.chat/docs/leaderboards, "Percent using
//     correct edit format", 133 Exercism tasks) has strong models send an edit that does
//     not apply on 0.8-10% of tasks (claude-3.5-sonnet 99.2%, gpt-4o-2024-05-13 96.2%,
//     o1-preview 93.2%, o1-mini 90.0% well formed). Our cases hold one to three edits, and
//     ticketd's own models are mid-tier, so MangleEdit is set above those figures (0.2 per
//     edit, an assumption) so that every night exercises the matching ladder.
//   - Trajectory studies of SWE-agent and OpenHands (Majgaonkar et al., arXiv 2511.00197:
//     the right files are found in 72-81% of trajectories; Graphectory, arXiv 2512.02393:
//     even successful runs re-read and backtrack, "unnecessarily prolonged trajectories")
//     describe wrong paths, redundant reads and mixed exploration turns without a per-call
//     rate we could copy: MissingPath 0.2, RedundantRead 0.3 and MixedTurn 0.3 are
//     assumptions in the range those studies describe.
//   - Prose instead of a tool call, and argument JSON a parser refuses, are the format
//     errors aider's feedback loop exists for; we found no per-call figure: Prose 0.15 and
//     BrokenJSON 0.1 per ticket are assumptions.
//   - WrongFirst (0.2) is how often a ticket the case would solve at once gets a first fix
//     that is wrong in behaviour (the partial fix of BehaviourWrongThenRight); an
//     assumption, kept modest because the by-difficulty mix already scripts it per case.
type Realism struct {
	MangleEdit    float64 // per edit: old_text mangled (indentation, whitespace, quotes, a line missing)
	MissingPath   float64 // the first read names a path that does not exist
	RedundantRead float64 // the files are read a second time before the first edit
	MixedTurn     float64 // the first edit turn also reads the lines it edits
	Prose         float64 // one answer in prose instead of a tool call, before the first edit
	BrokenJSON    float64 // one edit call whose arguments carry a trailing comma
	WrongFirst    float64 // a case that would solve at once fixes wrongly first
}

// DefaultRealism are the rates a realistic case uses when Options.Realism is zero.
var DefaultRealism = Realism{
	MangleEdit: 0.2, MissingPath: 0.2, RedundantRead: 0.3, MixedTurn: 0.3,
	Prose: 0.15, BrokenJSON: 0.1, WrongFirst: 0.2,
}

func (r Realism) check() error {
	for name, v := range map[string]float64{
		"MangleEdit": r.MangleEdit, "MissingPath": r.MissingPath, "RedundantRead": r.RedundantRead,
		"MixedTurn": r.MixedTurn, "Prose": r.Prose, "BrokenJSON": r.BrokenJSON, "WrongFirst": r.WrongFirst,
	} {
		if v < 0 || v > 1 {
			return fmt.Errorf("new scripted model: Realism.%s %.3f must be within [0, 1]", name, v)
		}
	}
	return nil
}

// realism is a realistic case's decisions, all drawn once at New: the model is stateless,
// so the same conversation always gets the same answer.
type realism struct {
	missingPath   string            // "" unless the first read names this path that does not exist
	redundantRead bool              // read the files again before editing
	mixedTurn     *intent           // a line-range read sent with the first edits
	prose         string            // "" unless one answer is this prose
	brokenJSON    string            // key of the edit sent once with broken arguments
	wrongFirst    bool              // fix wrongly first, as BehaviourWrongThenRight
	mangled       map[string]intent // fix key -> its first, mangled try
}

// draw is a reproducible uniform [0, 1) value for one decision of one case.
func draw(seed int64, match, what string) float64 {
	return unitFloat(uint64(seed) ^ fnv64([]byte(match+"\x00"+what)))
}

func compileRealism(p *plan, seed int64, r Realism) *realism {
	d := func(what string) float64 { return draw(seed, p.Match, what) }
	out := &realism{mangled: map[string]intent{}}
	if len(p.readPaths) > 0 && d("missing_path") < r.MissingPath {
		out.missingPath = missingPath(p.readPaths[0])
	}
	out.redundantRead = d("redundant_read") < r.RedundantRead
	if d("prose") < r.Prose {
		out.prose = fmt.Sprintf("I found the cause in %s. I will now change it so that the problem no longer occurs.", strings.Join(p.allPaths, ", "))
	}
	out.wrongFirst = p.Behaviour == BehaviourSolve && d("wrong_first") < r.WrongFirst
	var edits []intent
	for i, f := range p.fixes {
		if f.name != "edit_file" {
			continue
		}
		edits = append(edits, f)
		if u := d("mangle:" + f.key); u < r.MangleEdit {
			if m, ok := mangle(p.fixEdit(i), int(u/r.MangleEdit*float64(len(mangleKinds)))); ok {
				m.key = f.key
				out.mangled[f.key] = m
			}
		}
	}
	if len(edits) > 0 && d("broken_json") < r.BrokenJSON {
		out.brokenJSON = edits[0].key
	}
	if len(edits) > 0 && d("mixed_turn") < r.MixedTurn {
		e := p.fixEdit(0)
		start := max(e.hunk.OldStart-2, 1)
		mixed := intent{key: "mixed", name: "read_files", args: mustJSON(map[string]any{
			"paths": []any{map[string]any{"path": e.path, "start_line": start, "end_line": start + strings.Count(e.hunk.OldText, "\n") + 4}},
		})}
		out.mixedTurn = &mixed
	}
	return out
}

// missingRead is the first read of a case that guesses a path wrong.
func (r *realism) missingRead() intent {
	return intent{key: "missing", name: "read_files", args: mustJSON(map[string][]string{"paths": {r.missingPath}})}
}

// missingPath is the path a model guesses wrong: the file in a src/ folder that is not
// there, or at the root when it lives deeper.
func missingPath(p string) string {
	if dir := path.Dir(p); dir != "." {
		return path.Base(p)
	}
	return "src/" + p
}

// fixEdit is the i-th edit_file fix with the hunk it applies.
type fixEdit struct {
	path string
	hunk Hunk
}

func (p *plan) fixEdit(i int) fixEdit {
	n := 0
	for _, f := range p.files {
		if f.New {
			n++
			continue
		}
		for _, h := range f.Hunks {
			if n == i {
				return fixEdit{path: f.Path, hunk: h}
			}
			n++
		}
	}
	return fixEdit{}
}

// mangleKinds are the ways a model misquotes the text it replaces, in the order the kind
// drawn falls back along when a hunk offers no place for it.
var mangleKinds = []string{"indent", "trailing_space", "whitespace", "quotes", "line_missing"}

// mangle returns edit e with its old_text misquoted the way kind (an index in mangleKinds)
// says; false when no kind fits the hunk.
func mangle(e fixEdit, kind int) (intent, bool) {
	old, nw := e.hunk.OldText, e.hunk.NewText
	for k := range mangleKinds {
		switch mangleKinds[(kind+k)%len(mangleKinds)] {
		case "indent":
			// The snippet quoted four spaces deeper, old and new alike.
			return editIntent(e.path, indentBy(old, "    "), indentBy(nw, "    ")), true
		case "trailing_space":
			return editIntent(e.path, strings.ReplaceAll(old, "\n", "  \n"), nw), true
		case "whitespace":
			if m, ok := doubleASpace(old); ok {
				return editIntent(e.path, m, nw), true
			}
		case "quotes":
			if strings.Contains(old, "'") {
				return editIntent(e.path, strings.Replace(old, "'", "\u2019", 1), nw), true
			}
		case "line_missing":
			lines := strings.SplitAfter(old, "\n")
			if lines[len(lines)-1] == "" {
				lines = lines[:len(lines)-1]
			}
			if len(lines) >= 4 {
				mid := len(lines) / 2
				return editIntent(e.path, strings.Join(lines[:mid], "")+strings.Join(lines[mid+1:], ""), nw), true
			}
		}
	}
	return intent{}, false
}

func editIntent(p, old, nw string) intent {
	return intent{name: "edit_file", args: mustJSON(map[string]string{"path": p, "old_text": old, "new_text": nw})}
}

func indentBy(s, pre string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != "" {
			lines[i] = pre + l
		}
	}
	return strings.Join(lines, "")
}

// doubleASpace widens the first space between two words of a line of code.
func doubleASpace(s string) (string, bool) {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		body := strings.TrimLeft(l, " \t")
		if j := strings.Index(body, " "); j > 0 && strings.TrimSpace(body[j:]) != "" {
			lines[i] = l[:len(l)-len(body)] + body[:j] + " " + body[j:]
			return strings.Join(lines, ""), true
		}
	}
	return "", false
}

// brokenArgs is args with a trailing comma before its closing brace, the JSON slip models
// make most.
func brokenArgs(args string) string {
	return strings.TrimSuffix(args, "}") + ",}"
}

// closestBlock is the block of real file lines an edit_file refusal quotes, "" if it
// quotes none: the lines after the line announcing the closest block, up to the notes
// or the advice that follow them. A model copies its next old_text from there.
func closestBlock(result string) string {
	_, rest, ok := strings.Cut(result, "The closest block is lines ")
	if !ok {
		return ""
	}
	_, rest, ok = strings.Cut(rest, ":\n")
	if !ok {
		return ""
	}
	var b strings.Builder
	for l := range strings.SplitSeq(rest, "\n") {
		if strings.HasPrefix(l, "How your old_text differs") || strings.HasPrefix(l, "Copy old_text from") || strings.HasPrefix(l, "(block continues") {
			break
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}
