package tools

import (
	"strings"
	"testing"
)

// TestMissReport pins what a failed edit tells the model: the closest real block with its
// line numbers, and how old_text differs from it.
func TestMissReport(t *testing.T) {
	file := "import os\n\n\ndef parse(raw):\n    out = {}\n    for part in raw.split(\"&\"):\n        key, _, value = part.partition(\"=\")\n        out[key] = value\n    return out\n\n\ndef other():\n    return 1\n"
	tests := []struct {
		name, old string
		want      []string
	}{
		{"a line missing", "    out = {}\n    for part in raw.split(\"&\"):\n        out[key] = value\n",
			[]string{"closest block is lines 5-8:\n    out = {}\n", "line 7 \"key, _, value = part.partition(\\\"=\\\")\" is missing from your old_text"}},
		{"a line changed", "    for part in raw.split(\"&\"):\n        key, _, value = part.partition(\":\")\n",
			[]string{"closest block is lines 6-7:", "line 7 differs: the file has \"key, _, value = part.partition(\\\"=\\\")\", your old_text has \"key, _, value = part.partition(\\\":\\\")\""}},
		{"an extra line", "    out = {}\n    out.clear()\n    for part in raw.split(\"&\"):\n",
			[]string{"closest block is lines 5-6:", "your old_text has \"out.clear()\", which is not in the file here"}},
		{"indentation and a change", "def parse(raw):\n  out = {}\n      for part in raw.split(\"&\"):\n    key, _, value = part.partition(\"=\")\n    out[key] = value\n    return output\n",
			[]string{"closest block is lines 4-9:", "indentation differs on 4 lines: line 5 is indented with 4 spaces, your old_text line with 2 spaces", "line 9 differs"}},
		{"nothing alike", "class Foo(Bar):\n    pass\n", []string{"No part of m.py resembles old_text"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := matchEdit(file, tt.old, "x\n", false, "m.py")
			if err == nil {
				t.Fatalf("old %q matched", tt.old)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("old %q\n got: %s\nwant: containing %q", tt.old, err, w)
				}
			}
		})
	}
}
