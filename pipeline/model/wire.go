package model

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// wireTransport shapes chat-completion requests on the wire, where go-openai cannot:
//
//   - it adds prompt_cache_key, which go-openai's ChatCompletionRequest lacks;
//   - it adds "content": "" to messages serialised without content (an assistant turn
//     that only carries tool calls, an empty tool result), which some compatible
//     servers reject;
//   - it reports back what go-openai's error values drop: the status, Retry-After, and
//     usage fields of other providers (cache writes), through the per-attempt wireState
//     found in the request's context.
type wireTransport struct {
	base http.RoundTripper
}

type wireKey struct{}

// wireState carries one HTTP attempt's inputs to the transport and its findings back.
// RoundTrip runs on the caller's goroutine, so no locking is needed for the findings.
type wireState struct {
	cacheKey   string
	onResponse func() // called once, when response headers arrive or the exchange fails

	status     int
	retryAfter string // Retry-After, or "<n>ms" from retry-after-ms
	extra      usageExtra
	once       sync.Once
}

// usageExtra holds usage fields outside OpenAI's schema.
type usageExtra struct {
	cacheWrite int64 // prompt_tokens_details.cache_write_tokens or usage.cache_creation_input_tokens
	cacheHit   int64 // usage.prompt_cache_hit_tokens (DeepSeek), used when details are absent
	hasHit     bool
}

func withWire(ctx context.Context, ws *wireState) context.Context {
	return context.WithValue(ctx, wireKey{}, ws)
}

func (ws *wireState) responded() {
	if ws.onResponse != nil {
		ws.once.Do(ws.onResponse)
	}
}

func (t *wireTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ws, _ := req.Context().Value(wireKey{}).(*wireState)
	if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/chat/completions") && req.Body != nil {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("read chat request body: %w", err)
		}
		key := ""
		if ws != nil {
			key = ws.cacheKey
		}
		body, err = rewriteChatBody(body, key)
		if err != nil {
			return nil, err
		}
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}

	resp, err := t.base.RoundTrip(req)
	if ws == nil {
		return resp, err
	}
	ws.responded()
	if err != nil {
		return nil, err
	}
	ws.status = resp.StatusCode
	ws.retryAfter = resp.Header.Get("Retry-After")
	if ms := resp.Header.Get("Retry-After-Ms"); ms != "" {
		ws.retryAfter = ms + "ms"
	}
	if resp.StatusCode/100 != 2 {
		return resp, nil
	}
	// Read the body here so that a reset or time-out mid-body is a transport error and
	// the usage fields go-openai does not know can be picked up.
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read chat response body: %w", err)
	}
	ws.extra = parseUsageExtra(data)
	resp.Body = io.NopCloser(bytes.NewReader(data))
	resp.ContentLength = int64(len(data))
	return resp, nil
}

// rewriteChatBody adds prompt_cache_key (when key is not empty) and an empty content to
// messages serialised without one. Keys are re-emitted in sorted order, so the body is
// deterministic for a given request.
func rewriteChatBody(body []byte, key string) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, fmt.Errorf("rewrite chat request body: not a JSON object: %w", err)
	}
	if key != "" {
		k, _ := json.Marshal(key)
		top["prompt_cache_key"] = k
	}
	if raw, ok := top["messages"]; ok {
		var msgs []map[string]json.RawMessage
		if err := json.Unmarshal(raw, &msgs); err != nil {
			return nil, fmt.Errorf("rewrite chat request body: messages: %w", err)
		}
		changed := false
		for _, m := range msgs {
			if _, has := m["content"]; !has {
				m["content"] = json.RawMessage(`""`)
				changed = true
			}
		}
		if changed {
			b, err := json.Marshal(msgs)
			if err != nil {
				return nil, fmt.Errorf("rewrite chat request body: %w", err)
			}
			top["messages"] = b
		}
	}
	return json.Marshal(top)
}

// parseUsageExtra reads the usage fields that go-openai's Usage lacks. Absent or
// malformed fields read as zero: accounting falls back to what go-openai parsed.
func parseUsageExtra(data []byte) usageExtra {
	var r struct {
		Usage *struct {
			PromptTokensDetails *struct {
				CacheWriteTokens *int64 `json:"cache_write_tokens"`
			} `json:"prompt_tokens_details"`
			CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
			PromptCacheHitTokens     *int64 `json:"prompt_cache_hit_tokens"`
		} `json:"usage"`
	}
	var x usageExtra
	if json.Unmarshal(data, &r) != nil || r.Usage == nil {
		return x
	}
	u := r.Usage
	if d := u.PromptTokensDetails; d != nil && d.CacheWriteTokens != nil {
		x.cacheWrite = max(*d.CacheWriteTokens, 0)
	} else if u.CacheCreationInputTokens != nil {
		x.cacheWrite = max(*u.CacheCreationInputTokens, 0)
	}
	if u.PromptCacheHitTokens != nil {
		x.cacheHit, x.hasHit = max(*u.PromptCacheHitTokens, 0), true
	}
	return x
}
