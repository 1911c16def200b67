package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/pipeline/tools"
)

// Compaction keeps a long maker session inside the model's context window. Every maker
// request re-sends the whole conversation, so a session that grows without bound first
// gets expensive and then fails with a context overflow. When a request would pass
// CompactAt of the window, compaction runs in two passes, cheapest first:
//
//  1. Old tool outputs (everything but the most recent keepRecentOutputs, and never the
//     result of an edit or a write) are replaced by a one-line stub that says how to get
//     them back (or, for a submit or a question, that calling again would act again). The
//     model's own messages and tool calls, edits included, stay verbatim.
//  2. If that is not enough, the middle of the conversation is summarised by the triage
//     model and replaced by the summary; the opening (instructions, repository, ticket)
//     and the last turns stay.
//
// It stops when a pass no longer shrinks the request; a session that still does not fit
// ends the attempt with that reason rather than sending a request the server will refuse.
const (
	// DefaultContextWindow is assumed for a role whose window is not configured: the
	// smallest window of the current mainstream coding models (128k tokens).
	DefaultContextWindow = 128_000
	// DefaultCompactAt is the share of the window at which compaction starts, leaving
	// room for the answer and for the estimate's error.
	DefaultCompactAt = 0.70

	keepRecentOutputs = 4
	elidedStub        = "[ticketd: this earlier %s output (%d characters) was removed to keep the conversation short; call the tool again if you still need it]"
	// elidedActStub replaces the answer of a call that acts (submit, ask_human): calling it
	// again would not fetch the old answer but act anew, and a submit of the same change after
	// the same refusal ends the attempt.
	elidedActStub = "[ticketd: this earlier %s answer (%d characters) was removed to keep the conversation short; calling %s again would act again, not show it: run_checks shows where the checks stand now]"
)

// errContextFull ends an attempt whose conversation cannot be made to fit.
var errContextFull = errors.New("context window full")

// refusedBy is an error whose text already tells of the server's refusal that caused it,
// and which keeps that refusal for errors.Is and errors.As.
type refusedBy struct{ err, refused error }

func (e *refusedBy) Error() string   { return e.err.Error() }
func (e *refusedBy) Unwrap() []error { return []error{e.err, e.refused} }

// estimateTokens is a deliberately simple, slightly generous estimate of a request's
// prompt tokens: about 4 characters per token for English and code (OpenAI's rule of
// thumb), plus a few tokens of framing per message. It only decides when to compact;
// billing uses the provider's own counts.
func estimateTokens(msgs []openai.ChatCompletionMessage, toolDefs []openai.Tool) int {
	chars := 0
	for _, m := range msgs {
		chars += len(m.Content) + len(m.Name) + len(m.ToolCallID) + 16
		for _, p := range m.MultiContent {
			chars += len(p.Text)
		}
		for _, tc := range m.ToolCalls {
			chars += len(tc.Function.Name) + len(tc.Function.Arguments) + len(tc.ID) + 16
		}
	}
	for _, t := range toolDefs {
		if t.Function != nil {
			chars += len(t.Function.Name) + len(t.Function.Description) + 64
			switch p := t.Function.Parameters.(type) {
			case json.RawMessage:
				chars += len(p)
			case []byte:
				chars += len(p)
			case string:
				chars += len(p)
			default:
				if raw, err := json.Marshal(p); err == nil {
					chars += len(raw)
				}
			}
		}
	}
	return chars/4 + 1
}

// compactor holds one attempt's compaction settings and counts.
type compactor struct {
	limit  int // tokens above which a request is compacted
	window int
	share  float64
	passes int // compaction passes that shrank the conversation
	// refused is the server's context-length error, once it refused a request that fit
	// the configured window; limit is then lowered below that request.
	refused error
}

// why says where the limit comes from, for the stop reason.
func (c *compactor) why() string {
	if c.refused != nil {
		return fmt.Sprintf("below a request the server refused: %v", c.refused)
	}
	return fmt.Sprintf("%.0f%% of the %d-token window", 100*c.share, c.window)
}

// lower sets the limit below a request the server refused as too long.
func (c *compactor) lower(tokens int, refused error) {
	c.limit = min(c.limit, tokens*6/10)
	c.refused = refused
}

func newCompactor(window int, share float64) *compactor {
	if window <= 0 {
		window = DefaultContextWindow
	}
	if share <= 0 || share >= 1 {
		share = DefaultCompactAt
	}
	return &compactor{limit: int(float64(window) * share), window: window, share: share}
}

// fit returns msgs shrunk below the limit, or errContextFull. summarise is the second pass
// (nil skips it).
func (c *compactor) fit(ctx context.Context, msgs []openai.ChatCompletionMessage, toolDefs []openai.Tool,
	summarise func(context.Context, []openai.ChatCompletionMessage) (string, error)) ([]openai.ChatCompletionMessage, int, error) {
	size := estimateTokens(msgs, toolDefs)
	if size <= c.limit {
		return msgs, 0, nil
	}
	passes := 0
	if out := elideOldOutputs(msgs, c.limit/2); estimateTokens(out, toolDefs) < size {
		msgs, size = out, estimateTokens(out, toolDefs)
		passes++
	}
	if size > c.limit && summarise != nil {
		out, err := summariseMiddle(ctx, msgs, summarise)
		if err != nil && ctx.Err() != nil {
			return msgs, passes, err
		}
		if err == nil && estimateTokens(out, toolDefs) < size {
			msgs, size = out, estimateTokens(out, toolDefs)
			passes++
		}
	}
	c.passes += passes
	if size > c.limit {
		return msgs, passes, fmt.Errorf("%w: the conversation needs about %d tokens, over the %d allowed (%s), and compaction cannot shrink it further",
			errContextFull, size, c.limit, c.why())
	}
	return msgs, passes, nil
}

