package pipeline

import (
	"slices"
	"testing"
)

// TestHunkHeaderOnlySkipsWhatCannotMatch: isHunkHeader and hunkHeaderMatch answer as the
// expression does, for headers and for lines that only look like them.
func TestHunkHeaderOnlySkipsWhatCannotMatch(t *testing.T) {
	for _, l := range []string{
		"@@ -1,2 +1,3 @@", "@@ -10 +12 @@ def f():", "@@ -0,0 +1 @@", "@@ -1,2 +x @@", "@@ +1 @@", "@@@ -1 +1 @@",
		" @@ -1 +1 @@", "+@@ -1 +1 @@", "@@ -", "@@", "", "diff --git a/x b/x", "--- a/x", "+++ b/x", "-@@ -1 +1 @@",
	} {
		if got, want := isHunkHeader(l), hunkHeader.MatchString(l); got != want {
			t.Errorf("isHunkHeader(%q) = %v, the expression says %v", l, got, want)
		}
		if got, want := hunkHeaderMatch(l), hunkHeader.FindStringSubmatch(l); !slices.Equal(got, want) {
			t.Errorf("hunkHeaderMatch(%q) = %q, the expression finds %q", l, got, want)
		}
	}
}
