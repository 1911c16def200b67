package model

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

func TestContinuation(t *testing.T) {
	tests := []struct {
		name       string
		chunks     []string // answers in order; all but the last end in "length"
		lastFinish string
		maxCont    int
		wantText   string
		wantFinish string
		wantCont   int
		wantReqs   int
	}{
		{"merged after two cuts", []string{"Hello, ", "wor", "ld."}, "stop", 0, "Hello, world.", "stop", 2, 3},
		{"bounded", []string{"a", "b", "c", "d"}, "stop", 2, "abc", "length", 2, 3},
		{"disabled", []string{"a", "b"}, "stop", -1, "a", "length", 0, 1},
		{"no cut", []string{"whole"}, "stop", 0, "whole", "stop", 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, log := newServer(t, func(w http.ResponseWriter, _ *http.Request, n int, _ []byte) {
				finish := "length"
				if n == len(tt.chunks)-1 {
					finish = tt.lastFinish
				}
				writeJSON(w, 200, completion(tt.chunks[n], finish, `{"prompt_tokens": 100, "completion_tokens": 10}`))
			})
			cfg := testConfig(srv.URL)
			cfg.MaxContinuations = tt.maxCont
			b := setup(t, cfg)
			resp, err := b.client.Chat(context.Background(), userMsg("write"))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Message.Content != tt.wantText || resp.FinishReason != tt.wantFinish {
				t.Errorf("answer = %q (%s), want %q (%s)", resp.Message.Content, resp.FinishReason, tt.wantText, tt.wantFinish)
			}
			if n := log.count(); n != tt.wantReqs {
				t.Errorf("requests = %d, want %d", n, tt.wantReqs)
			}
			wantUsage := Usage{PromptTokens: int64(100 * tt.wantReqs), CompletionTokens: int64(10 * tt.wantReqs)}
			if resp.Usage != wantUsage {
				t.Errorf("usage = %+v, want the sum %+v", resp.Usage, wantUsage)
			}
			rec := b.rec.all()[0]
			if rec.Continuations != tt.wantCont || rec.FinishReason != tt.wantFinish || rec.Usage != wantUsage {
				t.Errorf("recorded %+v, want %d continuations, finish %s", rec, tt.wantCont, tt.wantFinish)
			}
			if tt.wantReqs > 1 {
				msgs := log.body(t, 1)["messages"].([]any)
				last2 := msgs[len(msgs)-2:]
				a, u := last2[0].(map[string]any), last2[1].(map[string]any)
				if a["role"] != "assistant" || a["content"] != tt.chunks[0] || u["role"] != "user" || u["content"] != continuePrompt {
					t.Errorf("continuation request ends with %v, want the partial answer then the continue prompt", last2)
				}
			}
		})
	}
}

// TestNoContinuationOfToolCalls: cut tool-call arguments cannot be resumed; the answer
// is handed back as it is.
func TestNoContinuationOfToolCalls(t *testing.T) {
	srv, log := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
		writeJSON(w, 200, `{"choices":[{"message":{"role":"assistant","content":"x","tool_calls":[{"id":"c1","type":"function","function":{"name":"write_file","arguments":"{\"path\":\"a.py\",\"content\":\"de"}}]},"finish_reason":"length"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`)
	})
	b := setup(t, testConfig(srv.URL))
	resp, err := b.client.Chat(context.Background(), userMsg("x"))
	if err != nil || resp.FinishReason != "length" || len(resp.Message.ToolCalls) != 1 || log.count() != 1 {
		t.Errorf("Chat = %+v, %v after %d requests; want the cut tool call back after 1", resp, err, log.count())
	}
}

