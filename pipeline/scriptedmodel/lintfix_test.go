package scriptedmodel

import (
	"encoding/json"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// TestMendLint: the mends a model makes for the lint findings it is told of, on the file it
// wrote; a finding it does not know is left alone.
func TestMendLint(t *testing.T) {
	tests := []struct {
		name, content string
		findings      []lintFinding
		want          string
	}{
		{"required import at the top", "import humanize\n\n\ndef test_ten():\n    assert humanize.apnumber(10) == \"10\"\n",
			[]lintFinding{{rule: "I002", line: 1, message: "Missing required import: `from __future__ import annotations`"}},
			"from __future__ import annotations\n\nimport humanize\n\n\ndef test_ten():\n    assert humanize.apnumber(10) == \"10\"\n"},
		{"required import after the module docstring", "\"\"\"Tests for\nten.\"\"\"\nimport humanize\n",
			[]lintFinding{{rule: "I002", line: 1, message: "Missing required import: `from __future__ import annotations`"}},
			"\"\"\"Tests for\nten.\"\"\"\n\nfrom __future__ import annotations\n\nimport humanize\n"},
		{"required import already there", "from __future__ import annotations\n",
			[]lintFinding{{rule: "I002", line: 1, message: "Missing required import: `from __future__ import annotations`"}},
			"from __future__ import annotations\n"},
		{"unused loop variables, on the lines named", "for iii in range(3):\n    for jjj in range(iii):\n        add(iii)\nfor jjj in range(2):\n    print(jjj)\n",
			[]lintFinding{{rule: "B007", line: 2, message: "Loop control variable `jjj` not used within loop body"}},
			"for iii in range(3):\n    for _ in range(iii):\n        add(iii)\nfor jjj in range(2):\n    print(jjj)\n"},
		{"the twin loop whose variable is unused too", "for iii in range(3):\n    for jjj in range(iii):\n        add(iii)\n\nfor iii in range(3):\n    for jjj in range(iii):\n        add(iii)\n    check()\n",
			[]lintFinding{{rule: "B007", line: 6, message: "Loop control variable `jjj` not used within loop body"}},
			"for iii in range(3):\n    for _ in range(iii):\n        add(iii)\n\nfor iii in range(3):\n    for _ in range(iii):\n        add(iii)\n    check()\n"},
		{"unused loop variable in a tuple", "for i, x in enumerate(xs):\n    print(x)\n",
			[]lintFinding{{rule: "B007", line: 1, message: "Loop control variable `i` not used within loop body"}},
			"for _, x in enumerate(xs):\n    print(x)\n"},
		{"a rule it does not know", "import os\n",
			[]lintFinding{{rule: "F401", line: 1, message: "`os` imported but unused"}},
			"import os\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mendLint(tt.content, tt.findings); got != tt.want {
				t.Errorf("mendLint(%q, %v)\n got %q\nwant %q", tt.content, tt.findings, got, tt.want)
			}
		})
	}
}

