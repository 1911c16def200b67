package scriptedmodel

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// TestAngleReviewersAndArbiter: a narrow reviewer reads the diff for its concern only, a
// confirming round withdraws, disagreeing reviewers quote the blocker's line, and the arbiter
// decides every pair it is shown.
func TestAngleReviewersAndArbiter(t *testing.T) {
	patch := readTestdata(t, "stats/fix.patch")
	b := setup(t, []Case{{Match: "empty list", Patch: patch}}, Options{})
	diff := openai.ChatCompletionMessage{Role: "user", Content: "# Proposed fix\n\n```diff\n" + patch + "```\n"}
	angle := func(a string) openai.ChatCompletionMessage {
		return openai.ChatCompletionMessage{Role: "user", Content: "# Review angle: " + a + "\n\nReview for " + a + " only."}
	}
	findings := func(content string) []finding {
		t.Helper()
		var ans checkerAnswer
		if err := json.Unmarshal([]byte(content), &ans); err != nil {
			t.Fatalf("answer %q: %v", content, err)
		}
		return ans.Findings
	}
	// The stats fix adds a guard only: nothing for either angle.
	for _, a := range []string{"performance", "security"} {
		if got := findings(ask(t, b, "checker", openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{diff, angle(a)}}).Choices[0].Message.Content); len(got) != 0 {
			t.Errorf("%s reviewer on a plain guard: %+v, want none", a, got)
		}
	}
	loader := "diff --git a/calc/load.py b/calc/load.py\n--- a/calc/load.py\n+++ b/calc/load.py\n@@ -1,2 +1,4 @@\n def load(path):\n+    data = open(path).read()\n+    for line in data.splitlines():\n+        yield line\n"
	shown := openai.ChatCompletionMessage{Role: "user", Content: "```diff\n" + loader + "```\n"}
	for a, want := range map[string]string{"performance": "    for line in data.splitlines():", "security": "    data = open(path).read()"} {
		got := findings(ask(t, b, "checker", openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{shown, angle(a)}}).Choices[0].Message.Content)
		if len(got) != 1 || got[0].Evidence != want || got[0].Severity != "minor" || got[0].Category != a || got[0].File != "calc/load.py" {
			t.Errorf("%s reviewer: %+v, want one minor remark quoting %q", a, got, want)
		}
	}
	round2 := openai.ChatCompletionMessage{Role: "user", Content: "# Review round 2 of 2\n\nYour findings were: ..."}
	if got := findings(ask(t, b, "checker", openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{diff, angle("performance"), round2}}).Choices[0].Message.Content); len(got) != 0 {
		t.Errorf("a confirming narrow reviewer kept %+v", got)
	}

	d := setup(t, []Case{{Match: "empty list", Patch: patch, CheckerBlocksOnce: true, ReviewersDisagree: true}}, Options{})
	blocker := findings(ask(t, d, "checker", openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{diff}}).Choices[0].Message.Content)
	other := findings(ask(t, d, "checker", openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{diff, angle("security")}}).Choices[0].Message.Content)
	if len(blocker) != 1 || len(other) != 1 || blocker[0].Line != other[0].Line || blocker[0].Evidence != other[0].Evidence || other[0].Severity != "minor" {
		t.Fatalf("disagreeing reviewers: %+v against %+v; want the same line and evidence, the second minor", blocker, other)
	}

	pairs := "# Findings that contradict each other\n\nPair 1:\nA: {\"reviewer\":\"correctness\",\"severity\":\"blocker\"}\nB: {\"reviewer\":\"security\",\"severity\":\"minor\"}\n" +
		"\nPair 2:\nA: {\"reviewer\":\"performance\",\"severity\":\"minor\"}\nB: {\"reviewer\":\"correctness\",\"severity\":\"major\"}\n" +
		"\nPair 3:\nA: {\"reviewer\":\"security\",\"severity\":\"major\"}\nB: {\"reviewer\":\"correctness\",\"severity\":\"major\"}\n"
	got := ask(t, b, "arbiter", openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{{Role: "user", Content: pairs}}}).Choices[0].Message.Content
	var ans struct {
		Decisions []struct {
			Pair     int
			Decision string
		}
	}
	if err := json.Unmarshal([]byte(got), &ans); err != nil {
		t.Fatal(err)
	}
	want := []string{"A", "B", "both"}
	if len(ans.Decisions) != 3 {
		t.Fatalf("arbiter answered %s", got)
	}
	for i, dc := range ans.Decisions {
		if dc.Pair != i+1 || dc.Decision != want[i] {
			t.Errorf("pair %d: %+v, want %s", i+1, dc, want[i])
		}
	}
}

