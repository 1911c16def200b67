package model

import (
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// maxRateReset bounds a reset a provider announces: a day-long quota window is real
// (tokens per day), a year is a bogus header; past this the ticket waits for the next night
// anyway, so nothing is lost by the cap.
const maxRateReset = 48 * time.Hour

// rateHeaders are the response headers that say when a rate limit lifts, kept from a 429
// for rateReset. Canonical forms.
var rateHeaders = []string{
	"Retry-After", "Retry-After-Ms",
	// OpenAI, Groq, Together, DeepSeek: a duration ("20s", "6m0s", "845ms").
	"X-Ratelimit-Reset-Requests", "X-Ratelimit-Reset-Tokens",
	"X-Ratelimit-Remaining-Requests", "X-Ratelimit-Remaining-Tokens",
	// OpenRouter and some proxies: one reset, as epoch milliseconds or seconds.
	"X-Ratelimit-Reset",
	// Anthropic: RFC 3339 times.
	"Anthropic-Ratelimit-Requests-Reset", "Anthropic-Ratelimit-Tokens-Reset",
	"Anthropic-Ratelimit-Input-Tokens-Reset", "Anthropic-Ratelimit-Output-Tokens-Reset",
	"Anthropic-Ratelimit-Requests-Remaining", "Anthropic-Ratelimit-Tokens-Remaining",
	"Anthropic-Ratelimit-Input-Tokens-Remaining", "Anthropic-Ratelimit-Output-Tokens-Remaining",
}

// keepRateHeaders copies the headers rateReset reads (nil when there are none).
func keepRateHeaders(h http.Header) http.Header {
	var out http.Header
	for _, k := range rateHeaders {
		if v := h.Get(k); v != "" {
			if out == nil {
				out = http.Header{}
			}
			out.Set(k, v)
		}
	}
	return out
}

// rateReset says how long until a 429's rate limit lifts, from what the provider said: a
// Retry-After (or retry-after-ms) first, as the server's own answer to "when may I retry";
// else the latest reset among the limits the headers show exhausted (all of them when
// none says how much remains); else "try again in …" in the error message. It reports
// false when the provider said nothing readable; the result is within [0, maxRateReset].
func rateReset(h http.Header, said string, now time.Time) (time.Duration, bool) {
	if ms := strings.TrimSpace(h.Get("Retry-After-Ms")); ms != "" {
		if d, ok := parseDelay(ms + "ms"); ok {
			return d, true
		}
	}
	if d, ok := retryAfterUncapped(h.Get("Retry-After"), now); ok {
		return d, true
	}
	if d, ok := headerResets(h, now); ok {
		return d, true
	}
	return tryAgainIn(said)
}

// resetPair is one limit's reset header and the header that says how much of it remains.
type resetPair struct{ reset, remaining string }

var resetPairs = []resetPair{
	{"X-Ratelimit-Reset-Requests", "X-Ratelimit-Remaining-Requests"},
	{"X-Ratelimit-Reset-Tokens", "X-Ratelimit-Remaining-Tokens"},
	{"X-Ratelimit-Reset", ""},
	{"Anthropic-Ratelimit-Requests-Reset", "Anthropic-Ratelimit-Requests-Remaining"},
	{"Anthropic-Ratelimit-Tokens-Reset", "Anthropic-Ratelimit-Tokens-Remaining"},
	{"Anthropic-Ratelimit-Input-Tokens-Reset", "Anthropic-Ratelimit-Input-Tokens-Remaining"},
	{"Anthropic-Ratelimit-Output-Tokens-Reset", "Anthropic-Ratelimit-Output-Tokens-Remaining"},
}

// headerResets is the latest reset of the exhausted limits (remaining 0), or of every limit
// with a reset when no remaining count marks one exhausted.
func headerResets(h http.Header, now time.Time) (time.Duration, bool) {
	var all, exhausted time.Duration
	anyReset, anyExhausted := false, false
	for _, p := range resetPairs {
		d, ok := resetValue(h.Get(p.reset), now)
		if !ok {
			continue
		}
		anyReset, all = true, max(all, d)
		if p.remaining != "" && strings.TrimSpace(h.Get(p.remaining)) == "0" {
			anyExhausted, exhausted = true, max(exhausted, d)
		}
	}
	switch {
	case anyExhausted:
		return exhausted, true
	case anyReset:
		return all, true
	}
	return 0, false
}

// resetValue reads one reset header: a duration ("20s", "1m30.5s", "845ms", "2"), an
// RFC 3339 time, or a Unix time in seconds or milliseconds.
func resetValue(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return clampReset(t.Sub(now)), true
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) && f >= 0 {
		switch {
		case f >= 1e12: // Unix milliseconds
			return clampReset(time.UnixMilli(int64(f)).Sub(now)), true
		case f >= 1e9: // Unix seconds
			return clampReset(time.Unix(int64(f), 0).Sub(now)), true
		}
		return clampReset(time.Duration(min(f, maxRateReset.Seconds()) * float64(time.Second))), true
	}
	return parseDelay(v)
}

