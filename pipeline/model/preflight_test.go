package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// preflightReqs are requests shaped like the pipeline's: a fixed system prompt per role, the
// maker with a tool, the others asking for JSON.
func preflightReqs() []Request {
	var out []Request
	for _, r := range Roles {
		req := Request{Role: r, JSON: r != RoleMaker, PrefixVersion: "p1", Messages: []openai.ChatCompletionMessage{
			{Role: "system", Content: "ticketd role: " + string(r) + "\n" + strings.Repeat("fixed instructions. ", 200)},
			{Role: "user", Content: "ticketd preflight: answer with the JSON object {\"ok\": true}"},
		}}
		if r == RoleMaker {
			req.Tools = []openai.Tool{{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: "read_files", Parameters: json.RawMessage(`{"type":"object"}`)}}}
		}
		out = append(out, req)
	}
	return out
}

// TestPreflightShapes runs the preflight against servers of the shapes operators meet; each
// must end as a usable endpoint or as an error naming the role, the server's words, the
// status as sent and the setting to change, before any ticket is claimed.
func TestPreflightShapes(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	deadURL := closed.URL
	closed.Close()
	var flaky atomic.Int64
	var warming sync.Map
	tests := []struct {
		name     string
		handler  func(w http.ResponseWriter, r *http.Request, body map[string]any)
		url      string
		edit     func(*Config)
		wantErr  error // nil: passes
		want     []string
		maxCalls int64 // 0: unchecked
	}{
		{name: "healthy", handler: func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
			writeJSON(w, 200, completion(`{"ok": true}`, "stop", ""))
		}},
		{name: "unreachable for the whole wait", url: deadURL, wantErr: ErrTransport,
			want: []string{"preflight of models.roles.", "connection refused", "models.preflight_wait 5m0s"}},
		{name: "refused key", handler: func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
			writeJSON(w, 401, `{"error":{"message":"Invalid API key in request","type":"invalid_request_error","code":"invalid_api_key"}}`)
		}, wantErr: ErrRejected, want: []string{"HTTP 401", "Invalid API key in request"}},
		{name: "NIM rejects prompt_cache_key", handler: func(w http.ResponseWriter, _ *http.Request, body map[string]any) {
			if _, ok := body["prompt_cache_key"]; ok {
				writeJSON(w, 400, `{"error":{"message":"Unrecognized request argument supplied: prompt_cache_key","type":"invalid_request_error"}}`)
				return
			}
			writeJSON(w, 200, completion("ok", "stop", ""))
		}, wantErr: ErrRejected, want: []string{"HTTP 400", "Unrecognized request argument supplied: prompt_cache_key", "set models.endpoints.local.prompt_cache_key: false"}},
		{name: "NIM with prompt_cache_key false", handler: func(w http.ResponseWriter, _ *http.Request, body map[string]any) {
			if _, ok := body["prompt_cache_key"]; ok {
				writeJSON(w, 400, `{"error":{"message":"Unrecognized request argument supplied: prompt_cache_key"}}`)
				return
			}
			writeJSON(w, 200, completion("ok", "stop", ""))
		}, edit: func(c *Config) {
			off := false
			ep := c.Endpoints["local"]
			ep.PromptCacheKey = &off
			c.Endpoints["local"] = ep
		}},
		{name: "model without tool support (maker only)", handler: func(w http.ResponseWriter, _ *http.Request, body map[string]any) {
			if _, ok := body["tools"]; ok {
				writeJSON(w, 400, `{"error":{"message":"registry.ollama.ai/library/gemma:2b does not support tools","type":"api_error"}}`)
				return
			}
			writeJSON(w, 200, completion("ok", "stop", ""))
		}, wantErr: ErrRejected, want: []string{"models.roles.maker", "does not support tools", "models.roles.maker.model must support tool calls"}},
		{name: "SSE only", handler: func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"id\":\"x\",\"choices\":[{\"delta\":{\"content\":\"ok\"}}]}\n\ndata: [DONE]\n\n")
		}, wantErr: ErrBadResponse, want: []string{"streamed", "stream: false", "HTTP 200"}},
		{name: "empty choices for the whole wait", handler: func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
			writeJSON(w, 200, `{"id":"x","object":"chat.completion","choices":[],"usage":{"prompt_tokens":900,"completion_tokens":0}}`)
		}, edit: func(c *Config) { c.PreflightWait = time.Minute }, wantErr: ErrTransport,
			want: []string{"no choices", "HTTP 200", "warms up", "models.preflight_wait 1m0s"}},
		{name: "200 carrying an error", handler: func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
			writeJSON(w, 200, `{"error":"Unexpected endpoint or method. (POST /chat/completions)"}`)
		}, wantErr: ErrRejected, want: []string{"HTTP 200 carrying an error (code 404)", "Unexpected endpoint or method"}},
		{name: "unparseable body", handler: func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<!doctype html><html><body><h1>Welcome to the portal</h1>"+strings.Repeat("x", 1000)+"</body></html>")
		}, wantErr: ErrBadResponse, want: []string{"not a JSON chat completion", "Welcome to the portal", "base_url"}},
		{name: "tiny context", handler: func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
			writeJSON(w, 400, `{"object":"error","message":"This model's maximum context length is 2048 tokens. However, you requested 33100 tokens (1100 in the messages, 32000 in the completion).","type":"BadRequestError","code":400}`)
		}, wantErr: ErrContextOverflow, want: []string{"maximum context length is 2048 tokens", "context_window"}},
		{name: "429 then up", handler: func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
			if flaky.Add(1) <= 4 {
				w.Header().Set("Retry-After", "2")
				writeJSON(w, 429, `{"error":{"message":"Rate limit reached","code":"rate_limit_exceeded"}}`)
				return
			}
			writeJSON(w, 200, completion("ok", "stop", ""))
		}},
		{name: "empty choices while the model warms up", handler: func(w http.ResponseWriter, _ *http.Request, body map[string]any) {
			// Each role's first answer is empty (OpenRouter, a model warming up).
			if _, seen := warming.LoadOrStore(fmt.Sprint(body["messages"]), true); !seen {
				writeJSON(w, 200, `{"id":"gen-1","object":"chat.completion","choices":[],"usage":{"prompt_tokens":900,"completion_tokens":0}}`)
				return
			}
			writeJSON(w, 200, completion("ok", "stop", ""))
		}},
		{name: "503 for the whole wait", handler: func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
			writeJSON(w, 503, `{"error":{"message":"upstream unavailable: all replicas down"}}`)
		}, edit: func(c *Config) { c.PreflightWait = time.Minute }, wantErr: ErrTransport,
			want: []string{"all replicas down", "HTTP 503", "models.preflight_wait 1m0s"}},
		{name: "out of credit", handler: func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
			writeJSON(w, 402, `{"error":{"code":402,"message":"Insufficient credits. Add more using https://openrouter.ai/settings/credits"}}`)
		}, wantErr: ErrQuota, want: []string{"Insufficient credits", "HTTP 402"}, maxCalls: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := tt.url
			var calls atomic.Int64
			if tt.handler != nil {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					calls.Add(1)
					raw, _ := io.ReadAll(r.Body)
					var body map[string]any
					_ = json.Unmarshal(raw, &body)
					tt.handler(w, r, body)
				}))
				t.Cleanup(srv.Close)
				url = srv.URL
			}
			cfg := testConfig(url)
			if tt.edit != nil {
				tt.edit(&cfg)
			}
			b := setup(t, cfg)
			err := b.client.Preflight(context.Background(), preflightReqs())
			t.Logf("err: %v", err)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Preflight = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Preflight = %v, want %v", err, tt.wantErr)
			}
			var f *Fault
			if !errors.As(err, &f) {
				t.Errorf("Preflight = %v: carries no *Fault", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Preflight = %v\nwant %q", err, w)
				}
			}
			if tt.maxCalls > 0 && calls.Load() > tt.maxCalls {
				t.Errorf("%d requests; a refusal is not retried (want at most %d, one per role)", calls.Load(), tt.maxCalls)
			}
			if len(b.rec.all()) != 0 {
				t.Errorf("preflight recorded %d calls, want none (they belong to no ticket)", len(b.rec.all()))
			}
		})
	}
}

