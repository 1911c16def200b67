package model

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

func ptr[T any](v T) *T { return &v }

// TestEndpointOptions checks each per-endpoint option on the wire.
func TestEndpointOptions(t *testing.T) {
	t.Setenv("TICKETD_TEST_AZURE", "azure-secret-value")
	tests := []struct {
		name  string
		ep    Endpoint
		check func(t *testing.T, body map[string]any, h http.Header, query string)
	}{
		{"defaults", Endpoint{}, func(t *testing.T, body map[string]any, _ http.Header, _ string) {
			if body["max_completion_tokens"] == nil || body["max_tokens"] != nil || body["prompt_cache_key"] == nil || body["parallel_tool_calls"] != nil {
				t.Errorf("body = %v, want max_completion_tokens and prompt_cache_key only", body)
			}
		}},
		{"max_tokens", Endpoint{MaxTokensField: MaxTokensFieldMaxTokens}, func(t *testing.T, body map[string]any, _ http.Header, _ string) {
			if body["max_tokens"] != float64(32000) || body["max_completion_tokens"] != nil {
				t.Errorf("body = %v, want max_tokens 32000 only", body)
			}
		}},
		{"both", Endpoint{MaxTokensField: MaxTokensFieldBoth}, func(t *testing.T, body map[string]any, _ http.Header, _ string) {
			if body["max_tokens"] != float64(32000) || body["max_completion_tokens"] != float64(32000) {
				t.Errorf("body = %v, want both fields", body)
			}
		}},
		{"no cache key (NIM, Azure)", Endpoint{PromptCacheKey: ptr(false)}, func(t *testing.T, body map[string]any, _ http.Header, _ string) {
			if _, has := body["prompt_cache_key"]; has {
				t.Errorf("body = %v, want no prompt_cache_key", body)
			}
		}},
		{"openrouter headers and extra body", Endpoint{
			Headers:   map[string]string{"HTTP-Referer": "https://example.org/ticketd", "X-Title": "ticketd"},
			ExtraBody: map[string]any{"provider": map[string]any{"sort": "price"}, "model": "ignored?"},
		}, func(t *testing.T, body map[string]any, h http.Header, _ string) {
			if h.Get("HTTP-Referer") != "https://example.org/ticketd" || h.Get("X-Title") != "ticketd" {
				t.Errorf("headers = %v", h)
			}
			if p, _ := body["provider"].(map[string]any); p["sort"] != "price" || body["model"] != "gpt-4.1-mini" {
				t.Errorf("body = %v, want provider.sort and the role's model kept", body)
			}
		}},
		{"azure api-version and api-key", Endpoint{Query: map[string]string{"api-version": "2024-10-21"},
			HeaderEnv: map[string]string{"api-key": "TICKETD_TEST_AZURE"}, PromptCacheKey: ptr(false)},
			func(t *testing.T, _ map[string]any, h http.Header, query string) {
				if h.Get("api-key") != "azure-secret-value" || query != "api-version=2024-10-21" {
					t.Errorf("api-key %q, query %q", h.Get("api-key"), query)
				}
			}},
		{"parallel tool calls off", Endpoint{ParallelToolCalls: ptr(false)}, func(t *testing.T, body map[string]any, _ http.Header, _ string) {
			if v, has := body["parallel_tool_calls"]; !has || v != false {
				t.Errorf("body = %v, want parallel_tool_calls false", body)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var query string
			srv, log := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int, _ []byte) {
				query = r.URL.RawQuery
				writeJSON(w, 200, completion("ok", "stop", ""))
			})
			cfg := testConfig(srv.URL)
			if _, reserved := tt.ep.ExtraBody["model"]; reserved {
				if err := (Config{Endpoints: map[string]Endpoint{"x": tt.ep}}).Validate(); err == nil || !strings.Contains(err.Error(), "extra_body.model: ticketd sets this field itself") {
					t.Errorf("Validate = %v, want extra_body.model refused", err)
				}
				delete(tt.ep.ExtraBody, "model")
			}
			tt.ep.BaseURL = srv.URL + "/v1"
			cfg.Endpoints["local"] = tt.ep
			b := setup(t, cfg)
			req := userMsg("x")
			req.Tools = toolsForTest()
			if _, err := b.client.Chat(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			tt.check(t, log.body(t, 0), log.headers[0], query)
			if strings.Contains(b.logs.String(), "azure-secret-value") {
				t.Error("a header secret reached the log")
			}
		})
	}
}

