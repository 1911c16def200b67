package model

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// answerInfo is what the wire learnt from a 2xx chat answer beyond go-openai's parse.
type answerInfo struct {
	// usageReported is false when the answer carried no usage (absent, null, or all
	// zero: a real prompt is never zero tokens).
	usageReported bool
	cacheWrite    int64 // prompt_tokens_details.cache_write_tokens or usage.cache_creation_input_tokens
	cacheHit      int64 // usage.prompt_cache_hit_tokens (DeepSeek), cache_read_input_tokens (Anthropic) or timings.cache_n (llama.cpp), when details are absent
	hasHit        bool
	// providerCost is usage.cost (OpenRouter, LiteLLM's proxies), nil when absent.
	providerCost *float64
	// errObj is set when the 2xx body carries an error instead of choices.
	errObj *serverError
}

// normalizeAnswer reads a 2xx chat answer and rewrites, where needed, what go-openai
// would misread:
//
//   - message.content given as an array of parts ([{"type":"text","text":...}]) is
//     joined into one string (go-openai would put it in MultiContent, which the
//     pipeline does not read, and could not replay next to Content);
//   - function.arguments given as a JSON object instead of a string is re-encoded as a
//     string (go-openai would refuse the whole answer);
//   - a tool call without an id gets a stable synthetic one, "call_" + a hash of the
//     conversation length, the call's position, name and arguments, so the same answer
//     always gets the same id and the tool result is sent back under it; a missing type
//     becomes "function".
//
// A body that is not a JSON object is returned unchanged for go-openai to reject.
func normalizeAnswer(data []byte, turn int) ([]byte, answerInfo) {
	var info answerInfo
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil || top == nil {
		return data, info
	}
	readUsage(top, &info)
	var choices []map[string]json.RawMessage
	_ = json.Unmarshal(top["choices"], &choices)
	if e, ok := top["error"]; ok && string(e) != "null" && len(choices) == 0 {
		se := parseErrorBody(data)
		info.errObj = &se
		return data, info
	}
	changed := false
	for ci, ch := range choices {
		var msg map[string]json.RawMessage
		if json.Unmarshal(ch["message"], &msg) != nil || msg == nil {
			continue
		}
		mchanged := false
		if c := bytes.TrimSpace(msg["content"]); len(c) > 0 && c[0] == '[' {
			var parts []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			if json.Unmarshal(c, &parts) == nil {
				var b strings.Builder
				for _, p := range parts {
					b.WriteString(p.Text)
				}
				msg["content"], _ = json.Marshal(b.String())
				mchanged = true
			}
		}
		var calls []map[string]json.RawMessage
		if json.Unmarshal(msg["tool_calls"], &calls) == nil && len(calls) > 0 {
			for j, tc := range calls {
				var fn map[string]json.RawMessage
				if json.Unmarshal(tc["function"], &fn) != nil || fn == nil {
					fn = map[string]json.RawMessage{}
				}
				args := bytes.TrimSpace(fn["arguments"])
				switch {
				case len(args) == 0 || string(args) == "null":
					fn["arguments"] = json.RawMessage(`"{}"`)
					mchanged = true
				case args[0] != '"':
					var compact bytes.Buffer
					if json.Compact(&compact, args) == nil {
						fn["arguments"], _ = json.Marshal(compact.String())
						mchanged = true
					}
				}
				var id, typ, name, argText string
				_ = json.Unmarshal(tc["id"], &id)
				_ = json.Unmarshal(tc["type"], &typ)
				_ = json.Unmarshal(fn["name"], &name)
				_ = json.Unmarshal(fn["arguments"], &argText)
				if id == "" {
					tc["id"], _ = json.Marshal(syntheticCallID(turn, ci, j, name, argText))
					mchanged = true
				}
				if typ == "" {
					tc["type"] = json.RawMessage(`"function"`)
					mchanged = true
				}
				if mchanged {
					tc["function"], _ = json.Marshal(fn)
				}
			}
			if mchanged {
				msg["tool_calls"], _ = json.Marshal(calls)
			}
		}
		if mchanged {
			ch["message"], _ = json.Marshal(msg)
			changed = true
		}
	}
	if !changed {
		return data, info
	}
	top["choices"], _ = json.Marshal(choices)
	out, err := json.Marshal(top)
	if err != nil {
		return data, info
	}
	return out, info
}

// syntheticCallID is the id given to a tool call that came without one.
func syntheticCallID(turn, choice, index int, name, args string) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%d\x00%d\x00%d\x00%s\x00%s", turn, choice, index, name, args)))
	return "call_" + hex.EncodeToString(sum[:12])
}

// readUsage reads whether usage was sent and the usage fields go-openai's Usage lacks.
// Absent or malformed fields read as zero: accounting falls back to what go-openai parsed.
func readUsage(top map[string]json.RawMessage, x *answerInfo) {
	var u *struct {
		PromptTokens        *int64 `json:"prompt_tokens"`
		CompletionTokens    *int64 `json:"completion_tokens"`
		PromptTokensDetails *struct {
			CachedTokens     *int64 `json:"cached_tokens"`
			CacheWriteTokens *int64 `json:"cache_write_tokens"`
		} `json:"prompt_tokens_details"`
		CacheCreationInputTokens *int64   `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     *int64   `json:"cache_read_input_tokens"`
		PromptCacheHitTokens     *int64   `json:"prompt_cache_hit_tokens"`
		Cost                     *float64 `json:"cost"`
	}
	if json.Unmarshal(top["usage"], &u) != nil || u == nil {
		return
	}
	x.usageReported = (u.PromptTokens != nil && *u.PromptTokens > 0) || (u.CompletionTokens != nil && *u.CompletionTokens > 0)
	d := u.PromptTokensDetails
	if d != nil && d.CacheWriteTokens != nil {
		x.cacheWrite = max(*d.CacheWriteTokens, 0)
	} else if u.CacheCreationInputTokens != nil {
		x.cacheWrite = max(*u.CacheCreationInputTokens, 0)
	}
	switch {
	case u.PromptCacheHitTokens != nil:
		x.cacheHit, x.hasHit = max(*u.PromptCacheHitTokens, 0), true
	case (d == nil || d.CachedTokens == nil) && u.CacheReadInputTokens != nil:
		// Anthropic's names, as LiteLLM and other gateways pass them through.
		x.cacheHit, x.hasHit = max(*u.CacheReadInputTokens, 0), true
	case d == nil || d.CachedTokens == nil:
		// llama.cpp reports the prompt tokens it took from its KV cache in timings.cache_n.
		var t struct {
			CacheN *int64 `json:"cache_n"`
		}
		if json.Unmarshal(top["timings"], &t) == nil && t.CacheN != nil {
			x.cacheHit, x.hasHit = max(*t.CacheN, 0), true
		}
	}
	if u.Cost != nil && *u.Cost >= 0 {
		c := *u.Cost
		x.providerCost = &c
	}
}