// TestPreflightSendsTheNightsShape: the preflight request of each role is the night's: the
// maker's tools, JSON mode for the others, the output limit and its field, the cache key,
// the endpoint's headers, query and extra body.
func TestPreflightSendsTheNightsShape(t *testing.T) {
	srv, log := newServerAnyPath(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
		writeJSON(w, 200, completion("ok", "stop", ""))
	})
	cfg := testConfig(srv.URL)
	ep := cfg.Endpoints["local"]
	ep.Headers = map[string]string{"X-Title": "ticketd"}
	ep.Query = map[string]string{"api-version": "2024-10-21"}
	ep.ExtraBody = map[string]any{"provider": map[string]any{"sort": "price"}}
	ep.MaxTokensField = MaxTokensFieldMaxTokens
	cfg.Endpoints["local"] = ep
	b := setup(t, cfg)
	if err := b.client.Preflight(context.Background(), preflightReqs()); err != nil {
		t.Fatal(err)
	}
	if log.count() != len(Roles) {
		t.Fatalf("%d requests, want one per role", log.count())
	}
	seen := map[string]bool{}
	for i := range log.count() {
		body := log.body(t, i)
		msgs := body["messages"].([]any)
		role := strings.TrimPrefix(strings.SplitN(msgs[0].(map[string]any)["content"].(string), "\n", 2)[0], "ticketd role: ")
		seen[role] = true
		_, tools := body["tools"]
		_, jsonMode := body["response_format"]
		if (role == "maker") != tools || (role == "maker") == jsonMode {
			t.Errorf("%s: tools %v, response_format %v; want tools only for the maker, JSON for the others", role, tools, jsonMode)
		}
		want := float64(DefaultMaxOutput)
		if role == "maker" {
			want = DefaultMakerMaxOutput
		}
		if body["max_tokens"] != want || body["max_completion_tokens"] != nil {
			t.Errorf("%s: max_tokens %v, max_completion_tokens %v; want the night's limit %v under max_tokens_field", role, body["max_tokens"], body["max_completion_tokens"], want)
		}
		if k, _ := body["prompt_cache_key"].(string); k != "ticketd-"+role+"-p1" {
			t.Errorf("%s: prompt_cache_key %q, want the night's key", role, k)
		}
		if body["provider"] == nil {
			t.Errorf("%s: extra_body missing", role)
		}
		if h := log.headers[i].Get("X-Title"); h != "ticketd" {
			t.Errorf("%s: header X-Title %q", role, h)
		}
	}
	if len(seen) != len(Roles) {
		t.Errorf("roles seen %v, want all four", seen)
	}
	if q := log.queries(); !strings.Contains(q, "api-version=2024-10-21") {
		t.Errorf("queries %q, want api-version", q)
	}
}

