package model

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// TestThoughtSignatureSentBack: Gemini's OpenAI-compatible endpoint sends each tool call's
// thought signature in extra_content.google.thought_signature and refuses the next request
// with 400 when a replayed call lacks it (ai.google.dev/gemini-api/docs/thought-signatures;
// openai/codex#7519). Two tickets whose first calls are alike (the same id, name and
// arguments) but signed differently each send back their own signature.
func TestThoughtSignatureSentBack(t *testing.T) {
	var mu sync.Mutex
	issued := map[string]bool{} // signatures handed out
	srv, _ := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int, body []byte) {
		var req struct {
			Messages []struct {
				Role      string `json:"role"`
				Content   string `json:"content"`
				ToolCalls []struct {
					Extra struct {
						Google struct {
							Sig string `json:"thought_signature"`
						} `json:"google"`
					} `json:"extra_content"`
				} `json:"tool_calls"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(body, &req)
		ticket := req.Messages[0].Content
		sent := false
		for i, m := range req.Messages {
			for _, c := range m.ToolCalls {
				mu.Lock()
				ok := issued[c.Extra.Google.Sig] && c.Extra.Google.Sig == "SIG-"+ticket
				mu.Unlock()
				if !ok {
					writeJSON(w, 400, fmt.Sprintf(`[{"error":{"code":400,"message":"Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `+"`default_api:read_files`"+`, position %d.","status":"INVALID_ARGUMENT"}}]`, i+1))
					return
				}
				sent = true
			}
		}
		if sent {
			writeJSON(w, 200, completion("done", "stop", ""))
			return
		}
		mu.Lock()
		issued["SIG-"+ticket] = true
		mu.Unlock()
		writeJSON(w, 200, `{"id":"x","object":"chat.completion","model":"gemini-3-pro-preview","choices":[{"index":0,"message":{"role":"assistant","tool_calls":[`+
			`{"id":"function-call-1","type":"function","function":{"name":"read_files","arguments":"{\"paths\":[\"a.py\"]}"},"extra_content":{"google":{"thought_signature":"SIG-`+ticket+`"}}}]},`+
			`"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":5}}`)
	})
	first := twoTicketsReplayed(t, srv.URL, "", "the call sent back with its own signature")
	if first["A"].ToolCalls[0].ID == first["B"].ToolCalls[0].ID {
		t.Errorf("both tickets' calls have id %q: two signatures under one id", first["A"].ToolCalls[0].ID)
	}
}

// TestExtraStoreBounded: the store drops its oldest entries past maxExtraBytes.
func TestExtraStoreBounded(t *testing.T) {
	var s extraStore
	sig := json.RawMessage(fmt.Sprintf(`{"google":{"thought_signature":%q}}`, make([]byte, 1<<20)))
	for i := range 40 {
		s.put(fmt.Sprint("call-", i), sig)
	}
	if s.size > maxExtraBytes {
		t.Errorf("store holds %d bytes, want at most %d", s.size, maxExtraBytes)
	}
	if s.get("call-0") != nil || s.get("call-39") == nil {
		t.Error("want the oldest dropped and the newest kept")
	}
}

// TestReasoningDetailsSentBack: OpenRouter returns what a model's provider wants back with
// its tool calls in the message's reasoning_details (Gemini's thought signature as
// reasoning.encrypted) and refuses the next request with 400 when a replayed tool-calling
// turn lacks it (openrouter.ai/docs "Preserving reasoning blocks"; RooCodeInc/Roo-Code#10307).
// Each ticket's turn goes back with its own details, unchanged, and its call keeps its id.
func TestReasoningDetailsSentBack(t *testing.T) {
	details := func(ticket string) string {
		return `[{"type":"reasoning.text","text":"I should read a.py","format":"google-gemini-v1","index":0},` +
			`{"type":"reasoning.encrypted","data":"SIG-` + ticket + `","id":"tool_read_files_` + ticket + `","format":"google-gemini-v1","index":0}]`
	}
	srv, _ := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int, body []byte) {
		var req struct {
			Messages []struct {
				Content   string            `json:"content"`
				ToolCalls []json.RawMessage `json:"tool_calls"`
				Details   json.RawMessage   `json:"reasoning_details"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(body, &req)
		ticket := req.Messages[0].Content
		for _, m := range req.Messages {
			if len(m.ToolCalls) == 0 {
				continue
			}
			var got, want any
			_ = json.Unmarshal(m.Details, &got)
			_ = json.Unmarshal([]byte(details(ticket)), &want)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				writeJSON(w, 400, `{"error":{"message":"Provider returned error","code":400,"metadata":{"raw":"Gemini models require OpenRouter reasoning details to be preserved in each request. Please refer to our docs: https://openrouter.ai/docs/guides/best-practices/reasoning-tokens#preserving-reasoning-blocks.","provider_name":"Google AI Studio"}}}`)
				return
			}
			writeJSON(w, 200, completion("done", "stop", ""))
			return
		}
		writeJSON(w, 200, `{"id":"gen-1","object":"chat.completion","model":"google/gemini-3-pro-preview","choices":[{"index":0,"finish_reason":"tool_calls","native_finish_reason":"STOP",`+
			`"message":{"role":"assistant","content":"","reasoning":"I should read a.py","reasoning_details":`+details(ticket)+`,`+
			`"tool_calls":[{"id":"tool_read_files_`+ticket+`","type":"function","index":0,"function":{"name":"read_files","arguments":"{\"paths\":[\"a.py\"]}"}}]}}],`+
			`"usage":{"prompt_tokens":10,"completion_tokens":5}}`)
	})
	twoTicketsReplayed(t, srv.URL, "tool_read_files_", "the turn sent back with its own reasoning_details")
}

// twoTicketsReplayed has tickets A and B each get one tool call from the server at url (with
// the id idPrefix+ticket, when idPrefix is set), then sends each call back with its result,
// B first, and wants "done" for each (what: what the replay must carry). It returns the
// first answers.
func twoTicketsReplayed(t *testing.T, url, idPrefix, what string) map[string]openai.ChatCompletionMessage {
	t.Helper()
	b := setup(t, testConfig(url))
	first := map[string]openai.ChatCompletionMessage{}
	for _, ticket := range []string{"A", "B"} {
		resp, err := b.client.Chat(context.Background(), userMsg(ticket))
		if err != nil || len(resp.Message.ToolCalls) != 1 || idPrefix != "" && resp.Message.ToolCalls[0].ID != idPrefix+ticket {
			t.Fatalf("ticket %s: first call = %+v, %v; want one tool call (id %q)", ticket, resp.Message, err, idPrefix+ticket)
		}
		first[ticket] = resp.Message
	}
	for _, ticket := range []string{"B", "A"} {
		m := first[ticket]
		req := userMsg(ticket)
		req.Messages = append(req.Messages, m, openai.ChatCompletionMessage{Role: "tool", ToolCallID: m.ToolCalls[0].ID, Content: "=== a.py\nx = 1\n"})
		resp, err := b.client.Chat(context.Background(), req)
		if err != nil || resp.Message.Content != "done" {
			t.Errorf("ticket %s: replay = %q, %v; want %s", ticket, resp.Message.Content, err, what)
		}
	}
	return first
}
