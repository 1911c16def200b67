package daemon

import "fmt"

// Caps on what a result folder holds. A diff is written by the model and the code under
// test: a test that writes a 2 GiB fixture would otherwise become a 2 GiB patch file and
// a report nobody can open. A capped file says so at its end, with what was left out.
const (
	MaxPatchBytes  = 8 << 20 // results/<id>/patch (and each attempt's copy)
	MaxReportBytes = 1 << 20 // results/<id>/report.md
)

// capText returns s cut to at most max bytes (on a line boundary when one is near) and a
// closing line saying how much was left out and where the whole is.
func capText(s string, max int, whole string) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for i := cut; i > max-4096 && i > 0; i-- {
		if s[i-1] == '\n' {
			cut = i
			break
		}
	}
	for cut > 0 && s[cut]&0xC0 == 0x80 { // not inside a UTF-8 sequence
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n[ticketd: cut at %d of %d bytes; %s]\n", cut, len(s), whole)
}
