package scriptedmodel

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// describe prints a parse result compactly for table comparisons.
func describe(edits []FileEdit) string {
	var b strings.Builder
	for _, f := range edits {
		fmt.Fprintf(&b, "%s new=%v del=%v", f.Path, f.New, f.Deleted)
		for _, h := range f.Hunks {
			fmt.Fprintf(&b, " [-%d,%d +%d,%d %q -> %q]", h.OldStart, h.OldLines, h.NewStart, h.NewLines, h.OldText, h.NewText)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func TestParsePatch(t *testing.T) {
	tests := []struct {
		name, patch, want string
	}{
		{
			name:  "git modify",
			patch: "diff --git a/m.py b/m.py\nindex 1..2 100644\n--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,3 @@ def f():\n a\n-b\n+B\n c\n",
			want:  "m.py new=false del=false [-1,3 +1,3 \"a\\nb\\nc\\n\" -> \"a\\nB\\nc\\n\"]\n",
		},
		{
			name:  "new file",
			patch: "diff --git a/n.py b/n.py\nnew file mode 100644\nindex 0000000..e69de29\n--- /dev/null\n+++ b/n.py\n@@ -0,0 +1,2 @@\n+x\n+y\n",
			want:  "n.py new=true del=false [-0,0 +1,2 \"\" -> \"x\\ny\\n\"]\n",
		},
		{
			name:  "empty new file has no hunks",
			patch: "diff --git a/pkg/__init__.py b/pkg/__init__.py\nnew file mode 100644\nindex 0000000..e69de29\n",
			want:  "pkg/__init__.py new=true del=false\n",
		},
		{
			name:  "no newline at end, both sides",
			patch: "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n",
			want:  "m.py new=false del=false [-1,2 +1,2 \"a\\nb\" -> \"a\\nc\"]\n",
		},
		{
			name:  "plain diff -u with timestamps, CRLF, single-line counts",
			patch: "--- m.py\t2026-01-01 00:00:00\r\n+++ m.py\t2026-01-02 00:00:00\r\n@@ -3 +3 @@\r\n-old\r\n+new\r\n",
			want:  "m.py new=false del=false [-3,1 +3,1 \"old\\n\" -> \"new\\n\"]\n",
		},
		{
			name:  "context line with stripped space, two hunks, commit message and signature around",
			patch: "From abc\nSubject: fix\n\n---\n--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,3 @@\n a\n\n-b\n+B\n@@ -10,1 +10,2 @@\n z\n+zz\n-- \n2.39.5\n",
			want:  "m.py new=false del=false [-1,3 +1,3 \"a\\n\\nb\\n\" -> \"a\\n\\nB\\n\"] [-10,1 +10,2 \"z\\n\" -> \"z\\nzz\\n\"]\n",
		},
		{
			name:  "quoted name",
			patch: "--- \"a/sp ace.py\"\n+++ \"b/sp ace.py\"\n@@ -1 +1 @@\n-a\n+b\n",
			want:  "sp ace.py new=false del=false [-1,1 +1,1 \"a\\n\" -> \"b\\n\"]\n",
		},
		{
			name:  "deleted file",
			patch: "--- a/old.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n",
			want:  "old.py new=false del=true [-1,1 +0,0 \"gone\\n\" -> \"\"]\n",
		},
	}
	for _, tt := range tests {
		edits, err := ParsePatch(tt.patch)
		if got := describe(edits); err != nil || got != tt.want {
			t.Errorf("%s: ParsePatch(%q)\n got  %s (err %v)\n want %s", tt.name, tt.patch, got, err, tt.want)
		}
	}
}

func TestParsePatchErrors(t *testing.T) {
	tests := []struct{ name, patch, want string }{
		{"empty", "", "no file changes"},
		{"prose", "just words\n", "no file changes"},
		{"count too small", "--- a/m\n+++ b/m\n@@ -1,2 +1,2 @@\n a\n", "ends early"},
		{"count too large for new side", "--- a/m\n+++ b/m\n@@ -1,1 +1,1 @@\n+a\n+b\n-c\n", "more lines than its header"},
		{"garbage inside hunk", "--- a/m\n+++ b/m\n@@ -1,2 +1,2 @@\n a\n*b\n", `unexpected "*b"`},
		{"bad header", "--- a/m\n+++ b/m\n@@ -x +1 @@\n-a\n+b\n", "range start"},
		{"hunk outside file", "@@ -1 +1 @@\n-a\n+b\n", "outside a file section"},
		{"absolute path", "--- /etc/passwd\n+++ /etc/passwd\n@@ -1 +1 @@\n-a\n+b\n", "relative"},
		{"escape", "--- a/../x\n+++ b/../x\n@@ -1 +1 @@\n-a\n+b\n", "leaves the repository"},
		{"git dir", "--- a/.git/config\n+++ b/.git/config\n@@ -1 +1 @@\n-a\n+b\n", "touches .git"},
		{"rename", "diff --git a/x b/y\nsimilarity index 90%\nrename from x\nrename to y\n", "renames and copies"},
		{"rename via names", "--- a/x\n+++ b/y\n@@ -1 +1 @@\n-a\n+b\n", "renames are not supported"},
		{"binary", "diff --git a/x.png b/x.png\nindex 1..2 100644\nBinary files a/x.png and b/x.png differ\n", "binary"},
		{"mode only", "diff --git a/x b/x\nold mode 100644\nnew mode 100755\n", "mode-only"},
		{"file twice", "--- a/m\n+++ b/m\n@@ -1 +1 @@\n-a\n+b\n--- a/m\n+++ b/m\n@@ -5 +5 @@\n-a\n+b\n", "appears twice"},
		{"new file with old lines", "--- /dev/null\n+++ b/n\n@@ -1 +1 @@\n-a\n+b\n", "single hunk starting at -0,0"},
		{"no newline first", "--- a/m\n+++ b/m\n@@ -1 +1 @@\n\\ No newline at end of file\n-a\n+b\n", "no line before it"},
		{"huge count", "--- a/m\n+++ b/m\n@@ -1,99999999999 +1 @@\n-a\n", "range count"},
	}
	for _, tt := range tests {
		edits, err := ParsePatch(tt.patch)
		if !errors.Is(err, ErrInvalidPatch) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: ParsePatch(%q)\n got  %s err %v\n want an ErrInvalidPatch containing %q", tt.name, tt.patch, describe(edits), err, tt.want)
		}
	}
}

func TestParsePatchOfTestdata(t *testing.T) {
	edits, err := ParsePatch(readTestdata(t, "stats/fix.patch"))
	if err != nil {
		t.Fatal(err)
	}
	// Applying the hunks as exact replacements must give the hand-written fixed files.
	base := readTestdata(t, "stats/base/calc/stats.py")
	for _, h := range edits[0].Hunks {
		if strings.Count(base, h.OldText) != 1 {
			t.Fatalf("hunk old text %q occurs %d times in the base file", h.OldText, strings.Count(base, h.OldText))
		}
		base = strings.Replace(base, h.OldText, h.NewText, 1)
	}
	if want := readTestdata(t, "stats/want/calc/stats.py"); base != want {
		t.Errorf("patched stats.py:\n%s\nwant:\n%s", base, want)
	}
	if got, want := edits[1].Content(), readTestdata(t, "stats/want/calc/test_empty.py"); !edits[1].New || got != want {
		t.Errorf("new file %s (new=%v):\n%s\nwant:\n%s", edits[1].Path, edits[1].New, got, want)
	}
}
