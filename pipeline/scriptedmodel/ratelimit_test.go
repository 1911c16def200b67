package scriptedmodel

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRateLimitWindow: the double's exhausted limit answers 429 saying when it lifts the
// way each provider does, and lets requests through once it has.
func TestRateLimitWindow(t *testing.T) {
	patch := readTestdata(t, "stats/fix.patch")
	start := time.Date(2026, 12, 3, 2, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		style  string
		header string // a header that must say 20s or its time
		want   string
		inBody string
	}{
		{"openai", "x-ratelimit-reset-requests", "20s", ""},
		{"openai-text", "", "", "Please try again in 20s."},
		{"anthropic", "anthropic-ratelimit-requests-reset", start.Add(20 * time.Second).Format(time.RFC3339), ""},
	} {
		t.Run(tc.style, func(t *testing.T) {
			var mu sync.Mutex
			now := start
			clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			b := setup(t, []Case{{Match: "empty list", Patch: patch}}, Options{Now: clock,
				Faults: Faults{RateLimitWindow: 20 * time.Second, RateLimitStyle: tc.style}})
			status, _, body, h := post(t, b.url, rawRequest(t, "m", "", "", "a"))
			if status != http.StatusTooManyRequests || (tc.header != "" && h.Get(tc.header) != tc.want) || !strings.Contains(body, tc.inBody) {
				t.Fatalf("first request: %d, %s=%q, body %s; want 429 with %q", status, tc.header, h.Get(tc.header), body, tc.want+tc.inBody)
			}
			mu.Lock()
			now = now.Add(20 * time.Second)
			mu.Unlock()
			if status, _, body, _ := post(t, b.url, rawRequest(t, "m", "", "", "a")); status != http.StatusOK {
				t.Fatalf("after the reset: %d %s; want 200", status, body)
			}
		})
	}
}