// newServerAnyPath is newServer that also records the query of each request.
func newServerAnyPath(t *testing.T, h func(w http.ResponseWriter, r *http.Request, n int, body []byte)) (*httptest.Server, *queryLog) {
	t.Helper()
	log := &queryLog{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		n := log.add(body, r.Header)
		log.mu.Lock()
		log.q = append(log.q, r.URL.RawQuery)
		log.mu.Unlock()
		h(w, r, n, body)
	}))
	t.Cleanup(srv.Close)
	return srv, log
}

type queryLog struct {
	wireLog
	q []string
}

func (l *queryLog) queries() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.q, " ")
}

// TestTimeoutNamesTheSetting: a request abandoned on the endpoint's time-out says which
// setting bounds it and its value, and is counted with an estimated prompt and an unknown
// completion: the server may have finished and billed it.
func TestTimeoutNamesTheSetting(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	srv, _ := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int, _ []byte) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	cfg := testConfig(srv.URL)
	ep := cfg.Endpoints["local"]
	ep.Timeout = 50 * time.Millisecond
	cfg.Endpoints["local"] = ep
	cfg.Retry.MaxRetries = 1
	b := setup(t, cfg)
	_, err := b.client.Chat(context.Background(), userMsg(strings.Repeat("a long prompt ", 100)))
	if !errors.Is(err, ErrTransport) || !strings.Contains(err.Error(), "models.endpoints.local.timeout") || !strings.Contains(err.Error(), "50ms") {
		t.Fatalf("err = %v\nwant a transport error naming models.endpoints.local.timeout and 50ms", err)
	}
	recs := b.rec.all()
	if len(recs) != 1 || !recs[0].UsageEstimated || !recs[0].CompletionUnknown || recs[0].Usage.PromptTokens < 2*300 || recs[0].Usage.CompletionTokens != 0 {
		t.Errorf("recorded %+v\nwant the two abandoned requests' prompts estimated, completion unknown", recs)
	}
	if recs[0].CostUSD == nil || *recs[0].CostUSD <= 0 || recs[0].CostSource != CostSourceEstimate {
		t.Errorf("cost %v (%s), want a positive estimate", recs[0].CostUSD, recs[0].CostSource)
	}
}