// TestMakerAsks: BehaviourAsk reads, then asks; with the answer in the ticket, once the ask
// is refused, or when ask_human is not offered (asking off), it fixes.
func TestMakerAsks(t *testing.T) {
	patch := readTestdata(t, "stats/fix.patch")
	b := setup(t, []Case{{Match: "empty list", Patch: patch, Behaviour: BehaviourAsk, Question: "Should mean([]) be 0.0 or None?"}}, Options{})
	offered := makerTools
	turn := func(user string, history []openai.ChatCompletionMessage) openai.ChatCompletionMessage {
		t.Helper()
		msgs := append([]openai.ChatCompletionMessage{{Role: "system", Content: "ticketd role: maker"}, {Role: "user", Content: user}}, history...)
		resp, err := b.client.CreateChatCompletion(t.Context(), openai.ChatCompletionRequest{Model: "m", Messages: msgs, Tools: offered})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Choices[0].Message
	}
	first := turn(ticketText, nil)
	if first.ToolCalls[0].Function.Name != "read_files" {
		t.Fatalf("first turn %+v, want a read", first.ToolCalls)
	}
	read := []openai.ChatCompletionMessage{first, {Role: "tool", ToolCallID: first.ToolCalls[0].ID, Content: readTestdata(t, "stats/base/calc/stats.py")}}
	asked := turn(ticketText, read)
	if tc := asked.ToolCalls; len(tc) != 1 || tc[0].Function.Name != "ask_human" || !strings.Contains(tc[0].Function.Arguments, "mean([]) be 0.0 or None") {
		t.Fatalf("second turn %+v, want the question", tc)
	}
	answered := ticketText + "\n\n# Questions to the reporter\n\nQuestion 1: Should mean([]) be 0.0 or None?\nAnswer (github:alice): 0.0\n"
	if tc := turn(answered, read).ToolCalls; tc[0].Function.Name == "ask_human" || tc[0].Function.Name == "read_files" {
		t.Errorf("with the answer the maker does %s, want the fix", tc[0].Function.Name)
	}
	unanswered := ticketText + "\n\n# Questions to the reporter\n\nQuestion 1: Should mean([]) be 0.0 or None?\nAnswer: (not answered)\n"
	if tc := turn(unanswered, read).ToolCalls; tc[0].Function.Name != "ask_human" {
		t.Errorf("without an answer the maker does %s, want ask_human", tc[0].Function.Name)
	}
	refused := append(read, asked, openai.ChatCompletionMessage{Role: "tool", ToolCallID: asked.ToolCalls[0].ID, Content: "error: ask_human refused: decide from what you have"})
	if tc := turn(ticketText, refused).ToolCalls; tc[0].Function.Name == "ask_human" {
		t.Error("after a refused ask the maker asks again, want it to decide")
	}
	offered = slices.DeleteFunc(slices.Clone(makerTools), func(tool openai.Tool) bool { return tool.Function.Name == "ask_human" })
	if tc := turn(ticketText, read).ToolCalls; tc[0].Function.Name == "ask_human" || tc[0].Function.Name == "read_files" {
		t.Errorf("with ask_human not offered the maker does %s, want the fix", tc[0].Function.Name)
	}
}
