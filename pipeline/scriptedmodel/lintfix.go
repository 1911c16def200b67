package scriptedmodel

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
)

// lintFinding is one lint finding as the maker reads it in a refusal or a run_checks
// result: "RULE: path:line: message" (ruff's rule code, the file, the line, ruff's words).
type lintFinding struct {
	rule, path, message string
	line                int
}

// lintLineRe finds a finding in feedback text: a rule code such as B007 or I002, then a
// path and a line number, then the message. The check's own name before it is the
// operator's, so it is not read.
var lintLineRe = regexp.MustCompile(`(?m)\b([A-Z]{1,4}[0-9]{3,4}): ([^\s:]+):([0-9]+): (.+)$`)

// lintFindings reads the findings that feedback names.
func lintFindings(feedback string) []lintFinding {
	var out []lintFinding
	for _, m := range lintLineRe.FindAllStringSubmatch(feedback, -1) {
		n, err := strconv.Atoi(m[3])
		if err != nil || n < 1 {
			continue
		}
		out = append(out, lintFinding{rule: m[1], path: m[2], line: n, message: strings.TrimSpace(m[4])})
	}
	return out
}

// lintFixes are the write_file calls with which the maker mends the lint findings that the
// last turn's feedback (a refused submit, a run_checks result) names in files it wrote
// whole, as a model does once told: it adds the import a rule requires (I002), renames a
// loop variable it does not use to _ (B007). It knows such a file's content from its own
// write_file call, the latest one of that path, as a model reads it in the conversation;
// nil when the feedback names no such finding it can mend, so the plan goes on as before.
// Everything it reads is in the messages: the double stays a stateless model.
func lintFixes(h history) []intent {
	feedback := lastFeedback(h)
	if feedback == "" {
		return nil
	}
	written := writtenFiles(h)
	byPath := map[string][]lintFinding{}
	var order []string
	for _, f := range lintFindings(feedback) {
		if _, ok := written[f.path]; !ok {
			continue
		}
		if byPath[f.path] == nil {
			order = append(order, f.path)
		}
		byPath[f.path] = append(byPath[f.path], f)
	}
	var out []intent
	for _, p := range order {
		content := written[p]
		mended := mendLint(content, byPath[p])
		if mended == content {
			continue
		}
		out = append(out, intent{key: "lint", name: "write_file",
			args: mustJSON(map[string]string{"path": p, "content": mended})})
	}
	return out
}

// lastFeedback is the answer of the last turn's submit or run_checks, "" when the last turn
// called neither or got no answer.
func lastFeedback(h history) string {
	var b strings.Builder
	for _, c := range h.calls {
		if c.turn == h.lastTurn && c.hasResult && (c.name == "submit" || c.name == "run_checks") {
			b.WriteString(c.result)
			b.WriteString("\n")
		}
	}
	return b.String()
}

// writtenFiles are the files the maker wrote whole with write_file, each with the content
// of its latest write that succeeded.
func writtenFiles(h history) map[string]string {
	out := map[string]string{}
	for _, c := range h.calls {
		if c.name != "write_file" || !c.ok() {
			continue
		}
		var a struct {
			Path    string `json:"path"`
			Content string `json:"content"`
		}
		if json.Unmarshal([]byte(c.args), &a) == nil && a.Path != "" {
			out[a.Path] = a.Content
		}
	}
	return out
}

// mendLint applies the mends a model knows for findings in content; what it does not know
// is left as it is.
func mendLint(content string, findings []lintFinding) string {
	lines := strings.SplitAfter(content, "\n")
	var imports []string
	for _, f := range findings {
		switch f.rule {
		case "B007":
			// The loop named, and every other loop of the file whose body leaves the same
			// variable unused: a model reading its own file mends the twin loop too (the
			// feedback may name one of them, as ticketd's gate names a rule and message once).
			name := backquoted(f.message)
			for i := range lines {
				if i == f.line-1 || unusedLoopVar(lines, i, name) {
					lines[i] = renameLoopVar(lines[i], name)
				}
			}
		case "I002":
			if imp := backquoted(f.message); strings.HasPrefix(imp, "from ") || strings.HasPrefix(imp, "import ") {
				imports = append(imports, imp)
			}
		}
	}
	out := strings.Join(lines, "")
	for _, imp := range imports {
		out = addImport(out, imp)
	}
	return out
}

