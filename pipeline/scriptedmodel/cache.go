package scriptedmodel

import (
	"bytes"
	"encoding/json"
	"slices"
	"time"
)

// Token and cache rules, chosen to behave like OpenAI's prompt caching:
//
//   - A request's prompt is its canonical serialisation: each tool definition (compact JSON,
//     in the order given) then each message (compact JSON, in order), one per line. The
//     tools come first because providers render them before the conversation.
//   - Tokens are estimated as ceil(bytes/4), the usual rule of thumb for English and code.
//   - A prompt of at least 1024 tokens can be served from cache. The cached part is the
//     longest common byte prefix with an earlier prompt under the same key (the
//     prompt_cache_key plus the model), in tokens, rounded down to a multiple of 128, and
//     only when that is at least 1024.
//   - Entries expire after CacheTTL without use.
const (
	bytesPerToken    = 4
	cacheMinTokens   = 1024
	cacheBlock       = 128
	maxEntriesPerKey = 64
)

// estimateTokens is ceil(n/4), at least 1 for a non-empty text.
func estimateTokens(n int) int { return (n + bytesPerToken - 1) / bytesPerToken }

// canonicalPrompt serialises tools then messages in the documented order.
func canonicalPrompt(tools, messages []json.RawMessage) []byte {
	var b bytes.Buffer
	for _, list := range [][]json.RawMessage{tools, messages} {
		for _, raw := range list {
			b.Write(compactLine(raw))
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// compactLine is raw's line in the canonical prompt: compact JSON, or raw as sent where it
// does not compact (it was validated by decoding).
func compactLine(raw json.RawMessage) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return slices.Clone(raw)
	}
	return b.Bytes()
}

type cacheEntry struct {
	prompt   []byte
	lastUsed time.Time
}

// prefixCache simulates a provider's prompt cache. It is not safe for concurrent use;
// the Server guards it.
type prefixCache struct {
	ttl     time.Duration
	entries map[string][]cacheEntry
}

func newPrefixCache(ttl time.Duration) *prefixCache {
	return &prefixCache{ttl: ttl, entries: map[string][]cacheEntry{}}
}

// use returns the cached tokens for prompt under key at now, then stores prompt so later
// requests can share its prefix (a stored prompt that is a prefix of this one is replaced,
// since the new one serves every request the old one could).
func (c *prefixCache) use(key string, prompt []byte, now time.Time) int {
	c.expire(now)
	if estimateTokens(len(prompt)) < cacheMinTokens {
		return 0
	}
	list := c.entries[key]
	best, bestLen := -1, 0
	for i, e := range list {
		if n := commonPrefix(e.prompt, prompt); n > bestLen {
			best, bestLen = i, n
		}
	}
	cached := (bestLen / bytesPerToken) / cacheBlock * cacheBlock
	if cached < cacheMinTokens {
		cached = 0
	}
	if cached > 0 {
		list[best].lastUsed = now
	}
	stored := append([]byte(nil), prompt...)
	if best >= 0 && bestLen == len(list[best].prompt) {
		list[best] = cacheEntry{prompt: stored, lastUsed: now}
	} else {
		list = append(list, cacheEntry{prompt: stored, lastUsed: now})
		if len(list) > maxEntriesPerKey {
			oldest := 0
			for i, e := range list {
				if e.lastUsed.Before(list[oldest].lastUsed) {
					oldest = i
				}
			}
			list = append(list[:oldest], list[oldest+1:]...)
		}
	}
	c.entries[key] = list
	return cached
}

func (c *prefixCache) expire(now time.Time) {
	for key, list := range c.entries {
		kept := list[:0]
		for _, e := range list {
			if now.Sub(e.lastUsed) <= c.ttl {
				kept = append(kept, e)
			}
		}
		if len(kept) == 0 {
			delete(c.entries, key)
		} else {
			c.entries[key] = kept
		}
	}
}

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
