package model

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// TestAnswerShapes feeds answer shapes compatible servers really send and checks what the
// maker gets back, and that the next request replays it in a shape strict servers take.
func TestAnswerShapes(t *testing.T) {
	tests := []struct {
		name, source string
		message      string // the answer's message object
		wantContent  string
		wantArgs     string
		wantSynthID  bool
	}{
		{"tool call without id", "local servers (llama.cpp builds, LocalAI) that send no id; issue 10",
			`{"role":"assistant","content":null,"tool_calls":[{"type":"function","function":{"name":"read_files","arguments":"{\"paths\":[\"a.py\"]}"}}]}`,
			"", `{"paths":["a.py"]}`, true},
		{"content as parts", "OpenAI-style content parts from gateways; issue 10",
			`{"role":"assistant","content":[{"type":"text","text":"Hello, "},{"type":"text","text":"world."}]}`,
			"Hello, world.", "", false},
		{"arguments as object", "Ollama-style arguments object; issue 10",
			`{"role":"assistant","content":"","tool_calls":[{"id":"c9","function":{"name":"read_files","arguments":{"paths":["b.py"]}}}]}`,
			"", `{"paths":["b.py"]}`, false},
		{"vllm content null with tool calls", "vLLM tool calling: content null beside tool_calls",
			`{"role":"assistant","content":null,"reasoning_content":"think","tool_calls":[{"id":"chatcmpl-tool-1","type":"function","function":{"name":"read_files","arguments":"{}"}}]}`,
			"", `{}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, log, req, resp, err := chatAnswered(t, tt.message, "stop")
			if err != nil {
				t.Fatalf("Chat: %v (source: %s)", err, tt.source)
			}
			m := resp.Message
			if m.Content != tt.wantContent || len(m.MultiContent) != 0 {
				t.Errorf("content = %q (parts %v), want %q", m.Content, m.MultiContent, tt.wantContent)
			}
			if tt.wantArgs == "" {
				return
			}
			if len(m.ToolCalls) != 1 || m.ToolCalls[0].Function.Arguments != tt.wantArgs || m.ToolCalls[0].ID == "" || m.ToolCalls[0].Type != "function" {
				t.Fatalf("tool calls = %+v, want one with arguments %s, an id and type function", m.ToolCalls, tt.wantArgs)
			}
			if tt.wantSynthID && !regexp.MustCompile(`^[a-zA-Z0-9]{9}$`).MatchString(m.ToolCalls[0].ID) {
				t.Errorf("id = %q, want a synthetic id of 9 letters and digits", m.ToolCalls[0].ID)
			}
			// the same answer gets the same id (stable for the prompt cache)
			again, _ := b.client.Chat(context.Background(), req)
			if again.Message.ToolCalls[0].ID != m.ToolCalls[0].ID {
				t.Errorf("ids differ between identical answers: %q, %q", m.ToolCalls[0].ID, again.Message.ToolCalls[0].ID)
			}
			// replay: the assistant turn and the tool result carry the id
			next := req
			next.Messages = append(next.Messages, m, openai.ChatCompletionMessage{Role: "tool", ToolCallID: m.ToolCalls[0].ID, Content: "ok"})
			if _, err := b.client.Chat(context.Background(), next); err != nil {
				t.Fatal(err)
			}
			msgs := log.body(t, log.count()-1)["messages"].([]any)
			a, tool := msgs[1].(map[string]any), msgs[2].(map[string]any)
			calls := a["tool_calls"].([]any)
			id := calls[0].(map[string]any)["id"]
			if id != m.ToolCalls[0].ID || tool["tool_call_id"] != id || a["content"] != "" {
				t.Errorf("replayed %v / %v; want the id on both and content \"\"", a, tool)
			}
			if r, has := a["reasoning_content"]; has != (m.ReasoningContent != "") || has && r != m.ReasoningContent {
				t.Errorf("replayed %v; want the tool-calling turn's reasoning_content %q (DeepSeek's thinking mode answers 400 without it)", a, m.ReasoningContent)
			}
		})
	}
}

// TestReplayFillsToolCallID: a tool result recorded without an id is sent under the id of
// the assistant's tool call at the same position.
func TestReplayFillsToolCallID(t *testing.T) {
	in := `{"messages":[{"role":"assistant","tool_calls":[{"id":"a","index":0,"type":"function","function":{"name":"f","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"g","arguments":"{}"}}]},{"role":"tool","content":"1"},{"role":"tool","tool_call_id":"","content":"2"}]}`
	out, conv, err := rewriteChatBody([]byte(in), "", bodyOptions{})
	if err != nil || conv.turn != 3 || !conv.ids["a"] || !conv.ids["b"] {
		t.Fatalf("rewrite = %s, %+v, %v; want 3 messages and the ids a and b", out, conv, err)
	}
	var body struct {
		Messages []map[string]any `json:"messages"`
	}
	_ = json.Unmarshal(out, &body)
	if body.Messages[1]["tool_call_id"] != "a" || body.Messages[2]["tool_call_id"] != "b" || strings.Contains(string(out), `"index"`) {
		t.Errorf("rewritten = %s\nwant tool_call_id a then b, no index", out)
	}
}

func FuzzNormalizeAnswer(f *testing.F) {
	for _, s := range []string{
		`{"choices":[{"message":{"role":"assistant","content":[{"type":"text","text":"a"}]}}]}`,
		`{"choices":[{"message":{"tool_calls":[{"function":{"name":"f","arguments":{"a":1}}}]}}],"usage":{"prompt_tokens":3,"cost":0.1}}`,
		`{"error":{"code":502,"message":"x"}}`, `{"choices":null}`, `[]`, `{"timings":{"cache_n":5},"usage":{}}`,
		`{"created":1716313435.779,"choices":[]}`, `{"created":"today"}`, `{"created":1e300}`,
		`{"usage":{"total_tokens":1.5,"prompt_tokens":"3","prompt_tokens_details":[],"cost":"0.1"}}`, `{"usage":[]}`,
		`{"usage":{"completion_tokens_details":{"reasoning_tokens":2.0}}}`,
		`{"choices":[{"message":{"tool_calls":[null,{"id":"c1"},{"id":"c1"}]}},null]}`,
		`{"choices":[{"message":{"function_call":{"name":"f","arguments":{"a":1}}},"finish_reason":"function_call"},{"message":{"function_call":7,"tool_calls":[{"id":"c1"}]}}]}`,
		`{"choices":[{"message":{"reasoning_details":[{"type":"reasoning.encrypted","data":"s"}],"tool_calls":[{"id":"c1","function":{"name":1}},null]}},{"message":{"reasoning_details":null,"tool_calls":[]}}]}`,
		`{"choices":[{"finish_reason":"error","error":{"code":502,"message":"x"}},{"finish_reason":"MAX_TOKENS"}]}`,
		`{"choices":[{"finish_reason":"model_length","error":[1]},{"finish_reason":7}]}`,
	} {
		f.Add([]byte(s), 3)
	}
	f.Fuzz(func(t *testing.T, data []byte, turn int) {
		out, _ := normalizeAnswer(data, prior{turn: turn, ids: map[string]bool{"c1": true}})
		var resp openai.ChatCompletionResponse
		if json.Unmarshal(data, &resp) == nil && json.Unmarshal(out, &resp) != nil {
			t.Fatalf("normalising made a readable answer unreadable:\n%s\n->\n%s", data, out)
		}
	})
}

// TestCreatedNotInteger: servers that send created as something other than whole seconds
// are still read; go-openai alone refuses the whole answer over that one field.
func TestCreatedNotInteger(t *testing.T) {
	tests := []struct {
		name, source, created string
	}{
		{"fraction", "SambaNova, envoyproxy/ai-gateway#959; new-api#1131 (1748724739.7194004)", `1716313435.779`},
		{"whole float", "new-api#6165: 1783440046.0", `1783440046.0`},
		{"date string", "sashabaranov/go-openai#1002", `"2025/05/16 16:29:57"`},
		{"exponent", "a float printed by a JSON encoder", `1.716313435e9`},
		{"null", "fields left empty", `null`},
		{"integer", "OpenAI", `1716313435`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
				writeJSON(w, 200, `{"id":"x","object":"chat.completion","created":`+tt.created+`,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`)
			})
			b := setup(t, testConfig(srv.URL))
			resp, err := b.client.Chat(context.Background(), userMsg("fix it"))
			if err != nil {
				t.Fatalf("created %s: Chat: %v (source: %s)", tt.created, err, tt.source)
			}
			if resp.Message.Content != "done" || resp.Usage.PromptTokens != 10 || resp.UsageEstimated {
				t.Errorf("created %s: content %q, usage %+v (estimated %v); want \"done\" and the reported 10 prompt tokens",
					tt.created, resp.Message.Content, resp.Usage, resp.UsageEstimated)
			}
		})
	}
}

// TestUsageFieldOfTheWrongType: a usage block with one field of the wrong type keeps its
// well-typed fields, and the answer is read: neither the counts nor the answer are lost
// over a field ticketd may not even read.
func TestUsageFieldOfTheWrongType(t *testing.T) {
	tests := []struct {
		name, usage string
		want        Usage
		wantSource  string
	}{
		{"cost as a string", `{"prompt_tokens":1000,"completion_tokens":10,"prompt_tokens_details":{"cached_tokens":400},"cost":"0.01"}`,
			Usage{PromptTokens: 1000, CompletionTokens: 10, CachedTokens: 400}, CostSourcePriceTable},
		{"total_tokens as a float", `{"prompt_tokens":1000,"completion_tokens":10,"total_tokens":1010.0}`,
			Usage{PromptTokens: 1000, CompletionTokens: 10}, CostSourcePriceTable},
		{"counts as whole floats", `{"prompt_tokens":1000.0,"completion_tokens":10.0,"cost":0.02}`,
			Usage{PromptTokens: 1000, CompletionTokens: 10}, CostSourceProvider},
		{"cached_tokens as a string", `{"prompt_tokens":1000,"completion_tokens":10,"prompt_tokens_details":{"cached_tokens":"400"}}`,
			Usage{PromptTokens: 1000, CompletionTokens: 10}, CostSourcePriceTable},
		{"details as an array", `{"prompt_tokens":1000,"completion_tokens":10,"completion_tokens_details":[],"prompt_tokens_details":{"cached_tokens":400}}`,
			Usage{PromptTokens: 1000, CompletionTokens: 10, CachedTokens: 400}, CostSourcePriceTable},
		{"cache_n as a string", `{"prompt_tokens":1000,"completion_tokens":10,"cache_read_input_tokens":"x"}`,
			Usage{PromptTokens: 1000, CompletionTokens: 10}, CostSourcePriceTable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
				writeJSON(w, 200, completion("done", "stop", tt.usage))
			})
			b := setup(t, testConfig(srv.URL))
			resp, err := b.client.Chat(context.Background(), userMsg("fix it"))
			if err != nil {
				t.Fatalf("usage %s: Chat: %v", tt.usage, err)
			}
			rec := b.rec.all()[0]
			if resp.Message.Content != "done" || resp.Usage != tt.want || resp.UsageEstimated || rec.CostSource != tt.wantSource {
				t.Errorf("usage %s:\ngot content %q, usage %+v (estimated %v), cost source %s\nwant \"done\", %+v as reported, cost source %s",
					tt.usage, resp.Message.Content, resp.Usage, resp.UsageEstimated, rec.CostSource, tt.want, tt.wantSource)
			}
		})
	}
}

// TestToolCallIDsUnique: every tool call of a conversation gets an id of its own, even from
// a server that repeats ids within an answer or across answers (ids made from the tool's
// name, or counted from zero in each answer): each result is sent back under its own call,
// and a gateway to a provider that refuses repeated ids takes the conversation.
func TestToolCallIDsUnique(t *testing.T) {
	readCall := func(id, path string) string {
		return `{"id":"` + id + `","type":"function","function":{"name":"read_files","arguments":"{\"paths\":[\"` + path + `\"]}"}}`
	}
	earlier := openai.ChatCompletionMessage{Role: "assistant", ToolCalls: []openai.ToolCall{{ID: "call_0", Type: "function",
		Function: openai.FunctionCall{Name: "read_files", Arguments: `{"paths":["x.py"]}`}}}}
	tests := []struct {
		name, calls string
		history     []openai.ChatCompletionMessage
		keep        string // the id that is kept as the server sent it, "" for none
	}{
		{"the same id twice in one answer", readCall("call-read_files", "a.py") + "," + readCall("call-read_files", "b.py"), nil, "call-read_files"},
		{"an id of an earlier answer", readCall("call_0", "a.py") + "," + readCall("call_1", "b.py"),
			[]openai.ChatCompletionMessage{earlier, {Role: "tool", ToolCallID: "call_0", Content: "x"}}, "call_1"},
		{"a null call", `null,` + readCall("c1", "a.py"), nil, "c1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, log := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
				writeJSON(w, 200, `{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[`+tt.calls+`]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":5}}`)
			})
			b := setup(t, testConfig(srv.URL))
			req := userMsg("fix it")
			req.Messages = append(req.Messages, tt.history...)
			resp, err := b.client.Chat(context.Background(), req)
			if err != nil {
				t.Fatalf("tool calls [%s]: Chat: %v", tt.calls, err)
			}
			seen := map[string]bool{"call_0": len(tt.history) > 0}
			kept := ""
			for _, tc := range resp.Message.ToolCalls {
				if tc.ID == "" || seen[tc.ID] {
					t.Errorf("tool calls [%s] got %+v: id %q is empty or repeats an earlier one", tt.calls, resp.Message.ToolCalls, tc.ID)
				}
				seen[tc.ID] = true
				if tc.ID == tt.keep {
					kept = tc.ID
				}
			}
			if kept != tt.keep || len(resp.Message.ToolCalls) == 0 {
				t.Errorf("tool calls [%s] got %+v; want %q kept as sent", tt.calls, resp.Message.ToolCalls, tt.keep)
			}
			again, _ := b.client.Chat(context.Background(), req)
			for i := range again.Message.ToolCalls {
				if again.Message.ToolCalls[i].ID != resp.Message.ToolCalls[i].ID {
					t.Errorf("ids differ between identical answers: %+v, %+v", resp.Message.ToolCalls, again.Message.ToolCalls)
				}
			}
			// The replay carries each call and its result under the same, distinct id.
			next := req
			next.Messages = append(next.Messages, resp.Message)
			for _, tc := range resp.Message.ToolCalls {
				next.Messages = append(next.Messages, openai.ChatCompletionMessage{Role: "tool", ToolCallID: tc.ID, Content: "ok"})
			}
			if _, err := b.client.Chat(context.Background(), next); err != nil {
				t.Fatal(err)
			}
			msgs := log.body(t, log.count()-1)["messages"].([]any)
			var results []string
			for _, m := range msgs[len(msgs)-len(resp.Message.ToolCalls):] {
				results = append(results, m.(map[string]any)["tool_call_id"].(string))
			}
			for i, tc := range resp.Message.ToolCalls {
				if results[i] != tc.ID {
					t.Errorf("replayed results answer %v, want the calls' ids in order (%+v)", results, resp.Message.ToolCalls)
				}
			}
		})
	}
}

