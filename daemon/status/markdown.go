package status

import (
	"bytes"
	"html/template"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// reportMarkdown renders report.md. The report quotes the issue and the model's summary,
// both untrusted: goldmark without html.WithUnsafe drops raw HTML and empties javascript:
// and other dangerous link targets, and the page's Content-Security-Policy loads no image
// from elsewhere, so a report cannot run script or call home.
var reportMarkdown = goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.TaskList))

// renderReport turns markdown into HTML safe to embed in the page.
func renderReport(md []byte) (template.HTML, error) {
	var buf bytes.Buffer
	if err := reportMarkdown.Convert(md, &buf); err != nil {
		return "", err
	}
	return template.HTML(buf.String()), nil // #nosec: goldmark's safe mode, see reportMarkdown
}