// TestUsageNilSafety feeds the usage shapes real servers send.
func TestUsageNilSafety(t *testing.T) {
	tests := []struct {
		name  string
		usage string
		want  Usage
	}{
		{"local server, no details", `{"prompt_tokens": 1200, "completion_tokens": 80, "total_tokens": 1280}`,
			Usage{PromptTokens: 1200, CompletionTokens: 80}},
		{"details null", `{"prompt_tokens": 5, "completion_tokens": 2, "prompt_tokens_details": null, "completion_tokens_details": null}`,
			Usage{PromptTokens: 5, CompletionTokens: 2}},
		{"openai with cache and reasoning", `{"prompt_tokens": 2048, "completion_tokens": 900, "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0}, "completion_tokens_details": {"reasoning_tokens": 640}}`,
			Usage{PromptTokens: 2048, CachedTokens: 1920, CompletionTokens: 900, ReasoningTokens: 640}},
		{"openrouter cache writes", `{"prompt_tokens": 3000, "completion_tokens": 10, "prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 2900}}`,
			Usage{PromptTokens: 3000, CacheWriteTokens: 2900, CompletionTokens: 10}},
		{"anthropic-style cache creation", `{"prompt_tokens": 3000, "completion_tokens": 10, "cache_creation_input_tokens": 2500}`,
			Usage{PromptTokens: 3000, CacheWriteTokens: 2500, CompletionTokens: 10}},
		{"deepseek cache hits", `{"prompt_tokens": 1000, "completion_tokens": 10, "prompt_cache_hit_tokens": 768, "prompt_cache_miss_tokens": 232}`,
			Usage{PromptTokens: 1000, CachedTokens: 768, CompletionTokens: 10}},
		// xAI counts reasoning beside completion_tokens (total = prompt + completion +
		// reasoning; docs.x.ai consumption-and-rate-limits, vercel/ai#12425,
		// Wei-Shaw/sub2api#5771 with these figures): billed as output all the same.
		{"xai reasoning beside completion", `{"prompt_tokens": 10120, "completion_tokens": 1499, "total_tokens": 14428, "prompt_tokens_details": {"cached_tokens": 128}, "completion_tokens_details": {"reasoning_tokens": 2809}}`,
			Usage{PromptTokens: 10120, CachedTokens: 128, CompletionTokens: 1499 + 2809, ReasoningTokens: 2809}},
		{"xai grok-3-mini, no total", `{"prompt_tokens": 12, "completion_tokens": 2, "completion_tokens_details": {"reasoning_tokens": 317}}`,
			Usage{PromptTokens: 12, CompletionTokens: 2 + 317, ReasoningTokens: 317}},
		// A broken or hostile server's negative counts would lower the night's spend.
		{"negative counts", `{"prompt_tokens": 50, "completion_tokens": -100, "total_tokens": -50, "prompt_tokens_details": {"cached_tokens": -7}, "completion_tokens_details": {"reasoning_tokens": -3}}`,
			Usage{PromptTokens: 50}},
		{"openai reasoning inside completion, with total", `{"prompt_tokens": 100, "completion_tokens": 900, "total_tokens": 1000, "completion_tokens_details": {"reasoning_tokens": 640}}`,
			Usage{PromptTokens: 100, CompletionTokens: 900, ReasoningTokens: 640}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
				writeJSON(w, 200, completion("ok", "stop", tt.usage))
			})
			b := setup(t, testConfig(srv.URL))
			resp, err := b.client.Chat(context.Background(), userMsg("x"))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Usage != tt.want {
				t.Errorf("usage from %s = %+v, want %+v", tt.usage, resp.Usage, tt.want)
			}
			wantCost := Cost(defaultPrices["gpt-4.1-mini"], tt.want)
			if resp.CostUSD == nil || *resp.CostUSD != wantCost {
				t.Errorf("cost = %v, want %v", resp.CostUSD, wantCost)
			}
		})
	}
}

// TestUnknownModelCost: an unpriced model's cost is nil, never zero, with one warning per
// model however many calls.
func TestUnknownModelCost(t *testing.T) {
	srv, _ := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
		writeJSON(w, 200, completion("ok", "stop", ""))
	})
	cfg := testConfig(srv.URL)
	cfg.Roles[RoleMaker] = RoleConfig{Endpoint: "local", Model: "qwen3-coder-local"}
	b := setup(t, cfg)
	for range 3 {
		resp, err := b.client.Chat(context.Background(), userMsg("x"))
		if err != nil || resp.CostUSD != nil {
			t.Fatalf("Chat = cost %v, %v; want nil cost", resp.CostUSD, err)
		}
	}
	// a priced role alongside stays priced
	resp, err := b.client.Chat(context.Background(), Request{Role: RoleJudge, Messages: userMsg("x").Messages})
	if err != nil || resp.CostUSD == nil {
		t.Fatalf("judge cost = %v, %v; want a price", resp.CostUSD, err)
	}
	for _, c := range b.rec.all()[:3] {
		if c.CostUSD != nil || c.Model != "qwen3-coder-local" || c.Usage.PromptTokens != 100 {
			t.Errorf("recorded %+v, want nil cost with the usage kept", c)
		}
	}
	if n := strings.Count(b.logs.String(), "model has no price"); n != 1 {
		t.Errorf("price warnings = %d, want 1:\n%s", n, b.logs)
	}
}

// TestRecordedCall checks the record of a plain successful call field by field.
func TestRecordedCall(t *testing.T) {
	srv, _ := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
		writeJSON(w, 200, completion(`{"verdict":"pass","unmet":[],"reason":"ok"}`, "stop",
			`{"prompt_tokens": 10000, "completion_tokens": 1000, "prompt_tokens_details": {"cached_tokens": 8000}}`))
	})
	cfg := testConfig(srv.URL)
	cfg.Roles[RoleJudge] = RoleConfig{Endpoint: "local", Model: "gpt-4.1"}
	b := setup(t, cfg)
	resp, err := b.client.Chat(context.Background(), Request{Role: RoleJudge, TicketID: 42, Attempt: 2, JSON: true,
		Messages: []openai.ChatCompletionMessage{{Role: "system", Content: "ticketd role: judge"}}})
	if err != nil {
		t.Fatal(err)
	}
	var verdict map[string]any
	if err := json.Unmarshal([]byte(resp.Message.Content), &verdict); err != nil || verdict["verdict"] != "pass" {
		t.Errorf("content = %q, want the judge JSON", resp.Message.Content)
	}
	got := b.rec.all()[0]
	if got.TicketID != 42 || got.Attempt != 2 || got.Role != RoleJudge || got.Model != "gpt-4.1" || got.Endpoint != "local" ||
		got.FinishReason != "stop" || got.ErrorClass != "" || got.StartedAt.IsZero() || got.CostUSD == nil || *got.CostUSD != 0.016 {
		t.Errorf("recorded %+v, want ticket 42 attempt 2 judge gpt-4.1 local stop cost 0.016", got)
	}
}
