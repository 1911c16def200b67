package main

import (
	"testing"
	"time"
)

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"24h", now.Add(-24 * time.Hour), true},
		{"90m", now.Add(-90 * time.Minute), true},
		{"7d", now.Add(-7 * 24 * time.Hour), true},
		{"0d", now, true},
		{"2026-11-01", time.Date(2026, 11, 1, 0, 0, 0, 0, time.Local), true},
		{"2026-11-01T08:00:00Z", time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC), true},
		{"-3h", time.Time{}, false},
		{"-1d", time.Time{}, false},
		{"yesterday", time.Time{}, false},
		{"d", time.Time{}, false},
		{"", time.Time{}, false},
	}
	for _, tt := range tests {
		got, err := parseSince(tt.in, now)
		if (err == nil) != tt.ok || !got.Equal(tt.want) {
			t.Errorf("parseSince(%q) = %v, %v; want %v, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// FuzzParseSince: any operator input either parses to a time not after now, or is an error
// naming the input; it never panics.
func FuzzParseSince(f *testing.F) {
	for _, s := range []string{"24h", "7d", "2026-11-01", "2026-11-01T08:00:00Z", "-1d", "99999999999d", "1.5h", "d", ""} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, in string) {
		got, err := parseSince(in, now)
		if err != nil {
			return
		}
		if d, derr := parseDuration(in); derr == nil && (d < 0 || got.After(now)) {
			t.Errorf("parseSince(%q) = %v: a duration must reach back, not forward (d=%v)", in, got, d)
		}
	})
}

func TestClip(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"multi\nline   text", 20, "multi line text"},
		{"héllo wörld", 6, "héllo…"},
	}
	for _, tt := range tests {
		if got := clip(tt.in, tt.n); got != tt.want {
			t.Errorf("clip(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}
