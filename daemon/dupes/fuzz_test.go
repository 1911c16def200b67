package dupes

import (
	"slices"
	"strings"
	"testing"
)

// FuzzParse: issue text is untrusted. Parse never panics, is deterministic, finds frames
// with a file and function and no path separator left, test ids of path::name, sorted and
// unique.
func FuzzParse(f *testing.F) {
	for _, s := range []string{tbDivide, tbDivideOther, tbParse, "FAILED tests/test_calc.py::TestCalc::test_divide[0-1] - x",
		`File "", line 1, in f`, `File "/", line 1, in f`, "Traceback (most recent call last)\n", "::::", "a.py::", "x.py::_\x00::b",
		strings.Repeat(`File "a/b.py", line 1, in g`+"\n", 50)} {
		f.Add("title", s)
	}
	f.Fuzz(func(t *testing.T, title, body string) {
		s := Parse(title, body)
		if s2 := Parse(title, body); s2.Frame != s.Frame || !slices.Equal(s.Tests, s2.Tests) || len(s.Words) != len(s2.Words) {
			t.Fatalf("Parse is not deterministic: %+v vs %+v", s, s2)
		}
		if s.Frame != (Frame{}) && (s.Frame.File == "" || s.Frame.Func == "" || strings.ContainsAny(s.Frame.File, `/\`)) {
			t.Errorf("frame %+v: want a base name and a function", s.Frame)
		}
		if !slices.IsSorted(s.Tests) || len(slices.Compact(slices.Clone(s.Tests))) != len(s.Tests) {
			t.Errorf("tests %q: want sorted and unique", s.Tests)
		}
		if fs := Files(title, body); len(fs) > maxFiles || !slices.Equal(fs, Files(title, body)) {
			t.Errorf("Files = %q: want at most %d, deterministic", fs, maxFiles)
		}
		for _, id := range s.Tests {
			if !strings.Contains(id, ".py::") || strings.HasPrefix(id, "./") {
				t.Errorf("test id %q: want path.py::name", id)
			}
		}
	})
}
