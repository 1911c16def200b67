package model

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

func toolCallTurn() []openai.ChatCompletionMessage {
	return []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: "ticketd role: maker"},
		{Role: openai.ChatMessageRoleUser, Content: "Average of an empty list crashes"},
		{Role: openai.ChatMessageRoleAssistant, ToolCalls: []openai.ToolCall{{
			ID: "call_1", Type: openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: "read_files", Arguments: `{"paths":["stats.py"]}`},
		}}},
		{Role: openai.ChatMessageRoleTool, ToolCallID: "call_1", Content: ""},
	}
}

var readFilesTool = openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
	Name: "read_files", Description: "Read files.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"paths":{"type":"array","items":{"type":"string"}}}}`),
}}

// TestWireShape checks on the wire what go-openai cannot send by itself.
func TestWireShape(t *testing.T) {
	tests := []struct {
		name     string
		cacheKey string
		role     Role
		model    string
		effort   string
		prefix   string
		json     bool
		wantKey  string // "" = absent
		wantMax  float64
	}{
		{name: "maker auto key with prefix version", role: RoleMaker, model: "gpt-4.1-mini", prefix: "p3", effort: "low",
			wantKey: "ticketd-maker-p3", wantMax: 32000},
		{name: "maker capped by model limit", role: RoleMaker, model: "gpt-4o", prefix: "p3",
			wantKey: "ticketd-maker-p3", wantMax: 16384},
		{name: "judge json custom key hashed tools", cacheKey: "acme", role: RoleJudge, model: "gpt-4.1-nano", json: true,
			wantKey: "acme-judge-" + toolsVersion([]openai.Tool{readFilesTool}), wantMax: 4000},
		{name: "key off", cacheKey: "off", role: RoleTriage, model: "gpt-4.1-nano", wantMax: 4000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, log := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
				writeJSON(w, 200, completion("ok", "stop", ""))
			})
			cfg := testConfig(srv.URL)
			cfg.CacheKey = tt.cacheKey
			cfg.Roles[tt.role] = RoleConfig{Endpoint: "local", Model: tt.model, ReasoningEffort: tt.effort}
			b := setup(t, cfg)
			req := Request{Role: tt.role, Messages: toolCallTurn(), Tools: []openai.Tool{readFilesTool}, JSON: tt.json, PrefixVersion: tt.prefix}
			if _, err := b.client.Chat(context.Background(), req); err != nil {
				t.Fatalf("Chat: %v", err)
			}
			body := log.body(t, 0)
			key, hasKey := body["prompt_cache_key"]
			switch {
			case tt.wantKey == "" && hasKey:
				t.Errorf("prompt_cache_key = %v, want absent", key)
			case tt.wantKey != "" && key != tt.wantKey:
				t.Errorf("prompt_cache_key = %v, want %q", key, tt.wantKey)
			}
			msgs := body["messages"].([]any)
			for i, m := range msgs {
				if c, ok := m.(map[string]any)["content"]; !ok || c == nil {
					t.Errorf("messages[%d] = %v: want a content field", i, m)
				}
			}
			if got := msgs[2].(map[string]any); got["content"] != "" || got["tool_calls"] == nil {
				t.Errorf("tool-call turn on the wire = %v, want content \"\" and tool_calls", got)
			}
			if got := body["max_completion_tokens"]; got != tt.wantMax {
				t.Errorf("max_completion_tokens = %v, want %v", got, tt.wantMax)
			}
			if got, ok := body["max_tokens"]; ok {
				t.Errorf("max_tokens = %v, want absent (MaxCompletionTokens only)", got)
			}
			if got, _ := body["reasoning_effort"].(string); got != tt.effort {
				t.Errorf("reasoning_effort = %q, want %q", got, tt.effort)
			}
			rf, _ := body["response_format"].(map[string]any)
			if tt.json != (rf != nil && rf["type"] == "json_object") {
				t.Errorf("response_format = %v, want json_object: %v", rf, tt.json)
			}
		})
	}
}

