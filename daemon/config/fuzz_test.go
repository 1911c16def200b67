package config

import (
	"strings"
	"testing"
)

// FuzzParse: whatever the file holds, Parse returns a configuration or an error that names
// the file; explaining the error never panics (odd keys, lists of lists, anchors).
func FuzzParse(f *testing.F) {
	f.Add(valid)
	f.Add("night:\n  wokers: 2\n")
	f.Add("repos:\n  a.b:\n    checks: [[1]]\n")
	f.Add("x: &a [*a]\n")
	f.Add("night:\n  window 6h\n  lease: 60s\n")
	f.Add("night:\n  schedule \"0 1 * * *\"\n  workers: 2\n")
	f.Add("store:\n\tpath: x.db\n")
	f.Fuzz(func(t *testing.T, text string) {
		_, err := Parse("cfg.yaml", []byte(text))
		if err != nil && !strings.Contains(err.Error(), "cfg.yaml") {
			t.Fatalf("error %q does not name the file", err)
		}
	})
}