// TestReplayToolNames: a tool name a model invented ("functions.read_files", "", a long
// one), which ticketd answers as unknown, is replayed in the shape OpenAI's check takes
// (^[a-zA-Z0-9_-]{1,64}$), in the call and in its result, the same way every time; a
// valid name is replayed as it is.
func TestReplayToolNames(t *testing.T) {
	valid := regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	for _, name := range []string{"functions.read_files", "repo_browser.open_file", "", "read files", strings.Repeat("x", 80), "grép", "read_files"} {
		call := map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": name, "arguments": "{}"}}
		body, _ := json.Marshal(map[string]any{"messages": []any{
			map[string]any{"role": "assistant", "content": "", "tool_calls": []any{call}},
			map[string]any{"role": "tool", "tool_call_id": "c1", "name": name, "content": "error: unknown tool"},
		}})
		out, _, err := rewriteChatBody(body, "", bodyOptions{})
		again, _, _ := rewriteChatBody(body, "", bodyOptions{})
		if err != nil || string(out) != string(again) {
			t.Fatalf("name %q: rewrite = %s, %v; want the same body every time", name, out, err)
		}
		var got struct {
			Messages []struct {
				Name      string `json:"name"`
				ToolCalls []struct {
					Function struct {
						Name string `json:"name"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(out, &got)
		callName, resultName := got.Messages[0].ToolCalls[0].Function.Name, got.Messages[1].Name
		if !valid.MatchString(callName) || callName != resultName || valid.MatchString(name) && callName != name {
			t.Errorf("name %q replayed as %q in the call and %q in the result; want one name matching %s, the same when it already does",
				name, callName, resultName, valid)
		}
	}
}

// TestReplayReasoningContent: reasoning_content is replayed on the turns that called tools,
// which DeepSeek's thinking mode refuses a conversation without (400 "Missing
// reasoning_content field"), in every later request; it is dropped everywhere else, where
// DeepSeek ignores it and deepseek-reasoner (R1) refuses it.
func TestReplayReasoningContent(t *testing.T) {
	in := `{"messages":[` +
		`{"role":"user","content":"fix it"},` +
		`{"role":"assistant","content":"","reasoning_content":"read first","tool_calls":[{"id":"a","type":"function","function":{"name":"read_files","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"a","content":"x"},` +
		`{"role":"assistant","content":"done","reasoning_content":"no call"},` +
		`{"role":"user","content":"Use the tools."},` +
		`{"role":"assistant","content":"","reasoning_content":"edit now","tool_calls":[{"id":"b","type":"function","function":{"name":"edit_file","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"b","content":"y","reasoning_content":"stray"}]}`
	out, _, err := rewriteChatBody([]byte(in), "", bodyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Messages []map[string]any `json:"messages"`
	}
	_ = json.Unmarshal(out, &body)
	want := []any{nil, "read first", nil, nil, nil, "edit now", nil}
	for i, m := range body.Messages {
		if m["reasoning_content"] != want[i] {
			t.Errorf("message %d replayed as %v; want reasoning_content %v", i, m, want[i])
		}
	}
}

// chatAnswered starts a server that answers every request with the message object message
// (finish_reason finish) and asks it once: the client's bundle, the server's log, the
// request and its answer.
func chatAnswered(t *testing.T, message, finish string) (bundle, *wireLog, Request, Response, error) {
	t.Helper()
	srv, log := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
		writeJSON(w, 200, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":`+message+`,"finish_reason":"`+finish+`"}],"usage":{"prompt_tokens":10,"completion_tokens":5}}`)
	})
	b := setup(t, testConfig(srv.URL))
	req := userMsg("fix it")
	resp, err := b.client.Chat(context.Background(), req)
	return b, log, req, resp, err
}

// TestLegacyFunctionCall: an answer that makes its call in the legacy function_call field (no
// tool_calls) is read as that one tool call, so the maker's call is not lost; beside
// tool_calls it is dropped. The replay carries the call under an id its result answers, and
// no function_call.
func TestLegacyFunctionCall(t *testing.T) {
	tests := []struct {
		name, source, message, finish string
		wantArgs, wantFinish          string
		wantID                        string // "" for a synthetic one
	}{
		{"function_call alone", "MeetKai/functionary#243: Functionary's vLLM server answers a tools request with function_call and finish_reason function_call",
			`{"role":"assistant","tool_call_id":null,"content":null,"name":null,"function_call":{"name":"read_files","arguments":"{\"paths\": [\"a.py\"]}"},"tool_calls":null}`,
			"function_call", `{"paths": ["a.py"]}`, "tool_calls", ""},
		{"function_call with arguments as an object", "the same shape from a server that sends arguments as an object (Ollama's habit)",
			`{"role":"assistant","content":"","function_call":{"name":"read_files","arguments":{"paths":["a.py"]}}}`,
			"stop", `{"paths":["a.py"]}`, "stop", ""},
		{"function_call beside tool_calls", "MeetKai/functionary#156: llama-cpp-python's functionary format sends both",
			`{"role":"assistant","content":null,"function_call":{"name":"read_files","arguments":"{\"paths\":[\"a.py\"]}"},"tool_calls":[{"id":"call_x","type":"function","function":{"name":"read_files","arguments":"{\"paths\":[\"a.py\"]}"}}]}`,
			"tool_calls", `{"paths":["a.py"]}`, "tool_calls", "call_x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, log, req, resp, err := chatAnswered(t, tt.message, tt.finish)
			if err != nil {
				t.Fatalf("message %s: Chat: %v (source: %s)", tt.message, err, tt.source)
			}
			m := resp.Message
			if len(m.ToolCalls) != 1 || m.ToolCalls[0].Function.Name != "read_files" || m.ToolCalls[0].Function.Arguments != tt.wantArgs ||
				m.ToolCalls[0].ID == "" || tt.wantID != "" && m.ToolCalls[0].ID != tt.wantID || m.ToolCalls[0].Type != "function" || m.FunctionCall != nil {
				t.Fatalf("message %s (%s)\ngot tool calls %+v, function call %+v\nwant one read_files call with arguments %s, an id and type function, and no function call",
					tt.message, tt.source, m.ToolCalls, m.FunctionCall, tt.wantArgs)
			}
			if resp.FinishReason != tt.wantFinish {
				t.Errorf("finish reason %q (sent %q), want %q", resp.FinishReason, tt.finish, tt.wantFinish)
			}
			next := req
			next.Messages = append(next.Messages, m, openai.ChatCompletionMessage{Role: "tool", ToolCallID: m.ToolCalls[0].ID, Content: "ok"})
			if _, err := b.client.Chat(context.Background(), next); err != nil {
				t.Fatal(err)
			}
			msgs := log.body(t, log.count()-1)["messages"].([]any)
			a, tool := msgs[1].(map[string]any), msgs[2].(map[string]any)
			calls, _ := a["tool_calls"].([]any)
			if _, has := a["function_call"]; has || len(calls) != 1 || calls[0].(map[string]any)["id"] != tool["tool_call_id"] {
				t.Errorf("replayed %v / %v; want the one call with the id its result answers, and no function_call", a, tool)
			}
		})
	}
}

// TestSyntheticIDsTakenByMistral: the id ticketd gives a tool call that came without one is
// one that the strictest replay check takes: Mistral's API, and the Mistral chat templates
// and tokenizers local servers run, refuse a history holding a tool call id that is not
// exactly 9 letters and digits ("Tool call id was call_49c89af0 but must be a-z, A-Z, 0-9,
// with a length of 9": jundot/omlx#1997, langchain-ai/langchain#24668).
func TestSyntheticIDsTakenByMistral(t *testing.T) {
	valid := regexp.MustCompile(`^[a-zA-Z0-9]{9}$`)
	srv, _ := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int, body []byte) {
		var req struct {
			Messages []struct {
				ToolCalls []struct {
					ID string `json:"id"`
				} `json:"tool_calls"`
				ToolCallID string `json:"tool_call_id"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(body, &req)
		replay := false
		for _, m := range req.Messages {
			ids := []string{m.ToolCallID}
			for _, c := range m.ToolCalls {
				ids = append(ids, c.ID)
			}
			for _, id := range ids {
				if id != "" && !valid.MatchString(id) {
					writeJSON(w, 400, `{"object":"error","message":"Tool call id was `+id+` but must be a-z, A-Z, 0-9, with a length of 9.","type":"invalid_function_call","param":null,"code":"3280"}`)
					return
				}
				replay = replay || id != ""
			}
		}
		if replay {
			writeJSON(w, 200, completion("done", "stop", ""))
			return
		}
		// A local server that sends its calls without ids.
		writeJSON(w, 200, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"","tool_calls":[`+
			`{"type":"function","function":{"name":"read_files","arguments":"{\"paths\":[\"a.py\"]}"}},`+
			`{"type":"function","function":{"name":"read_files","arguments":"{\"paths\":[\"b.py\"]}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":5}}`)
	})
	b := setup(t, testConfig(srv.URL))
	req := userMsg("fix it")
	resp, err := b.client.Chat(context.Background(), req)
	if err != nil || len(resp.Message.ToolCalls) != 2 || resp.Message.ToolCalls[0].ID == resp.Message.ToolCalls[1].ID {
		t.Fatalf("first answer = %+v, %v; want two calls with distinct ids", resp.Message.ToolCalls, err)
	}
	next := req
	next.Messages = append(next.Messages, resp.Message)
	for _, tc := range resp.Message.ToolCalls {
		next.Messages = append(next.Messages, openai.ChatCompletionMessage{Role: "tool", ToolCallID: tc.ID, Content: "ok"})
	}
	if again, err := b.client.Chat(context.Background(), next); err != nil || again.Message.Content != "done" {
		t.Errorf("replay of calls %+v = %q, %v; want synthetic ids of 9 letters and digits, which Mistral takes", resp.Message.ToolCalls, again.Message.Content, err)
	}
}
