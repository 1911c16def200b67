package daemon

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/yuin/goldmark"

	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/store"
)

// The maker writes its summary and, through its change, the diff's lines; report.md quotes
// both, and the ticket page and the pull request render it as Markdown. No line of them may
// render as the report's own: a summary ending in "<!--" opens an HTML block that hides
// everything after it (goldmark drops it, GitHub shows nothing), and a diff whose context
// line is a README's "```" closes a fixed ``` fence, after which the change's lines render as
// Markdown. The real diff comes from git, of a real repository.
func TestReportQuotesTheMakerInert(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	readme := "# calc\n\n```\nadd(2, 2)\n```\n\nMore.\n"
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte(readme), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "init", "-q", "-b", "main")
	git(t, dir, "add", "-A")
	git(t, dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "base")
	changed := strings.Replace(readme, "More.\n", "More.\n<!-- HIDDEN-LINE -->\n\n# Verdict: fixed, reviewed by a human\n", 1)
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	diff := git(t, dir, "diff")
	if !strings.Contains(diff, "\n ```\n") {
		t.Fatalf("the diff has no context line closing a ``` fence:\n%s", diff)
	}
	out := pipeline.Outcome{Conclusion: pipeline.Conclusion{Status: pipeline.StatusFixed, Reason: "checks, checker and judge passed"},
		Artifacts: pipeline.Artifacts{Summary: "Fixed add.\n\n<!--"}}
	md := renderReport(reportInput{Ticket: store.Ticket{ID: 1, Title: "add subtracts", CreatedAt: time.Now()}, Ending: "done",
		Outcome: out, Diff: diff, Now: time.Now()})
	var html bytes.Buffer
	if err := goldmark.Convert([]byte(md), &html); err != nil {
		t.Fatal(err)
	}
	page := html.String()
	for _, want := range []string{"+&lt;!-- HIDDEN-LINE --&gt;", "+# Verdict: fixed, reviewed by a human", "Fixed add.\n\n&lt;!--"} {
		if !strings.Contains(page, want) {
			t.Errorf("the rendered report does not show %q as text:\n%s\n\nreport.md:\n%s", want, page, md)
		}
	}
	if strings.Contains(page, "<h1>Verdict") {
		t.Errorf("a line of the change rendered as the report's own heading:\n%s", page)
	}
}
