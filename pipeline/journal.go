package pipeline

import (
	"fmt"
	"slices"
	"strings"
)

// journal is what an attempt tried, one short line each, for the escalation report, and the
// flaky tests it met. The stages write to it; nothing reads it back until the attempt ends.
type journal struct {
	lines []string
	flaky []string // tests that failed, then passed alone ("check: id"), once each
}

// note adds one line, flattened so reports stay one line per step.
func (j *journal) note(format string, args ...any) {
	j.lines = append(j.lines, clip(strings.Join(strings.Fields(fmt.Sprintf(format, args...)), " "), 400))
}

// noteFlaky records tests that failed, then passed alone, once each per attempt.
func (j *journal) noteFlaky(flaky []string) {
	for _, f := range flaky {
		if !slices.Contains(j.flaky, f) {
			j.flaky = append(j.flaky, f)
			j.note("flaky test: %s failed, then passed when re-run alone; not blamed on the fix", f)
		}
	}
}
