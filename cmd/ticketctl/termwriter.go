package main

import (
	"fmt"
	"io"
	"unicode/utf8"
)

// termWriter makes text that came from outside (issue titles and bodies, model output, tool
// results, server error messages) safe to print on an operator's terminal. Such text is
// untrusted: an escape sequence in an issue title could retitle the window, rewrite what is
// on screen, or on some terminals answer back as typed input. Every byte that a terminal
// would interpret is shown as a visible escape instead (ESC becomes `\x1b`), so nothing is
// hidden and nothing is executed.
//
// Table output keeps newlines and tabs, which ticketctl itself writes. With --json the
// encoder has already escaped C0 controls; termWriter then escapes what JSON leaves raw (C1
// controls such as U+009B, the 8-bit CSI, and bidirectional overrides) as \uXXXX, which is
// valid inside a JSON string and decodes back to the same text.
type termWriter struct {
	w    io.Writer
	json bool
	// pending holds the first bytes of a UTF-8 sequence split across two writes.
	pending []byte
}

func newTermWriter(w io.Writer, json bool) *termWriter { return &termWriter{w: w, json: json} }

// Write filters p. It reports len(p) on success, so fmt and tabwriter see a plain writer.
func (t *termWriter) Write(p []byte) (int, error) {
	data := p
	if len(t.pending) > 0 {
		data = append(t.pending, p...)
		t.pending = nil
	}
	out := make([]byte, 0, len(data)+16)
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size <= 1 {
			if !utf8.FullRune(data[i:]) {
				// The rest of this rune arrives with the next write.
				t.pending = append([]byte(nil), data[i:]...)
				break
			}
			// Invalid UTF-8 is shown, not passed on (JSON output never has any: the
			// encoder replaces it).
			if t.json {
				out = append(out, `\ufffd`...)
			} else {
				out = fmt.Appendf(out, `\x%02x`, data[i])
			}
			i++
			continue
		}
		out = t.appendRune(out, r, data[i:i+size])
		i += size
	}
	if _, err := t.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (t *termWriter) appendRune(out []byte, r rune, raw []byte) []byte {
	switch {
	case r == '\n' || r == '\t':
		return append(out, raw...)
	case !dangerous(r):
		return append(out, raw...)
	case t.json:
		return fmt.Appendf(out, `\u%04x`, r)
	case r < 0x100:
		return fmt.Appendf(out, `\x%02x`, r)
	default:
		return fmt.Appendf(out, `\u%04x`, r)
	}
}

// dangerous reports runes a terminal acts on rather than shows: C0 controls (ESC, BEL, CR,
// backspace ...), DEL, C1 controls (U+0080–U+009F, which include CSI and OSC), and the
// bidirectional embedding, override and isolate characters that reorder what is displayed.
func dangerous(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f:
		return true
	case r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	}
	return false
}