// retryAfterUncapped is parseRetryAfter without its in-call cap: a long Retry-After is
// what decides whether the ticket waits inside the night or for the next one.
func retryAfterUncapped(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if math.IsNaN(f) || f < 0 {
			return 0, false
		}
		return clampReset(time.Duration(min(f, maxRateReset.Seconds()) * float64(time.Second))), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return clampReset(t.Sub(now)), true
	}
	return 0, false
}

// durationRe is a Go-style duration as providers print it: "20s", "6m0s", "1h2m3.5s",
// "845ms", "1.898s".
var durationRe = regexp.MustCompile(`^(?:[0-9]+(?:\.[0-9]+)?(?:h|ms|m|s|us|µs|ns))+$`)

// parseDelay reads a Go-style duration, refusing anything else (negative, empty, words).
func parseDelay(v string) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if !durationRe.MatchString(v) {
		return 0, false
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		// Too large for a Duration: still a reset, the longest one.
		return maxRateReset, true
	}
	return clampReset(d), true
}

// tryAgainRe finds "try again in 20s", "Please try again in 6m0s.", "try again in 1.5
// seconds", "retry after 20 seconds" (Azure) in a provider's error message.
var tryAgainRe = regexp.MustCompile(`(?i)(?:try again|retry) (?:in|after) ((?:[0-9]+(?:\.[0-9]+)?(?:h|ms|m|s))+\b|[0-9]+(?:\.[0-9]+)?\s*(?:milliseconds?|seconds?|secs?|minutes?|mins?|hours?|hrs?)\b)`)

// tryAgainIn reads the delay a provider names in its error message.
func tryAgainIn(said string) (time.Duration, bool) {
	m := tryAgainRe.FindStringSubmatch(said)
	if m == nil {
		return 0, false
	}
	v := strings.ToLower(m[1])
	if d, ok := parseDelay(v); ok {
		return d, true
	}
	i := strings.IndexFunc(v, func(r rune) bool { return r != '.' && (r < '0' || r > '9') })
	if i <= 0 {
		return 0, false
	}
	f, err := strconv.ParseFloat(v[:i], 64)
	if err != nil {
		return 0, false
	}
	unit := time.Second
	switch w := strings.TrimSpace(v[i:]); {
	case strings.HasPrefix(w, "milli"):
		unit = time.Millisecond
	case strings.HasPrefix(w, "min"):
		unit = time.Minute
	case strings.HasPrefix(w, "h"):
		unit = time.Hour
	}
	return clampReset(time.Duration(min(f*float64(unit), float64(maxRateReset)))), true
}

func clampReset(d time.Duration) time.Duration {
	return min(max(d, 0), maxRateReset)
}
