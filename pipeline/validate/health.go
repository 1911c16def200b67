package validate

import (
	"fmt"
	"strings"
)

// Problem is why a repository's baseline cannot gate fixes: no fix can be
// judged against a base commit whose test run collects nothing, whose tests
// all error, or whose check tool does not start. It is an environment
// problem for a human, never something a model should be sent to fix.
type Problem struct {
	Check   string   `json:"check"`
	Command []string `json:"command"`
	Reason  string   `json:"reason"`
	// Lines are the first lines of the error, for the log and the operator.
	Lines []string `json:"lines,omitempty"`
}

// String is one line: check, reason and command.
func (p Problem) String() string {
	return fmt.Sprintf("check %q: %s (command: %s)", p.Check, p.Reason, strings.Join(p.Command, " "))
}

// maxProblemLines bounds the error lines a Problem keeps.
const maxProblemLines = 8

// Health lists the problems of a baseline run, nil when it can gate fixes:
// a check whose tool did not start; a test check that collected no test, that
// left no test report, or whose every collected test errored.
func Health(results []Result) []Problem {
	var out []Problem
	for _, r := range results {
		p := Problem{Check: r.Name, Command: r.Command}
		switch {
		case r.NotStarted:
			p.Reason = "the tool could not start: " + firstLine(r.Summary)
		case r.Kind == KindPytest && r.Tests == 0:
			p.Reason = "the test run at the base commit collected no test"
		case r.Kind == KindPytest && r.Tests < 0 && !r.Passed:
			p.Reason = "the test run at the base commit produced no test report: " + firstLine(r.Summary)
		case r.Kind == KindPytest && r.Tests > 0 && r.Errored == r.Tests:
			p.Reason = fmt.Sprintf("every one of the %d collected tests errors at the base commit", r.Tests)
		case r.Kind == KindUnittest && r.Summary == "no tests collected":
			p.Reason = "the test run at the base commit collected no test"
		case r.TimedOut:
			p.Reason = "the check timed out at the base commit: " + firstLine(r.Summary)
		default:
			continue
		}
		p.Lines = problemLines(r)
		out = append(out, p)
	}
	return out
}

// problemLines are the first lines of a result's first error, else of its output.
func problemLines(r Result) []string {
	text := ""
	if len(r.Findings) > 0 {
		text = r.Findings[0].Message
		if f := r.Findings[0]; f.Test != "" {
			text = f.Test + ": " + text
		}
	}
	if strings.TrimSpace(text) == "" {
		text = r.Output
	}
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		lines = append(lines, clip(strings.TrimRight(l, "\r "), 300))
		if len(lines) == maxProblemLines {
			break
		}
	}
	return lines
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return clip(line, 300)
}
