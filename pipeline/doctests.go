package pipeline

import (
	"context"
	"path"
	"strings"
)

// A doctest in a module of the code under test (pytest's --doctest-modules) is a test that
// lives in the code: the test view cannot set it to its base version without setting the
// code back too, so it runs as the change left it. A change that edits such a doctest's
// examples or expected output has rewritten a test: the doctest is never its evidence, and
// one the base passed counts as weakened (kept for a human, as for any rewritten test), since
// its base version never ran against the change.

// MaxDoctestRefusals bounds the submits sent back because their only weakened tests are
// doctests in the code that the change edits. Many projects write a regression test as a
// doctest line in the function's docstring (tabulate, jaraco.functools); a maker that does
// so gets one answer saying why it cannot count and where to put the test instead. The
// next such submit ends the attempt for a human, as any other weakened test does.
const MaxDoctestRefusals = 1

// refuseEditedDoctests answers a submit whose only weakened tests are edited doctests
// (gate.editedDoctests): the change goes back to the maker with the reason and the way out.
func (a *attempt) refuseEditedDoctests(gate Gate) *toolResult {
	a.doctestRefusals++
	a.jr.note("submit %d: refused: it edits doctests in the code that the base passed (%s); asked to leave them as they were and put the regression test in a test module",
		a.submits, clip(strings.Join(gate.editedDoctests, "; "), 300))
	var b strings.Builder
	b.WriteString(refusedByChecks + gate.Text)
	b.WriteString("\nThose are doctests in the code your change edits. ticketd runs every test the base commit has in its base version, and a doctest in a docstring cannot be set back without setting back the code around it: an edited doctest is never evidence, and counts as a test the change rewrote. ")
	b.WriteString("Leave the docstrings' examples and expected output exactly as the base commit has them, and put the regression test in a new test function in the project's test files (a test module beside the existing tests), which ticketd runs against the base commit's code. ")
	b.WriteString("If the fix truly must change what a doctest shows (the behaviour it pins is the bug), submit the same change again with the reason in the summary: the attempt then ends, and a human decides whether to accept it.")
	return &toolResult{failed: true, text: b.String()}
}

// editedDoctests are, per changed file of the code under test, the scopes (qualified names,
// "" for the module's own docstring) whose doctest text differs from the base commit's.
func (t *testTree) editedDoctests(ctx context.Context, changed []string) map[string][]string {
	out := map[string][]string{}
	if t.baseFile == nil {
		return out
	}
	for _, p := range changed {
		if !strings.HasSuffix(p, ".py") || t.isTestPath(p) || hasGitElement(p) {
			continue
		}
		base, found, err := t.baseFile(ctx, p)
		if err != nil || !found {
			continue // a new module: its doctests are new tests, not edits
		}
		was, now := doctestTexts(base), doctestTexts(readLimited(t.dir+"/"+p, maxIndexBytes))
		var scopes []string
		for q, text := range was {
			if now[q] != text {
				scopes = append(scopes, q)
			}
		}
		if len(scopes) > 0 {
			out[p] = scopes
		}
	}
	return out
}

// isEditedDoctest reports whether test id (a pytest doctest id, "calc.py::calc.add") is one
// of edited's doctests.
func isEditedDoctest(edited map[string][]string, id string) bool {
	file, name, ok := strings.Cut(id, "::")
	if !ok {
		return false
	}
	for _, q := range edited[file] {
		if q == "" {
			q = strings.TrimSuffix(path.Base(file), ".py") // the module's docstring: its name
		}
		if name == q || strings.HasSuffix(name, "."+q) {
			return true
		}
	}
	return false
}

// doctestTexts reads the doctest examples of Python source by scope: the qualified name of
// the def or class whose docstring holds them ("" for the module), mapped to their prompt
// and expected-output lines, trimmed. Indentation decides the scope, as Python's does; a
// reading, not a parser, enough to tell whether a change edited a doctest.
func doctestTexts(src []byte) map[string]string {
	type scope struct {
		indent int
		name   string
	}
	var stack []scope
	texts := map[string]string{}
	inExample := false
	for _, line := range strings.Split(string(src), "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" {
			inExample = false
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " \t"))
		isPrompt := strings.HasPrefix(trimmed, ">>>")
		if !inExample && !isPrompt {
			for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
				stack = stack[:len(stack)-1]
			}
			for _, kw := range []string{"def ", "async def ", "class "} {
				if rest, ok := strings.CutPrefix(trimmed, kw); ok {
					// "class :" or "def ():" (the maker may write anything) names nothing.
					name, _, _ := strings.Cut(strings.TrimLeft(rest, "(: \t"), "(")
					name, _, _ = strings.Cut(name, ":")
					stack = append(stack, scope{indent, strings.TrimSpace(name)})
					break
				}
			}
			continue
		}
		if !isPrompt && (strings.HasPrefix(trimmed, `"""`) || strings.HasPrefix(trimmed, "'''")) {
			inExample = false // the docstring's end
			continue
		}
		inExample = true
		var names []string
		for _, s := range stack {
			if s.indent < indent {
				names = append(names, s.name)
			}
		}
		q := strings.Join(names, ".")
		texts[q] += trimmed + "\n"
	}
	return texts
}