// TestEmptyChoicesUsageKept: answers without choices that report usage are transport faults
// whose tokens were billed all the same, each of them (until the breaker, at its fifth
// failure in a row, stops the asking).
func TestEmptyChoicesUsageKept(t *testing.T) {
	srv, _ := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
		writeJSON(w, 200, `{"id":"x","object":"chat.completion","choices":[],"usage":{"prompt_tokens":1234,"completion_tokens":56}}`)
	})
	b := setup(t, testConfig(srv.URL))
	_, err := b.client.Chat(context.Background(), userMsg("x"))
	var f *Fault
	if !errors.Is(err, ErrTransport) || !errors.As(err, &f) || f.Status != 200 || !strings.Contains(err.Error(), "no choices") {
		t.Fatalf("err = %v, want ErrTransport (no choices, HTTP 200) with a Fault", err)
	}
	recs := b.rec.all()
	if n := int64(DefaultBreakerFailures); len(recs) != 1 || recs[0].Usage.PromptTokens != n*1234 || recs[0].Usage.CompletionTokens != n*56 || recs[0].CostUSD == nil || *recs[0].CostUSD <= 0 {
		t.Errorf("recorded %+v, want the reported usage and its cost kept", recs)
	}
}

// TestUndecodableAnswerCounted: a 200 whose JSON go-openai cannot decode carries an answer
// the server made and may bill; the call is recorded with its usage block's counts, or an
// estimate flagged as one, never as an exact zero, and the error names the status.
func TestUndecodableAnswerCounted(t *testing.T) {
	content := strings.Repeat("a", 4000)
	tests := []struct {
		name, body    string
		wantEstimated bool
		wantUsage     func(Usage) bool
	}{
		{"usage readable", `{"id":17,"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"` + content + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1234,"completion_tokens":1000}}`,
			false, func(u Usage) bool { return u.PromptTokens == 1234 && u.CompletionTokens == 1000 }},
		{"usage unreadable", `{"id":17,"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"` + content + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":"1234","completion_tokens":"1000"}}`,
			true, func(u Usage) bool { return u.PromptTokens > 0 && u.CompletionTokens >= 1000 }},
		{"no usage", `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"` + content + `"},"finish_reason":"stop","content_filter_results":[]}]}`,
			true, func(u Usage) bool { return u.PromptTokens > 0 && u.CompletionTokens >= 1000 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
				writeJSON(w, 200, tt.body)
			})
			b := setup(t, testConfig(srv.URL))
			_, err := b.client.Chat(context.Background(), userMsg("x"))
			if !errors.Is(err, ErrBadResponse) || !strings.Contains(err.Error(), "HTTP 200") {
				t.Fatalf("err = %v, want ErrBadResponse naming HTTP 200", err)
			}
			recs := b.rec.all()
			if len(recs) != 1 {
				t.Fatalf("%d calls recorded, want 1", len(recs))
			}
			c := recs[0]
			cost := -1.0 // unknown
			if c.CostUSD != nil {
				cost = *c.CostUSD
			}
			if !tt.wantUsage(c.Usage) || c.UsageEstimated != tt.wantEstimated || cost <= 0 {
				t.Errorf("body %.80s…: recorded usage %+v, estimated %v, cost %v (%s); want the answer counted, estimated %v",
					tt.body, c.Usage, c.UsageEstimated, cost, c.CostSource, tt.wantEstimated)
			}
		})
	}
}

