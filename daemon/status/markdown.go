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
// from elsewhere, so a report cannot run script or call home. A table's column alignment
// is an align attribute: the style attribute goldmark writes by default is inline style,
// which the page's Content-Security-Policy (style-src 'self') refuses.
var reportMarkdown = goldmark.New(goldmark.WithExtensions(
	extension.NewTable(extension.WithTableCellAlignMethod(extension.TableCellAlignAttribute)),
	extension.Strikethrough, extension.TaskList))

// renderReport turns markdown into HTML safe to embed in the page.
func renderReport(md []byte) (template.HTML, error) {
	var buf bytes.Buffer
	if err := reportMarkdown.Convert(md, &buf); err != nil {
		return "", err
	}
	return template.HTML(buf.String()), nil // #nosec: goldmark's safe mode, see reportMarkdown
}