// elideOldOutputs replaces old tool outputs with stubs, keeping the most recent ones (at
// most keepRecentOutputs, and at most keepTokens of them together). It returns a new
// slice; msgs is not changed, so a failed compaction leaves the conversation as it was.
func elideOldOutputs(msgs []openai.ChatCompletionMessage, keepTokens int) []openai.ChatCompletionMessage {
	out := make([]openai.ChatCompletionMessage, len(msgs))
	copy(out, msgs)
	kept, keptTokens := 0, 0
	for i := len(out) - 1; i >= 0; i-- {
		m := out[i]
		if m.Role != openai.ChatMessageRoleTool {
			continue
		}
		size := len(m.Content)/4 + 1
		// The very last output is always kept: the model has not seen it yet.
		if kept == 0 || (kept < keepRecentOutputs && keptTokens+size <= keepTokens) {
			kept++
			keptTokens += size
			continue
		}
		if m.Name == tools.EditFile || m.Name == tools.WriteFile || strings.HasPrefix(m.Content, "[ticketd: this earlier") {
			continue
		}
		stub := fmt.Sprintf(elidedStub, cmpOrName(m.Name), len(m.Content))
		if m.Name == tools.Submit || m.Name == tools.AskHuman {
			stub = fmt.Sprintf(elidedActStub, m.Name, len(m.Content), m.Name)
		}
		if len(stub) < len(m.Content) {
			m.Content = stub
			out[i] = m
		}
	}
	return out
}

func cmpOrName(name string) string {
	if name == "" {
		return "tool"
	}
	return name
}

// summariseMiddle replaces the messages between the opening (system + first user message)
// and the last turn (the latest assistant message and the results of its calls) with one
// summary message. The cut never separates an assistant message from the tool results that
// answer its calls, which servers reject.
func summariseMiddle(ctx context.Context, msgs []openai.ChatCompletionMessage,
	summarise func(context.Context, []openai.ChatCompletionMessage) (string, error)) ([]openai.ChatCompletionMessage, error) {
	const head = 2
	end := len(msgs) - 1
	for end > head && msgs[end].Role != openai.ChatMessageRoleAssistant {
		end--
	}
	if end-head < 2 {
		return msgs, errors.New("nothing in the middle to summarise")
	}
	summary, err := summarise(ctx, msgs[head:end])
	if err != nil {
		return msgs, err
	}
	out := make([]openai.ChatCompletionMessage, 0, head+1+len(msgs)-end)
	out = append(out, msgs[:head]...)
	out = append(out, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser,
		Content: "[ticketd] The earlier part of this session was summarised to save context. Summary of what was done and learned so far:\n\n" + summary})
	return append(out, msgs[end:]...), nil
}

// transcript renders messages as plain text for the summariser.
func transcript(msgs []openai.ChatCompletionMessage) string {
	var b strings.Builder
	for _, m := range msgs {
		switch m.Role {
		case openai.ChatMessageRoleTool:
			fmt.Fprintf(&b, "[result of %s]\n%s\n\n", m.Name, clip(m.Content, 4000))
		default:
			if strings.TrimSpace(m.Content) != "" {
				fmt.Fprintf(&b, "[%s]\n%s\n\n", m.Role, clip(m.Content, 4000))
			}
			for _, tc := range m.ToolCalls {
				fmt.Fprintf(&b, "[%s calls %s] %s\n\n", m.Role, tc.Function.Name, clip(tc.Function.Arguments, 4000))
			}
		}
	}
	return b.String()
}

// summariseWith returns a summariser that asks role (the triage-tier model) for a summary.
func (q *asker) summariseWith(role model.Role) func(context.Context, []openai.ChatCompletionMessage) (string, error) {
	if !q.roles[role] {
		return nil
	}
	return func(ctx context.Context, middle []openai.ChatCompletionMessage) (string, error) {
		resp, err := q.chat(ctx, role, []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: summaryInstructions},
			{Role: openai.ChatMessageRoleUser, Content: transcript(middle)},
		}, nil, false)
		if err != nil {
			return "", fmt.Errorf("summarise the session: %w", err)
		}
		s := strings.TrimSpace(resp.Message.Content)
		if s == "" {
			return "", errors.New("summarise the session: the model answered with nothing")
		}
		return s, nil
	}
}

const summaryInstructions = `You compress the middle of a coding agent's session so it can continue with less context.
Write a short, factual summary for the agent itself: which files it read and what it learned
from them (names of functions, the relevant lines), which edits it made and whether they
applied, what checks it ran and what failed, and what it was about to do next. Keep file
paths, function names and error messages exact. No advice, no preamble.`