// backquoted is the first `quoted` part of a message, "" without one.
func backquoted(msg string) string {
	_, rest, ok := strings.Cut(msg, "`")
	if !ok {
		return ""
	}
	q, _, ok := strings.Cut(rest, "`")
	if !ok {
		return ""
	}
	return q
}

// forTargetRe is a for statement's target: what stands between "for" and "in".
var forTargetRe = regexp.MustCompile(`^(\s*(?:async\s+)?for\s+)(.+?)(\s+in\s)`)

// identRe is a Python name.
var identRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// renameLoopVar renames loop variable name (the one ruff's B007 message names: "Loop
// control variable `jjj` not used within loop body") to _ in the for statement of line.
func renameLoopVar(line, name string) string {
	if name == "_" || !identRe.MatchString(name) {
		return line
	}
	m := forTargetRe.FindStringSubmatchIndex(line)
	if m == nil {
		return line
	}
	target := line[m[4]:m[5]]
	renamed := regexp.MustCompile(`\b`+name+`\b`).ReplaceAllString(target, "_")
	return line[:m[4]] + renamed + line[m[5]:]
}

// unusedLoopVar says whether line i is a for statement whose target binds name and whose
// body (the lines indented deeper below it) never mentions name.
func unusedLoopVar(lines []string, i int, name string) bool {
	if !identRe.MatchString(name) {
		return false
	}
	m := forTargetRe.FindStringSubmatch(lines[i])
	word := regexp.MustCompile(`\b` + name + `\b`)
	if m == nil || !word.MatchString(m[2]) {
		return false
	}
	indent := len(lines[i]) - len(strings.TrimLeft(lines[i], " \t"))
	body := false
	for _, l := range lines[i+1:] {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if len(l)-len(strings.TrimLeft(l, " \t")) <= indent {
			break
		}
		body = true
		if word.MatchString(l) {
			return false
		}
	}
	return body
}

// addImport puts a required import at the top of a module: after a shebang or coding
// comment and the module docstring, before the rest, with a blank line after it; nothing
// when the module has it already.
func addImport(content, imp string) string {
	lines := strings.SplitAfter(content, "\n")
	for _, l := range lines {
		if strings.TrimSpace(l) == imp {
			return content
		}
	}
	at := 0
	for at < len(lines) && (strings.HasPrefix(lines[at], "#!") || strings.HasPrefix(lines[at], "# -*-")) {
		at++
	}
	if at < len(lines) {
		if q, rest := docstringOpening(lines[at]); q != "" {
			end := at
			if !strings.Contains(rest, q) {
				for end = at + 1; end < len(lines) && !strings.Contains(lines[end], q); end++ {
				}
			}
			at = min(end+1, len(lines))
		}
	}
	block := imp + "\n"
	if at < len(lines) && strings.TrimSpace(lines[at]) != "" {
		block += "\n"
	}
	if at > 0 && strings.TrimSpace(lines[at-1]) != "" && !strings.HasPrefix(lines[at-1], "#") {
		block = "\n" + block
	}
	return strings.Join(lines[:at], "") + block + strings.Join(lines[at:], "")
}

// docstringOpening is the quote that opens a docstring on line and what follows it on the
// line; "" when no docstring opens there.
func docstringOpening(line string) (quote, rest string) {
	t := strings.TrimLeft(strings.TrimSpace(line), "rRuUbB")
	for _, q := range []string{`"""`, `'''`} {
		if r, ok := strings.CutPrefix(t, q); ok {
			return q, r
		}
	}
	return "", ""
}
