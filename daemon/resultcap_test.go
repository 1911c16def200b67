package daemon

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCapText(t *testing.T) {
	line := strings.Repeat("x", 99) + "\n"
	tests := []struct {
		name   string
		in     string
		max    int
		capped bool
	}{
		{"under the cap", strings.Repeat(line, 10), 2000, false},
		{"exactly the cap", strings.Repeat(line, 20), 2000, false},
		{"over: cut on a line", strings.Repeat(line, 100), 2050, true},
		{"over: one long line of runes", strings.Repeat("é", 5000), 3001, true},
	}
	for _, tt := range tests {
		got := capText(tt.in, tt.max, "see the branch")
		if !tt.capped {
			if got != tt.in {
				t.Errorf("%s: changed a text under the cap", tt.name)
			}
			continue
		}
		body, note, ok := strings.Cut(got, "\n[ticketd: cut at ")
		if !ok || !strings.Contains(note, "see the branch") || len(body) > tt.max {
			t.Errorf("%s: got %d bytes of body, note %q; want at most %d and a note", tt.name, len(body), note, tt.max)
		}
		if !utf8.ValidString(got) || !strings.HasPrefix(tt.in, body) {
			t.Errorf("%s: the kept part is not a valid prefix of the input", tt.name)
		}
	}
}