// TestWireKeyStableAcrossTickets pins that two tickets' requests of a role carry the
// same key when their tools are the same.
func TestWireKeyStableAcrossTickets(t *testing.T) {
	srv, log := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
		writeJSON(w, 200, completion("ok", "stop", ""))
	})
	b := setup(t, testConfig(srv.URL))
	for id := int64(1); id <= 2; id++ {
		req := Request{Role: RoleMaker, TicketID: id, Messages: toolCallTurn(), Tools: []openai.Tool{readFilesTool}}
		if _, err := b.client.Chat(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	k0, k1 := log.body(t, 0)["prompt_cache_key"], log.body(t, 1)["prompt_cache_key"]
	if k0 != k1 || !strings.HasPrefix(k0.(string), "ticketd-maker-") {
		t.Errorf("keys = %v, %v; want one ticketd-maker-<version> key for both tickets", k0, k1)
	}
}

// TestGoOpenAIMaxTokensTrap pins why only MaxCompletionTokens is sent: go-openai
// refuses MaxTokens for reasoning models before any request is made.
func TestGoOpenAIMaxTokensTrap(t *testing.T) {
	c := openai.NewClientWithConfig(openai.DefaultConfig(""))
	_, err := c.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{
		//lint:ignore SA1019 the deprecated field is the trap this test pins
		Model: "o3", MaxTokens: 10, MaxCompletionTokens: 10,
		Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "x"}},
	})
	if !errors.Is(err, openai.ErrReasoningModelMaxTokensDeprecated) {
		t.Errorf("o3 with MaxTokens and MaxCompletionTokens: err = %v, want ErrReasoningModelMaxTokensDeprecated", err)
	}
}

func TestRewriteChatBody(t *testing.T) {
	tests := []struct {
		in, key, want string
	}{
		{`{"model":"m","messages":[{"role":"assistant","tool_calls":[]}]}`, "k",
			`{"messages":[{"content":"","role":"assistant","tool_calls":[]}],"model":"m","prompt_cache_key":"k"}`},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}]}`, "",
			`{"messages":[{"role":"user","content":"hi"}],"model":"m"}`},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"}]}]}`, "k",
			`{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"model":"m","prompt_cache_key":"k"}`},
	}
	for _, tt := range tests {
		got, _, err := rewriteChatBody([]byte(tt.in), tt.key, bodyOptions{})
		if err != nil || string(got) != tt.want {
			t.Errorf("rewriteChatBody(%s, %q) =\n%s, %v\nwant\n%s", tt.in, tt.key, got, err, tt.want)
		}
	}
	if _, _, err := rewriteChatBody([]byte(`[1]`), "k", bodyOptions{}); err == nil {
		t.Error("rewriteChatBody of a JSON array: want an error")
	}
}

func FuzzRewriteChatBody(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"1"}]},{"role":"tool","tool_call_id":"1"}]}`), "ticketd-maker-v1")
	f.Add([]byte(`{"messages":null}`), "")
	f.Add([]byte(`{"messages":[{}],"x":"\u003c"}`), "k")
	f.Fuzz(func(t *testing.T, body []byte, key string) {
		out, _, err := rewriteChatBody(body, key, bodyOptions{})
		if err != nil {
			return
		}
		var m struct {
			Key      *string          `json:"prompt_cache_key"`
			Messages []map[string]any `json:"messages"`
		}
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("rewritten body is not JSON: %v\n%s", err, out)
		}
		// json.Marshal replaces each invalid UTF-8 byte of the key with U+FFFD.
		var wantKey string
		kb, _ := json.Marshal(key)
		_ = json.Unmarshal(kb, &wantKey)
		if key != "" && (m.Key == nil || *m.Key != wantKey) {
			t.Fatalf("prompt_cache_key = %v, want %q", m.Key, key)
		}
		for i, msg := range m.Messages {
			if _, ok := msg["content"]; !ok && msg != nil {
				t.Fatalf("messages[%d] has no content after rewrite: %s", i, out)
			}
		}
	})
}

// BenchmarkRewriteChatBody measures the wire shaping of a maker request late in a
// conversation (about 200 KB of messages), the cost paid on every model call.
func BenchmarkRewriteChatBody(b *testing.B) {
	msgs := toolCallTurn()
	for range 100 {
		msgs = append(msgs, toolCallTurn()[2:]...)
		msgs = append(msgs, openai.ChatCompletionMessage{Role: "tool", ToolCallID: "call_1", Content: strings.Repeat("def mean(xs):\n    return sum(xs) / len(xs)\n", 40)})
	}
	body, err := json.Marshal(openai.ChatCompletionRequest{Model: "gpt-4.1", Messages: msgs, Tools: []openai.Tool{readFilesTool}})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, _, err := rewriteChatBody(body, "ticketd-maker-v1", bodyOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
