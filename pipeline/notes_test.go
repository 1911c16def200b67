package pipeline

import (
	"strings"
	"testing"
	"time"
)

// TestTicketContextCarriesNotes: what operators said when they requeued a ticket reaches the
// model with the issue, oldest first; a ticket without notes has no such section.
func TestTicketContextCarriesNotes(t *testing.T) {
	now := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		notes []string
		want  []string
		not   []string
	}{
		{"no notes", nil, nil, []string{"Notes from the operator"}},
		{"two notes", []string{"the rounding is in money.py", "  leave the tests alone  "},
			[]string{"# Notes from the operator", "- the rounding is in money.py\n", "- leave the tests alone\n"}, nil},
	}
	for _, tc := range tests {
		got := TicketContext(Ticket{ID: 7, Attempt: 3, Title: "t", Body: "b", Notes: tc.notes}, nil, "/w", now)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: context lacks %q:\n%s", tc.name, w, got)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(got, n) {
				t.Errorf("%s: context has %q:\n%s", tc.name, n, got)
			}
		}
		if i, j := strings.Index(got, "the rounding"), strings.Index(got, "leave the tests"); tc.notes != nil && (i < 0 || j < i) {
			t.Errorf("%s: notes out of order:\n%s", tc.name, got)
		}
	}
}
