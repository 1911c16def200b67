package scriptedmodel

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"
)

// windowLimit lets Faults.RateLimitAfter requests through, then answers 429 while the limit of the faults keyed key is exhausted
// (Faults.RateLimitWindow from its first request), saying when it lifts as the style's
// provider does. Test double behaviour, modelled on the providers' documented headers:
// OpenAI's x-ratelimit-* (durations like "6m0s"), Anthropic's anthropic-ratelimit-*-reset
// (RFC 3339) with Retry-After, and OpenAI's "Please try again in …" message.
func (s *Server) windowLimit(w http.ResponseWriter, f Faults, key string) (int, string, error) {
	now := s.opts.Now()
	s.mu.Lock()
	until, started := s.limited[key]
	if !started && s.passed[key] < f.RateLimitAfter {
		s.passed[key]++
		s.mu.Unlock()
		return 0, "", nil
	}
	if !started {
		until = now.Add(f.RateLimitWindow)
		s.limited[key] = until
	}
	s.mu.Unlock()
	left := until.Sub(now)
	if left <= 0 {
		return 0, "", nil
	}
	h := w.Header()
	msg := "scripted rate limit (test double): Rate limit reached for requests per min (RPM): Limit 3, Used 3, Requested 1."
	switch f.RateLimitStyle {
	case "", "openai":
		h.Set("x-ratelimit-limit-requests", "3")
		h.Set("x-ratelimit-remaining-requests", "0")
		h.Set("x-ratelimit-reset-requests", goDuration(left))
		h.Set("x-ratelimit-limit-tokens", "30000")
		h.Set("x-ratelimit-remaining-tokens", "29000")
		h.Set("x-ratelimit-reset-tokens", "2ms")
	case "openai-text":
		msg += fmt.Sprintf(" Please try again in %s. Visit https://platform.openai.com/account/rate-limits to learn more.", goDuration(left))
	case "anthropic":
		h.Set("anthropic-ratelimit-requests-limit", "3")
		h.Set("anthropic-ratelimit-requests-remaining", "0")
		h.Set("anthropic-ratelimit-requests-reset", until.UTC().Format(time.RFC3339))
		h.Set("retry-after", strconv.FormatInt(int64(math.Ceil(left.Seconds())), 10))
		return http.StatusTooManyRequests, "rate_limit_error", errors.New("scripted rate limit (test double): This request would exceed the rate limit for your organization of 3 requests per minute")
	}
	return http.StatusTooManyRequests, "requests", errors.New(msg)
}

// goDuration prints d as OpenAI does, in Go's duration syntax at millisecond precision
// ("20s", "6m0s", "845ms").
func goDuration(d time.Duration) string {
	if d < time.Second {
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	}
	return d.Round(time.Millisecond).String()
}