// TestAnthropicCacheFields: a gateway passing Anthropic's usage through (input_tokens
// without the cache, cache_read_input_tokens and cache_creation_input_tokens beside it) is
// read with the cached tokens as part of the prompt and priced as cached.
func TestAnthropicCacheFields(t *testing.T) {
	tests := []struct {
		name, usage             string
		prompt, cached, written int64
	}{
		{"exclusive input_tokens", `{"prompt_tokens": 20, "completion_tokens": 5, "cache_read_input_tokens": 3000, "cache_creation_input_tokens": 400}`, 3420, 3000, 400},
		{"inclusive prompt_tokens", `{"prompt_tokens": 3420, "completion_tokens": 5, "cache_read_input_tokens": 3000, "cache_creation_input_tokens": 400}`, 3420, 3000, 400},
		{"openai details win", `{"prompt_tokens": 3420, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 1000}, "cache_read_input_tokens": 3000}`, 3420, 1000, 0},
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
			u := resp.Usage
			if u.PromptTokens != tt.prompt || u.CachedTokens != tt.cached || u.CacheWriteTokens != tt.written {
				t.Errorf("usage %+v from %s\nwant prompt %d cached %d written %d", u, tt.usage, tt.prompt, tt.cached, tt.written)
			}
			p, _ := testConfig("").PriceFor("gpt-4.1-mini")
			if want := Cost(p, u); resp.CostUSD == nil || *resp.CostUSD != want {
				t.Errorf("cost %v, want %v (cached tokens at the cached price)", resp.CostUSD, want)
			}
		})
	}
}

// TestErrorTextKeepsStatusAndWords: the error of a refused request keeps the status as
// sent (a 200 carrying an error is a 200), the server's words, whatever the shape.
func TestErrorTextKeepsStatusAndWords(t *testing.T) {
	tests := []struct {
		name, ctype, body string
		status            int
		want              []string
	}{
		{"mock-llm error name and message", "application/json", `{"error":"SyntaxError","message":"Unexpected token } in JSON at position 12"}`, 400,
			[]string{"HTTP 400", "SyntaxError: Unexpected token } in JSON at position 12"}},
		{"openrouter 200 carrying 404", "application/json", `{"error":{"code":404,"message":"No endpoints found for meta/llama"}}`, 200,
			[]string{"HTTP 200 carrying an error (code 404)", "No endpoints found"}},
		{"malformed JSON is not network", "application/json", `{"id":"x","choices":[{"message":{"role":"assistant","content":"ok"}`, 200,
			[]string{"not a JSON chat completion", `{"id":"x","choices"`}},
		{"SSE named", "text/event-stream", "data: {}\n\n", 200, []string{"streamed", "stream: false"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
				w.Header().Set("Content-Type", tt.ctype)
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			})
			cfg := testConfig(srv.URL)
			cfg.Retry.MaxRetries = 0
			b := setup(t, cfg)
			_, err := b.client.Chat(context.Background(), userMsg("x"))
			if err == nil {
				t.Fatal("want an error")
			}
			if errors.Is(err, ErrTransport) {
				t.Errorf("err = %v: not a transport fault", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v\nwant %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "HTTP 502") {
				t.Errorf("err = %v: a status the server did not send", err)
			}
		})
	}
}

