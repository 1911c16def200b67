package model

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestRateReset reads each provider's way of saying when a 429 lifts.
func TestRateReset(t *testing.T) {
	now := time.Date(2026, 12, 3, 2, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		headers map[string]string
		said    string
		want    time.Duration
		ok      bool
	}{
		{"nothing", nil, "Rate limit reached", 0, false},
		{"retry-after seconds", map[string]string{"Retry-After": "20"}, "", 20 * time.Second, true},
		{"retry-after long is kept whole", map[string]string{"Retry-After": "3600"}, "", time.Hour, true},
		{"retry-after http date", map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, "", 90 * time.Second, true},
		{"retry-after-ms wins", map[string]string{"Retry-After": "21", "Retry-After-Ms": "20500"}, "", 20500 * time.Millisecond, true},
		{"retry-after garbage falls through to text", map[string]string{"Retry-After": "soon"}, "Please try again in 7s.", 7 * time.Second, true},
		{"openai requests exhausted", map[string]string{
			"x-ratelimit-reset-requests": "20s", "x-ratelimit-remaining-requests": "0",
			"x-ratelimit-reset-tokens": "6m0s", "x-ratelimit-remaining-tokens": "81000"}, "", 20 * time.Second, true},
		{"openai tokens exhausted", map[string]string{
			"x-ratelimit-reset-requests": "120ms", "x-ratelimit-remaining-requests": "59",
			"x-ratelimit-reset-tokens": "1m30.5s", "x-ratelimit-remaining-tokens": "0"}, "", 90*time.Second + 500*time.Millisecond, true},
		{"openai no remaining: the latest", map[string]string{"x-ratelimit-reset-requests": "1s", "x-ratelimit-reset-tokens": "20s"}, "", 20 * time.Second, true},
		{"openrouter epoch ms", map[string]string{"X-RateLimit-Reset": "1796263220000"}, "", time.UnixMilli(1796263220000).Sub(now), true},
		{"epoch seconds", map[string]string{"X-RateLimit-Reset": "1796263220"}, "", time.Unix(1796263220, 0).Sub(now), true},
		{"anthropic", map[string]string{
			"anthropic-ratelimit-requests-reset": now.Add(20 * time.Second).Format(time.RFC3339), "anthropic-ratelimit-requests-remaining": "0",
			"anthropic-ratelimit-tokens-reset": now.Add(50 * time.Second).Format(time.RFC3339), "anthropic-ratelimit-tokens-remaining": "4000"}, "", 20 * time.Second, true},
		{"anthropic input tokens", map[string]string{"anthropic-ratelimit-input-tokens-reset": now.Add(45 * time.Second).Format(time.RFC3339Nano)}, "", 45 * time.Second, true},
		{"reset in the past", map[string]string{"anthropic-ratelimit-requests-reset": now.Add(-time.Minute).Format(time.RFC3339)}, "", 0, true},
		{"openai text", nil, "Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Used 30000, Requested 1200. Please try again in 2.4s. Visit https://platform.openai.com", 2400 * time.Millisecond, true},
		{"openai text minutes", nil, "Please try again in 6m0s.", 6 * time.Minute, true},
		{"openai text ms", nil, "Please try again in 845ms.", 845 * time.Millisecond, true},
		{"words", nil, "Too many requests, try again in 20 seconds", 20 * time.Second, true},
		{"azure", nil, "Requests to the ChatCompletions_Create Operation have exceeded call rate limit. Please retry after 17 seconds.", 17 * time.Second, true},
		{"minutes in words", nil, "try again in 2 minutes", 2 * time.Minute, true},
		{"no number", nil, "try again in a moment", 0, false},
		{"bogus huge", map[string]string{"Retry-After": "99999999999"}, "", maxRateReset, true},
		{"negative", map[string]string{"Retry-After": "-5"}, "", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.headers {
				h.Set(k, v)
			}
			got, ok := rateReset(keepRateHeaders(h), tc.said, now)
			if got != tc.want || ok != tc.ok {
				t.Errorf("rateReset(%v, %q) = %v, %v; want %v, %v", tc.headers, tc.said, got, ok, tc.want, tc.ok)
			}
		})
	}
}

