package validate

import (
	"regexp"
	"strconv"
	"strings"
)

var (
	// mypyLine matches "pkg/a.py:12: error: Message  [code]", with an
	// optional column (--show-column-numbers) and an optional line.
	mypyLine    = regexp.MustCompile(`^(.+?\.pyi?):(?:(\d+):)?(?:(\d+):)? (error|note|warning): (.*)$`)
	mypyCode    = regexp.MustCompile(`\s+\[([a-z0-9-]+)\]$`)
	mypySummary = regexp.MustCompile(`^(Found \d+ errors? in \d+ files?.*|Success: .*)$`)
)

// parseMypy reads mypy's default text output. Errors become findings with
// the error code as Test; a note on the same file and line is appended to
// the error it explains. It also returns mypy's own summary line, if any.
func parseMypy(output, dir string) (findings []Finding, summary string) {
	for _, line := range strings.Split(strings.ReplaceAll(output, "\r\n", "\n"), "\n") {
		if m := mypySummary.FindString(line); m != "" {
			summary = m
			continue
		}
		m := mypyLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		file := relPath(dir, m[1])
		n, _ := strconv.Atoi(m[2])
		msg := m[5]
		if m[4] == "note" {
			if k := len(findings) - 1; k >= 0 && findings[k].File == file && findings[k].Line == n &&
				strings.Count(findings[k].Message, "\n") < 4 {
				findings[k].Message += "\n" + clip(msg, 200)
			}
			continue
		}
		f := Finding{File: file, Line: n}
		if c := mypyCode.FindStringSubmatch(msg); c != nil {
			f.Test = c[1]
			msg = msg[:len(msg)-len(c[0])]
		}
		f.Message = clip(msg, 400)
		findings = append(findings, f)
	}
	return findings, summary
}

// interpretMypy decides a mypy run: exit 0 passes, 1 lists type errors,
// 2 is a crash or usage error (the output's tail is kept).
func interpretMypy(dir string, code int, output string) parsed {
	findings, summary := parseMypy(output, dir)
	p := parsed{passed: code == 0, findings: findings, summary: summary}
	if p.summary == "" {
		if len(findings) > 0 {
			p.summary = errorCount(len(findings))
		} else {
			p.summary = exitSummary(code, output)
		}
	}
	if code != 0 && len(p.findings) == 0 {
		if tail := outputFinding(output); tail.Message != "" {
			p.findings = []Finding{tail}
		}
	}
	return p
}