// TestProbeUsesTheEndpointTimeout: the breaker's probe waits as long as the night's
// requests do, so a slow server that answers within its timeout comes back up.
func TestProbeUsesTheEndpointTimeout(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= 2 {
			writeJSON(w, 503, `{"error":{"message":"warming up"}}`)
			return
		}
		time.Sleep(150 * time.Millisecond) // slower than preflight_timeout, within timeout
		writeJSON(w, 200, completion("ok", "stop", ""))
	}))
	t.Cleanup(srv.Close)
	cfg := testConfig(srv.URL)
	cfg.Retry.MaxRetries = 1
	cfg.Breaker = BreakerConfig{Failures: 2, ProbeBase: time.Millisecond, ProbeMax: time.Millisecond}
	cfg.PreflightTimeout = 20 * time.Millisecond
	b := setup(t, cfg)
	if _, err := b.client.Chat(context.Background(), userMsg("x")); !errors.Is(err, ErrEndpointDown) {
		t.Fatalf("err = %v, want the breaker open", err)
	}
	b.clock.Advance(time.Second)
	if down := b.client.Unavailable(context.Background()); len(down) != 0 {
		t.Errorf("still down after a probe the server answered in 150ms: %+v", down)
	}
}

// TestTimeoutTexts: a request that timed out without a status says which bound it ran
// into, and nothing reads "timeout : Post": the breaker's probe names the endpoint's
// timeout, a preflight bounded by models.preflight_timeout names that one.
func TestTimeoutTexts(t *testing.T) {
	hanging := func(t *testing.T) string {
		stop := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-stop:
			}
		}))
		t.Cleanup(srv.Close)
		t.Cleanup(func() { close(stop) })
		return srv.URL
	}
	t.Run("probe", func(t *testing.T) {
		cfg := testConfig(hanging(t))
		ep := cfg.Endpoints["local"]
		ep.Timeout = 20 * time.Millisecond
		cfg.Endpoints["local"] = ep
		cfg.Retry.MaxRetries = 1
		cfg.Breaker = BreakerConfig{Failures: 2, ProbeBase: time.Millisecond, ProbeMax: time.Millisecond}
		b := setup(t, cfg)
		if _, err := b.client.Chat(context.Background(), userMsg("x")); !errors.Is(err, ErrEndpointDown) {
			t.Fatalf("err = %v, want the breaker open", err)
		}
		b.clock.Advance(time.Second)
		down := b.client.Unavailable(context.Background())
		if len(down) != 1 {
			t.Fatalf("down = %+v, want the endpoint still down", down)
		}
		msg := down[0].LastError
		t.Logf("last error: %s", msg)
		if strings.Contains(msg, " :") || !strings.Contains(msg, "timeout (no answer within 20ms, models.endpoints.local.timeout): Post") {
			t.Errorf("probe's error = %q, want \"timeout (no answer within 20ms, models.endpoints.local.timeout): Post …\"", msg)
		}
	})
	t.Run("preflight", func(t *testing.T) {
		cfg := testConfig(hanging(t))
		cfg.PreflightTimeout = 20 * time.Millisecond
		cfg.PreflightWait = time.Millisecond
		b := setup(t, cfg)
		err := b.client.Preflight(context.Background(), preflightReqs())
		t.Logf("err: %v", err)
		if err == nil || !strings.Contains(err.Error(), "no answer within 20ms (models.preflight_timeout") || strings.Contains(err.Error(), "within 5m0s") {
			t.Errorf("Preflight = %v, want it to name models.preflight_timeout's 20ms, not the endpoint's 5m timeout", err)
		}
	})
}
