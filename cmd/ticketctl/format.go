package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ticketd/ticketd/pipeline/model"
)

// maxDays keeps a day count inside time.Duration's range (about 292 years).
const maxDays = 100 * 365

// parseDuration accepts Go durations (90m, 24h) and whole days (7d, 30d), which operators
// reach for first when talking about retention.
func parseDuration(v string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > maxDays { // beyond maxDays a Duration overflows
			return 0, fmt.Errorf("duration %q: want a Go duration like 24h or whole days like 7d (at most %dd)", v, maxDays)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("duration %q: want a Go duration like 24h or whole days like 7d", v)
	}
	return d, nil
}

// parseSince reads --since: a duration back from now (24h, 7d), a date (2006-01-02, local
// midnight) or an RFC 3339 time.
func parseSince(v string, now time.Time) (time.Time, error) {
	if d, err := parseDuration(v); err == nil {
		return now.Add(-d), nil
	}
	if t, err := time.ParseInLocation("2006-01-02", v, time.Local); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("since %q: want a duration (24h, 7d), a date (2006-01-02) or an RFC 3339 time", v)
}

// fmtTime shows a time in local time, or "-" when unset.
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

// fmtDur rounds a duration for a table.
func fmtDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	default:
		return d.Round(time.Minute).String()
	}
}

// fmtCost shows dollars; unknown marks a total that misses some call's cost (" + unknown").
func fmtCost(usd float64, unknown bool) string { return model.FormatCost(usd, false, unknown) }

// fmtShare shows a 0..1 share as a percentage.
func fmtShare(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) }

// fmtTokens shows a token count compactly (12.3k, 1.2M).
func fmtTokens(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.2fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	default:
		return strconv.FormatInt(n, 10)
	}
}

// clip shortens s to n runes for a table cell, on one line.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// orDash shows "-" for an empty cell so columns stay aligned and readable.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
