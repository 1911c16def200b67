package scriptedmodel

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParsePatch feeds arbitrary text to the parser (scenario and benchmark patches are
// outside input). The seed corpus is testdata/fuzz/FuzzParsePatch plus every *.patch
// under testdata. Invariants: no panic; an error wraps ErrInvalidPatch; a result has
// clean relative paths and hunks whose texts hold exactly the declared line counts.
func FuzzParsePatch(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*", "*.patch"))
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, patch string) {
		edits, err := ParsePatch(patch)
		if err != nil {
			if !errors.Is(err, ErrInvalidPatch) {
				t.Fatalf("error %v does not wrap ErrInvalidPatch", err)
			}
			return
		}
		if len(edits) == 0 {
			t.Fatal("no error and no edits")
		}
		for _, fe := range edits {
			if fe.Path == "" || path.IsAbs(fe.Path) || path.Clean(fe.Path) != fe.Path || strings.HasPrefix(fe.Path, "../") {
				t.Fatalf("unclean path %q", fe.Path)
			}
			for _, h := range fe.Hunks {
				if got := lineCount(h.OldText); got != h.OldLines {
					t.Fatalf("%s: old text %q has %d lines, header says %d", fe.Path, h.OldText, got, h.OldLines)
				}
				if got := lineCount(h.NewText); got != h.NewLines {
					t.Fatalf("%s: new text %q has %d lines, header says %d", fe.Path, h.NewText, got, h.NewLines)
				}
			}
		}
	})
}

// lineCount counts lines, a final line without "\n" included.
func lineCount(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}
