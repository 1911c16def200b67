package validate

import (
	"context"
	"strings"
	"testing"
)

// A check whose tool cannot start gates nothing, so its result aborts the attempt rather
// than being compared with an identical failure at the base (which would pass any change).
func TestNotStartedAborts(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		check   Check
		aborted bool
	}{
		{"command not found status", Check{Name: "lint", Kind: KindRuff, Command: []string{"sh", "-c", "echo 'ruff: command not found' >&2; exit 127"}}, true},
		{"missing executable", Check{Name: "lint", Kind: KindCommand, Command: []string{"/nonexistent/ticketd-tool"}}, true},
		{"python module missing", Check{Name: "types", Kind: KindCommand, Command: []string{"sh", "-c", "echo '/usr/bin/python3: No module named mypy' >&2; exit 1"}}, true},
		{"a real failure is not an abort", Check{Name: "tests", Kind: KindCommand, Command: []string{"sh", "-c", "echo 'FAILED test_x'; exit 1"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Runner{Sandbox: testSandbox(t)}
			res := r.Run(context.Background(), dir, []Check{tt.check})[0]
			if got := Aborted([]Result{res}) != ""; got != tt.aborted || res.NotStarted != tt.aborted {
				t.Fatalf("aborted=%v not_started=%v (abort %q, summary %q); want %v", got, res.NotStarted, res.Abort, res.Summary, tt.aborted)
			}
			if tt.aborted && !strings.Contains(res.Abort, "could not start") {
				t.Errorf("abort reason %q does not say the tool could not start", res.Abort)
			}
		})
	}
}