func toolsForTest() []openai.Tool { return []openai.Tool{readFilesTool} }

// TestOptionValidation: strict config for the new options.
func TestOptionValidation(t *testing.T) {
	tests := []struct {
		ep   Endpoint
		rc   RoleConfig
		want string
	}{
		{ep: Endpoint{MaxTokensField: "max_output"}, want: `max_tokens_field: "max_output" is not`},
		{ep: Endpoint{Headers: map[string]string{"Authorization": "Bearer sk-123"}}, want: "headers.Authorization: looks like a secret"},
		{ep: Endpoint{Headers: map[string]string{"bad header": "x"}}, want: `headers: "bad header" is not a valid header name`},
		{ep: Endpoint{HeaderEnv: map[string]string{"api-key": "sk-live-123"}}, want: "header_env.api-key: \"sk-live-123\" is not an environment variable name"},
		{ep: Endpoint{ExtraBody: map[string]any{"max_tokens": 5}}, want: "extra_body.max_tokens: ticketd sets this field itself"},
		{rc: RoleConfig{Endpoint: "local", Model: "m", ContextWindow: 100}, want: "context_window: 100 tokens is too small"},
	}
	for _, tt := range tests {
		cfg := testConfig("http://127.0.0.1:1")
		tt.ep.BaseURL = "http://127.0.0.1:1/v1"
		cfg.Endpoints["local"] = tt.ep
		if tt.rc.Model != "" {
			cfg.Roles[RoleMaker] = tt.rc
		}
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate(%+v %+v) = %v, want %q", tt.ep, tt.rc, err, tt.want)
		}
	}
}

// TestContextWindow: the output limit is capped to the room the window leaves, and a
// prompt that leaves too little is an overflow before anything is sent.
func TestContextWindow(t *testing.T) {
	srv, log := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
		writeJSON(w, 200, completion("ok", "stop", ""))
	})
	cfg := testConfig(srv.URL)
	cfg.Roles[RoleMaker] = RoleConfig{Endpoint: "local", Model: "qwen", ContextWindow: 8192}
	b := setup(t, cfg)
	if _, err := b.client.Chat(context.Background(), userMsg("short")); err != nil {
		t.Fatal(err)
	}
	if got := log.body(t, 0)["max_completion_tokens"].(float64); got >= 8192 || got < 8000 {
		t.Errorf("max_completion_tokens = %v, want the window minus a short prompt", got)
	}
	_, err := b.client.Chat(context.Background(), userMsg(strings.Repeat("x", 4*8192)))
	if !errors.Is(err, ErrContextOverflow) || log.count() != 1 {
		t.Errorf("err = %v after %d requests, want ErrContextOverflow without sending", err, log.count())
	}
	if b.client.ContextWindow(RoleMaker) != 8192 {
		t.Errorf("ContextWindow = %d", b.client.ContextWindow(RoleMaker))
	}
}