// TestMakerMendsLint: told by a refused submit that the test file it wrote breaks the
// project's lint rules (ruff's I002 and B007, in the words ticketd's gate uses), the maker
// writes the file again mended, then submits; findings in files it did not write, and
// rules it does not know, leave it as before (re-read, then submit).
func TestMakerMendsLint(t *testing.T) {
	const testFile = "from calc import add\n\n\ndef test_add():\n    for i in range(3):\n        assert add(2, 3) == 5\n"
	patch := "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n" +
		"diff --git a/tests/test_regression_calc.py b/tests/test_regression_calc.py\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_regression_calc.py\n@@ -0,0 +1,6 @@\n" +
		"+" + strings.ReplaceAll(strings.TrimSuffix(testFile, "\n"), "\n", "\n+") + "\n"
	b := setup(t, []Case{{Match: "add is wrong", Patch: patch}}, Options{})
	turn := func(history []openai.ChatCompletionMessage) openai.ChatCompletionMessage {
		t.Helper()
		msgs := append([]openai.ChatCompletionMessage{{Role: "system", Content: "ticketd role: maker"}, {Role: "user", Content: "# Ticket 1\n\nTitle: add is wrong\n"}}, history...)
		resp, err := b.client.CreateChatCompletion(t.Context(), openai.ChatCompletionRequest{Model: "m", Messages: msgs, Tools: makerTools})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Choices[0].Message
	}
	answer := func(m openai.ChatCompletionMessage, result func(openai.ToolCall) string) []openai.ChatCompletionMessage {
		out := []openai.ChatCompletionMessage{m}
		for _, tc := range m.ToolCalls {
			out = append(out, openai.ChatCompletionMessage{Role: "tool", ToolCallID: tc.ID, Content: result(tc)})
		}
		return out
	}
	ok := func(openai.ToolCall) string { return "ok" }
	var h []openai.ChatCompletionMessage
	h = append(h, answer(turn(h), func(openai.ToolCall) string { return "=== calc.py (2 lines)\ndef add(a, b):\n    return a - b\n" })...)
	fix := turn(h)
	h = append(h, answer(fix, ok)...)
	submit := turn(h)
	if len(submit.ToolCalls) != 1 || submit.ToolCalls[0].Function.Name != "submit" {
		t.Fatalf("after the fix: %+v, want a submit", submit.ToolCalls)
	}
	refusal := func(findings ...string) string {
		return "Not accepted: the checks failed (tests, lint and type checks, compared with the base commit). The change was not reviewed.\n\n" +
			"1 failure(s) that the base commit did not have (you caused these):\n- " + strings.Join(findings, "\n- ") + "\n"
	}
	tests := []struct {
		name     string
		findings []string
		want     string // the content written again; "" when the maker does not mend
	}{
		{"I002 and B007 in the test it wrote", []string{
			"lint: I002: tests/test_regression_calc.py:1: Missing required import: `from __future__ import annotations`",
			"lint: B007: tests/test_regression_calc.py:5: Loop control variable `i` not used within loop body"},
			"from __future__ import annotations\n\nfrom calc import add\n\n\ndef test_add():\n    for _ in range(3):\n        assert add(2, 3) == 5\n"},
		{"a finding in a file it only edited", []string{"lint: B007: calc.py:2: Loop control variable `i` not used within loop body"}, ""},
		{"a rule it does not know", []string{"lint: E501: tests/test_regression_calc.py:6: Line too long (120 > 88)"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			refused := append(append([]openai.ChatCompletionMessage{}, h...), answer(submit, func(openai.ToolCall) string { return refusal(tt.findings...) })...)
			next := turn(refused)
			if tt.want == "" {
				if len(next.ToolCalls) == 0 || next.ToolCalls[0].Function.Name == "write_file" {
					t.Fatalf("after %v: %+v, want no mend (a re-read)", tt.findings, next.ToolCalls)
				}
				return
			}
			if len(next.ToolCalls) != 1 || next.ToolCalls[0].Function.Name != "write_file" {
				t.Fatalf("after %v: %+v, want the test file written again", tt.findings, next.ToolCalls)
			}
			var args struct{ Path, Content string }
			if err := json.Unmarshal([]byte(next.ToolCalls[0].Function.Arguments), &args); err != nil {
				t.Fatal(err)
			}
			if args.Path != "tests/test_regression_calc.py" || args.Content != tt.want {
				t.Errorf("wrote %s:\n%s\nwant tests/test_regression_calc.py:\n%s", args.Path, args.Content, tt.want)
			}
			resubmit := turn(append(refused, answer(next, ok)...))
			if len(resubmit.ToolCalls) != 1 || resubmit.ToolCalls[0].Function.Name != "submit" {
				t.Errorf("after the mend: %+v, want a submit", resubmit.ToolCalls)
			}
		})
	}
}

// FuzzMendLint: whatever the feedback and the file hold, reading the findings and mending
// the file never panics, and a mend never drops a line of the file.
func FuzzMendLint(f *testing.F) {
	f.Add("for jjj in range(3):\n    pass\n", "- lint: B007: t.py:1: Loop control variable `jjj` not used within loop body")
	f.Add("\"\"\"doc\"\"\"\nimport x\n", "- lint: I002: t.py:1: Missing required import: `from __future__ import annotations`")
	f.Add("'''\n", "I002: t.py:9: `import os`")
	f.Fuzz(func(t *testing.T, content, feedback string) {
		findings := lintFindings(feedback)
		got := mendLint(content, findings)
		if strings.Count(got, "\n") < strings.Count(content, "\n") {
			t.Errorf("mendLint(%q, %v) = %q: fewer lines", content, findings, got)
		}
	})
}
