package dupes

import (
	"slices"
	"strings"
	"testing"
)

func TestFiles(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		want       []string
	}{
		{"traceback", tbDivide, []string{"/home/ann/src/calc/cli.py", "/home/ann/src/calc/calc.py"}},
		{"prose", "The bug is in src/app/calc.py, see also app\\util.py.", []string{"src/app/calc.py", "app/util.py"}},
		{"library and tests left out", `File "/usr/lib/python3.11/json/decoder.py", line 3, in x
File "/venv/lib/python3.11/site-packages/req/api.py", line 2, in y
File "tests/test_calc.py", line 9, in test_div
File "/home/me/proj/src/app/calc.py", line 12, in divide
FAILED tests/test_calc.py::test_div`, []string{"/home/me/proj/src/app/calc.py"}},
		{"none", "it crashes when I click", nil},
		{"repeat", "calc.py calc.py calc.py", []string{"calc.py"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Files("title", tt.body)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Files = %q; want %q", got, tt.want)
			}
		})
	}
	var many strings.Builder
	for i := range 100 {
		many.WriteString(" m" + strings.Repeat("x", i) + ".py")
	}
	if n := len(Files("", many.String())); n != maxFiles {
		t.Errorf("Files named %d files; want %d", n, maxFiles)
	}
}