// TestUsageAndCost: estimated usage when none is sent, the provider's own cost preferred
// with the price-table figure kept beside it.
func TestUsageAndCost(t *testing.T) {
	tests := []struct {
		name, usage  string
		model        string
		wantReported bool
		wantSource   string
		wantCost     float64 // -1: nil
		wantPrice    bool
	}{
		{"no usage, priced", ``, "gpt-4.1-mini", false, CostSourceEstimate, -2, true},
		{"zeros, priced", `,"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}`, "gpt-4.1-mini", false, CostSourceEstimate, -2, true},
		{"no usage, unpriced", ``, "local-model", false, CostSourceUnknown, -1, false},
		{"openrouter cost", `,"usage":{"prompt_tokens":1000,"completion_tokens":100,"cost":0.0123}`, "gpt-4.1-mini", true, CostSourceProvider, 0.0123, true},
		{"openrouter cost, unpriced model", `,"usage":{"prompt_tokens":1000,"completion_tokens":100,"cost":0.02}`, "anthropic/claude-sonnet-4", true, CostSourceProvider, 0.02, false},
		{"reported, priced", `,"usage":{"prompt_tokens":1000,"completion_tokens":100}`, "gpt-4.1-mini", true, CostSourcePriceTable, 0.00056, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
				writeJSON(w, 200, `{"choices":[{"message":{"role":"assistant","content":"`+strings.Repeat("a", 400)+`"},"finish_reason":"stop"}]`+tt.usage+`}`)
			})
			cfg := testConfig(srv.URL)
			cfg.Roles[RoleMaker] = RoleConfig{Endpoint: "local", Model: tt.model}
			b := setup(t, cfg)
			resp, err := b.client.Chat(context.Background(), userMsg(strings.Repeat("b", 4000)))
			if err != nil {
				t.Fatal(err)
			}
			c := b.rec.all()[0]
			if c.UsageEstimated == tt.wantReported || resp.UsageEstimated == tt.wantReported || c.CostSource != tt.wantSource {
				t.Errorf("estimated %v, source %q; want reported %v, %q", c.UsageEstimated, c.CostSource, tt.wantReported, tt.wantSource)
			}
			if !tt.wantReported && (c.Usage.PromptTokens < 1000 || c.Usage.CompletionTokens != 100) {
				t.Errorf("estimated usage = %+v, want >= 1000 prompt (4000-byte message) and 100 completion (400 bytes)", c.Usage)
			}
			switch {
			case tt.wantCost == -1 && c.CostUSD != nil:
				t.Errorf("cost = %v, want unknown", *c.CostUSD)
			case tt.wantCost == -2 && (c.CostUSD == nil || *c.CostUSD <= 0):
				t.Errorf("cost = %v, want a positive estimate", c.CostUSD)
			case tt.wantCost >= 0 && (c.CostUSD == nil || *c.CostUSD != tt.wantCost):
				t.Errorf("cost = %v, want %v", c.CostUSD, tt.wantCost)
			}
			if (c.PriceCostUSD != nil) != tt.wantPrice {
				t.Errorf("price-table cost = %v, want present: %v", c.PriceCostUSD, tt.wantPrice)
			}
		})
	}
}

// TestBreaker: a dead endpoint is marked down after Failures transport failures, later
// requests fail at once without being sent, and a probe after ProbeBase brings it back.
func TestBreaker(t *testing.T) {
	var dead atomic.Bool
	dead.Store(true)
	var seen []EndpointStatus
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if dead.Load() {
			writeJSON(w, 503, `{"error":{"message":"no healthy upstream"}}`)
			return
		}
		if r.URL.Path == "/v1/models" {
			writeJSON(w, 200, `{"object":"list","data":[{"id":"gpt-4.1-mini","object":"model"}]}`)
			return
		}
		writeJSON(w, 200, completion("ok", "stop", ""))
	}))
	t.Cleanup(srv.Close)
	cfg := testConfig(srv.URL)
	cfg.Retry.MaxRetries = 10
	cfg.Breaker = BreakerConfig{Failures: 3, ProbeBase: 30 * time.Second, ProbeMax: time.Minute}
	b := setup(t, cfg, WithEndpointObserver(func(s EndpointStatus) { seen = append(seen, s) }))

	_, err := b.client.Chat(context.Background(), userMsg("x"))
	if !errors.Is(err, ErrEndpointDown) || !errors.Is(err, ErrTransport) || !strings.Contains(err.Error(), "no healthy upstream") {
		t.Fatalf("err = %v, want ErrEndpointDown (and ErrTransport) with the server's words", err)
	}
	if rec := b.rec.all()[0]; rec.Retries != 2 {
		t.Errorf("retries = %d, want 2: the breaker stops the retries after 3 failures", rec.Retries)
	}
	down := b.client.Unavailable(context.Background())
	if len(down) != 1 || !down[0].Down || !strings.Contains(down[0].LastError, "no healthy upstream") || len(seen) != 1 {
		t.Fatalf("Unavailable = %+v, observer saw %+v; want local down with the last error", down, seen)
	}
	_, err = b.client.Chat(context.Background(), userMsg("x"))
	if !errors.Is(err, ErrEndpointDown) || !strings.Contains(err.Error(), "down since") {
		t.Errorf("second call err = %v, want a fast ErrEndpointDown", err)
	}
	dead.Store(false)
	if d := b.client.Unavailable(context.Background()); len(d) != 1 {
		t.Errorf("before the probe is due: %+v, want still down", d)
	}
	b.clock.Advance(31 * time.Second)
	if d := b.client.Unavailable(context.Background()); len(d) != 0 {
		t.Errorf("after a passing probe: %+v, want up", d)
	}
	if _, err := b.client.Chat(context.Background(), userMsg("x")); err != nil {
		t.Errorf("after recovery: %v", err)
	}
	if len(seen) != 2 || seen[1].Down {
		t.Errorf("observer saw %+v, want down then up", seen)
	}
}
