package status

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClipDiffering(t *testing.T) {
	loop := "budget: budget exhausted: loop: read_files called 5 times with the same arguments "
	tests := []struct {
		name string
		in   []string
		n    int
		want []string
	}{
		{"short texts stay whole", []string{"a", "b"}, 60, []string{"a", "b"}},
		{"one long text is clipped at its end", []string{strings.Repeat("x ", 40)}, 10, []string{"x x x x x…"}},
		{"a shared beginning is left out", []string{loop + "(case 4)", loop + "(case 14)", "preflight: HTTP 401: invalid api key"}, 40,
			[]string{"…(case 4)", "…(case 14)", "preflight: HTTP 401: invalid api key"}},
		{"from the differing word", []string{"checks failed: tests/test_a.py::test_one assert 1 == 2", "checks failed: tests/test_b.py::test_two assert 3 == 4"}, 20,
			[]string{"…tests/test_a.py::te…", "…tests/test_b.py::te…"}},
		{"identical texts are clipped from the start", []string{loop, loop}, 20, []string{"budget: budget exha…", "budget: budget exha…"}},
		{"whitespace collapses", []string{"a\n\n  b"}, 60, []string{"a b"}},
		{"runes are not cut", []string{"héllo wörld ünd mehr", "héllo wörld anders"}, 60, []string{"…wörld ünd mehr", "…wörld anders"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := clipDiffering(tt.in, tt.n)
			for i := range tt.want {
				if got[i] != tt.want[i] {
					t.Errorf("item %d = %q, want %q", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// FuzzClipDiffering: whatever the (valid UTF-8) texts, two that differ never
// read the same once clipped, when the part after their shared prefix fits.
func FuzzClipDiffering(f *testing.F) {
	f.Add("error: a long shared prefix then one", "error: a long shared prefix then two")
	f.Add("x", "y")
	f.Fuzz(func(t *testing.T, a, b string) {
		a, b = strings.Join(strings.Fields(a), " "), strings.Join(strings.Fields(b), " ")
		if a == b || strings.HasPrefix(a, b) || strings.HasPrefix(b, a) || !utf8.ValidString(a) || !utf8.ValidString(b) {
			return
		}
		got := clipDiffering([]string{a, b}, 30)
		ws := withContext(a, commonPrefix(a, b), 30)
		if len([]rune(a[ws:])) <= 29 && len([]rune(b[ws:])) <= 29 && got[0] == got[1] {
			t.Errorf("%q and %q both read %q", a, b, got[0])
		}
	})
}
