package dupes

import (
	"strings"
	"testing"
)

// TestParseReadsAtMost64KiB: a frame past the first 64 KiB of a body is not read.
func TestParseReadsAtMost64KiB(t *testing.T) {
	if s := Parse("t", strings.Repeat("x", maxText)+tbDivide); s.Frame != (Frame{}) {
		t.Errorf("frame %v found past 64 KiB", s.Frame)
	}
	if s := Parse("t", strings.Repeat("x", maxText-len(tbDivide)-1)+"\n"+tbDivide); s.Frame != (Frame{"calc.py", "divide"}) {
		t.Errorf("frame %v; want calc.py:divide inside 64 KiB", s.Frame)
	}
}
