package pipeline

import (
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ticketd/ticketd/pipeline/tools"
)

// An elided output's stub says how to get it back only where calling again does that: a
// read comes back by reading again, but a submit or a question called again acts again (a
// submit of the same change after the same refusal ends the attempt).
func TestElidedStubNeverAsksToRepeatAnAction(t *testing.T) {
	long := strings.Repeat("x", 2000)
	var msgs []openai.ChatCompletionMessage
	for _, name := range []string{tools.ReadFiles, tools.Submit, tools.AskHuman, tools.RunChecks} {
		msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, Name: name, Content: name + ": " + long})
	}
	msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, Name: tools.Grep, Content: "latest"})
	out := elideOldOutputs(msgs, 0)
	for _, m := range out[:4] {
		if !strings.HasPrefix(m.Content, "[ticketd: this earlier "+m.Name) {
			t.Errorf("%s output not elided: %.60q", m.Name, m.Content)
			continue
		}
		again := strings.Contains(m.Content, "call the tool again")
		if acts := m.Name == tools.Submit || m.Name == tools.AskHuman; acts == again {
			t.Errorf("%s stub: %q (acts: %v)", m.Name, m.Content, acts)
		}
	}
	if out[4].Content != "latest" {
		t.Errorf("the latest output was elided: %q", out[4].Content)
	}
}
