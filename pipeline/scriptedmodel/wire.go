package scriptedmodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// chatRequest is the part of an OpenAI chat completion request the double reads.
// Unknown fields are accepted and ignored, as providers do.
type chatRequest struct {
	Model               string            `json:"model"`
	Messages            []json.RawMessage `json:"messages"`
	Tools               []json.RawMessage `json:"tools"`
	Stream              bool              `json:"stream"`
	MaxTokens           int               `json:"max_tokens"`
	MaxCompletionTokens int               `json:"max_completion_tokens"`
	ReasoningEffort     string            `json:"reasoning_effort"`
	PromptCacheKey      string            `json:"prompt_cache_key"`
}

// message is one decoded chat message. Content may arrive as a string, null, or an
// array of {type:"text", text} parts; text holds it flattened.
type message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name,omitempty"`
	ToolCalls  []toolCall      `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`

	text string
}

type toolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function functionCall `json:"function"`
}

type functionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// decodeMessage decodes one message and flattens its content to text.
func decodeMessage(raw json.RawMessage, i int) (message, error) {
	var m message
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, fmt.Errorf("messages[%d] is not a valid message object: %v", i, err)
	}
	switch m.Role {
	case "system", "developer", "user", "assistant", "tool":
	default:
		return m, fmt.Errorf("messages[%d].role %q is not one of system, developer, user, assistant, tool", i, m.Role)
	}
	text, err := contentText(m.Content)
	if err != nil {
		return m, fmt.Errorf("messages[%d].content: %v", i, err)
	}
	m.text = text
	if m.Role != "assistant" && len(m.ToolCalls) > 0 {
		return m, fmt.Errorf("messages[%d]: only assistant messages may carry tool_calls", i)
	}
	if m.Role == "tool" && m.ToolCallID == "" {
		return m, fmt.Errorf("messages[%d]: a tool message needs tool_call_id", i)
	}
	for j, tc := range m.ToolCalls {
		if tc.ID == "" || tc.Function.Name == "" {
			return m, fmt.Errorf("messages[%d].tool_calls[%d] needs an id and a function name", i, j)
		}
	}
	return m, nil
}

func contentText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	switch raw[0] {
	case '"':
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	case '[':
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(raw, &parts); err != nil {
			return "", err
		}
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String(), nil
	}
	return "", fmt.Errorf("want a string, null or an array of content parts, got %.20s", raw)
}

// Wire shapes of the response, as OpenAI sends them.

type chatResponse struct {
	ID                string   `json:"id"`
	Object            string   `json:"object"`
	Created           int64    `json:"created"`
	Model             string   `json:"model"`
	SystemFingerprint string   `json:"system_fingerprint"`
	Choices           []choice `json:"choices"`
	Usage             usage    `json:"usage"`
}

type choice struct {
	Index        int             `json:"index"`
	Message      responseMessage `json:"message"`
	FinishReason string          `json:"finish_reason"`
}

type responseMessage struct {
	Role      string     `json:"role"`
	Content   *string    `json:"content"`
	ToolCalls []toolCall `json:"tool_calls,omitempty"`
}

type usage struct {
	PromptTokens            int                     `json:"prompt_tokens"`
	CompletionTokens        int                     `json:"completion_tokens"`
	TotalTokens             int                     `json:"total_tokens"`
	PromptTokensDetails     promptTokensDetails     `json:"prompt_tokens_details"`
	CompletionTokensDetails completionTokensDetails `json:"completion_tokens_details"`
}

type promptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

type completionTokensDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

type errorBody struct {
	Error apiError `json:"error"`
}

type apiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}
