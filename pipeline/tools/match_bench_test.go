package tools

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkMatchEdit3000Lines measures the ladder on a 3,000-line module: an exact hit, a
// hit on a late rung (anchors), and a miss, which also builds the closest-block report.
func BenchmarkMatchEdit3000Lines(b *testing.B) {
	var src strings.Builder
	for i := range 600 {
		fmt.Fprintf(&src, "def f%d(x):\n    y = x + %d\n    z = y * 2\n    return z\n\n", i, i)
	}
	content := src.String()
	cases := []struct{ name, old string }{
		{"exact", "def f300(x):\n    y = x + 300\n"},
		{"anchors", "def f300(x):\n    y = x + 300\n    z = y * 3\n    return z\n"},
		{"miss", "def g(x):\n    w = x - 1\n    return w\n"},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = matchEdit(content, c.old, "pass\n", false, "m.py")
			}
		})
	}
}