// FuzzRateReset: whatever a server sends, the reset is within [0, maxRateReset] and
// reading it never panics.
func FuzzRateReset(f *testing.F) {
	for _, s := range [][3]string{
		{"20", "", ""}, {"", "6m0s", ""}, {"", "", "Please try again in 1.898s."},
		{"Wed, 21 Oct 2015 07:28:00 GMT", "", ""}, {"", "2026-12-03T02:00:20Z", "retry after 3 minutes"},
		{"1e400", "1796263220000", "try again in 99999999999999h"}, {"", "1h2m3.5s", "try again in 9223372036854775807ms"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	now := time.Date(2026, 12, 3, 2, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, retryAfter, reset, said string) {
		h := http.Header{}
		h.Set("Retry-After", retryAfter)
		h.Set("X-Ratelimit-Reset-Tokens", reset)
		h.Set("Anthropic-Ratelimit-Requests-Reset", reset)
		h.Set("X-Ratelimit-Reset", reset)
		d, ok := rateReset(h, said, now)
		if d < 0 || d > maxRateReset || (!ok && d != 0) {
			t.Errorf("rateReset(%q, %q, %q) = %v, %v; want within [0, %v]", retryAfter, reset, said, d, ok, maxRateReset)
		}
	})
}

// TestRateLimitWaitsForTheReset: a 429 that names its reset only in the providers' own
// headers (no Retry-After) or its text is waited out for exactly that long when it fits in
// retry.max_wait, and handed back with its ResetAt (not retried, not charged) when not.
func TestRateLimitWaitsForTheReset(t *testing.T) {
	for _, tc := range []struct {
		name     string
		headers  map[string]string
		body     string
		maxWait  time.Duration
		deferred bool
	}{
		{"openai headers, short", map[string]string{"x-ratelimit-reset-requests": "20s", "x-ratelimit-remaining-requests": "0"},
			`{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}`, time.Minute, false},
		{"anthropic headers, short", map[string]string{"anthropic-ratelimit-requests-remaining": "0", "anthropic-ratelimit-requests-reset": "+20s"},
			`{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`, time.Minute, false},
		{"text only, short", nil, `{"error":{"message":"Rate limit reached. Please try again in 20s.","code":"rate_limit_exceeded"}}`, time.Minute, false},
		{"openai headers, past max_wait", map[string]string{"x-ratelimit-reset-tokens": "20s"},
			`{"error":{"message":"Rate limit reached for tokens","code":"rate_limit_exceeded"}}`, 5 * time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bundle
			var lift time.Time
			var mu sync.Mutex
			srv, _ := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
				mu.Lock()
				defer mu.Unlock()
				now := b.clock.Now()
				if lift.IsZero() {
					lift = now.Add(20 * time.Second)
				}
				if now.Before(lift) {
					for k, v := range tc.headers {
						if v == "+20s" {
							v = lift.Format(time.RFC3339)
						}
						w.Header().Set(k, v)
					}
					writeJSON(w, 429, tc.body)
					return
				}
				writeJSON(w, 200, completion("ok", "stop", ""))
			})
			cfg := testConfig(srv.URL)
			cfg.Retry = RetryConfig{MaxRetries: 2, BaseDelay: time.Second, MaxDelay: time.Second, MaxWait: tc.maxWait}
			b = setup(t, cfg)
			start := b.clock.Now()
			_, err := b.client.Chat(context.Background(), Request{Role: RoleMaker, TicketID: 1, Messages: userMsg("x").Messages})
			var f *Fault
			switch {
			case tc.deferred:
				if !errors.As(err, &f) || !errors.Is(err, ErrRateLimited) || !errors.Is(err, ErrTransport) || !f.ResetAt.Equal(start.Add(20*time.Second)) {
					t.Fatalf("Chat = %v (fault %+v); want ErrRateLimited with ResetAt %s", err, f, start.Add(20*time.Second))
				}
				if w := b.clock.Waits(); len(w) != 0 {
					t.Errorf("waited %v in the call; want no wait (the ticket waits in the queue)", w)
				}
			default:
				if err != nil {
					t.Fatalf("Chat: %v; want the retry after the reset to succeed", err)
				}
				if w := b.clock.Waits(); len(w) != 1 || w[0] != 20*time.Second {
					t.Errorf("waits %v; want exactly one of 20s (the provider's reset)", w)
				}
			}
		})
	}
}
