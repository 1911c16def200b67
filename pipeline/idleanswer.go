package pipeline

import (
	"fmt"
	"regexp"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/pipeline/tools"
)

// textToolCall finds a tool call written into an answer's text instead of sent as one:
// the markup of open models' chat templates (Hermes and Qwen <tool_call>, Llama's
// <|python_tag|> and <function=...>, Mistral's [TOOL_CALLS]) that a server left unparsed,
// or a JSON object naming one of the maker's tools.
var textToolCall = regexp.MustCompile(`<tool_call>|<\|tool_call|<\|python_tag\|>|<function[=>]|\[TOOL_CALLS\]|"name"\s*:\s*"(?:` +
	strings.Join(toolNameList(), "|") + `)"`)

func toolNameList() []string {
	var out []string
	for _, t := range tools.MakerTools(true, true) {
		out = append(out, regexp.QuoteMeta(t.Function.Name))
	}
	return out
}

// idleAnswer describes a maker answer that made no tool call: what it was, for the journal
// and the stop reason, and the user turn that tells the maker, truthfully, what went wrong.
func idleAnswer(resp model.Response) (what, nudge string) {
	m := resp.Message
	const use = " Use the tools to change the code, then call submit."
	switch {
	case strings.TrimSpace(m.Refusal) != "":
		return fmt.Sprintf("a refusal: %q", clip(m.Refusal, 200)),
			"You declined the task. It is an ordinary bug fix in this repository: nothing else is asked." + use
	case resp.FinishReason == string(openai.FinishReasonContentFilter):
		return fmt.Sprintf("stopped by the endpoint's content filter (finish_reason content_filter): %q", clip(m.Content, 200)),
			"Your answer was stopped by the endpoint's content filter before it made a tool call." + use
	case resp.FinishReason == string(openai.FinishReasonLength):
		return fmt.Sprintf("cut off at the output limit before any tool call (finish_reason length): %q", clip(m.Content, 200)),
			"Your answer was cut off at the output limit before it made a tool call. Keep your reasoning short and call a tool."
	case textToolCall.MatchString(m.Content):
		return fmt.Sprintf("a tool call written as text in the message instead of made as one (if every answer does this, the endpoint does not parse this model's tool calls: enable its tool-call parser, e.g. vLLM --enable-auto-tool-choice with the model's --tool-call-parser, or use a model whose chat template supports tools): %q", clip(m.Content, 200)),
			"Your answer wrote a tool call as text in the message. Text is not run: call the tool through the function-calling interface (the tool_calls of your answer), one call per tool use."
	case strings.TrimSpace(m.Content) == "":
		return "an empty answer (no text and no tool call)",
			"Your answer was empty: no text and no tool call." + use
	}
	return fmt.Sprintf("%q", clip(m.Content, 200)), "Nobody reads plain answers here." + use
}
