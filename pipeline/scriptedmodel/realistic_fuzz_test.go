package scriptedmodel

import (
	"strings"
	"testing"
)

// FuzzClosestBlock feeds edit_file refusals, real and garbled, to the parser the realistic
// maker copies its retry from: it never panics and only returns lines of its input.
func FuzzClosestBlock(f *testing.F) {
	f.Add("error: old_text was not found in a.py. The closest block is lines 1-2:\ndef f():\n    pass\nHow your old_text differs from it:\n- x\n")
	f.Add("The closest block is lines 3-3:\nx\nCopy old_text from the lines above")
	f.Add("The closest block is lines ")
	f.Add("")
	f.Fuzz(func(t *testing.T, in string) {
		got := closestBlock(in)
		for l := range strings.SplitSeq(strings.TrimSuffix(got, "\n"), "\n") {
			if l != "" && !strings.Contains(in, l) {
				t.Errorf("closestBlock(%q) returned the line %q, which is not in its input", in, l)
			}
		}
	})
}
