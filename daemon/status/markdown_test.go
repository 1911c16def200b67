package status

import (
	"strings"
	"testing"
)

// TestReportTableAlignment: a report's table keeps its column alignment under the page's
// Content-Security-Policy, which refuses inline style attributes.
func TestReportTableAlignment(t *testing.T) {
	got, err := renderReport([]byte("| file | lines |\n|:-----|------:|\n| a.py | 12 |\n"))
	if err != nil {
		t.Fatal(err)
	}
	html := string(got)
	if strings.Contains(html, "style=") {
		t.Errorf("the table carries inline style, which the page's CSP refuses:\n%s", html)
	}
	for _, want := range []string{`<td align="left">a.py</td>`, `<td align="right">12</td>`} {
		if !strings.Contains(html, want) {
			t.Errorf("rendered table lacks %s:\n%s", want, html)
		}
	}
}
