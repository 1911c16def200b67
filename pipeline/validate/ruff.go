package validate

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ruffDiagnostic is one entry of `ruff check --output-format=json`. Code is
// null for syntax errors.
type ruffDiagnostic struct {
	Code     *string `json:"code"`
	Message  string  `json:"message"`
	Filename string  `json:"filename"`
	Location *struct {
		Row    int `json:"row"`
		Column int `json:"column"`
	} `json:"location"`
}

// parseRuff reads ruff's JSON array of diagnostics.
func parseRuff(data []byte, dir string) ([]Finding, error) {
	var diags []ruffDiagnostic
	if err := json.Unmarshal(data, &diags); err != nil {
		return nil, fmt.Errorf("parse ruff JSON output: %w", err)
	}
	findings := make([]Finding, 0, len(diags))
	for _, d := range diags {
		f := Finding{File: relPath(dir, d.Filename), Message: clip(limitLines(strings.TrimSpace(d.Message), 4), 400)}
		if d.Code != nil {
			f.Test = *d.Code
		}
		if d.Location != nil && d.Location.Row > 0 {
			f.Line = d.Location.Row
		}
		findings = append(findings, f)
	}
	return findings, nil
}

// interpretRuff decides a ruff run: exit 0 passes; exit 1 lists violations.
// Anything else (a config error, ruff missing) keeps the output's tail.
func interpretRuff(dir string, code int, stdout, output string) parsed {
	p := parsed{passed: code == 0}
	findings, err := parseRuff([]byte(strings.TrimSpace(stdout)), dir)
	switch {
	case err == nil && len(findings) > 0:
		p.findings = findings
		p.summary = fmt.Sprintf("%d findings", len(findings))
	case err == nil && code == 0:
		p.summary = "no findings"
	default:
		p.summary = exitSummary(code, output)
		if code != 0 {
			if tail := outputFinding(output); tail.Message != "" {
				p.findings = []Finding{tail}
			}
		}
	}
	return p
}
