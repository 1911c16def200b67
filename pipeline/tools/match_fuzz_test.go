package tools

import (
	"strings"
	"testing"
)

// FuzzMatchEdit checks the ladder's invariants on arbitrary input: no panic; a match is a
// real region of the file (in bounds, in order, not overlapping; line rungs start at a line
// start); nothing outside the matched region changes; an exact unique match always wins, at
// its own place; an exact repeated match is refused unless replace_all.
func FuzzMatchEdit(f *testing.F) {
	for _, c := range loadCorpus(f) {
		f.Add(c.file, c.old, c.new, c.meta["replace_all"] == "true")
	}
	f.Add("a\nb\nc\n", "b", "B", false)
	f.Add("a\r\nb\r\n", "a\nb\n", "x\n", false)
	f.Add("x\n\tx\n", "x", "y", true)
	f.Add("\u201cq\u201d\n", `"q"`, `'q'`, false)
	f.Fuzz(func(t *testing.T, content, old, new string, replaceAll bool) {
		if len(content) > 1<<16 || len(old) > 1<<12 || len(new) > 1<<12 {
			return
		}
		e, err := matchEdit(content, old, new, replaceAll, "f.py")
		exact := 0
		if old != "" {
			exact = strings.Count(content, old)
		}
		if exact == 1 && old != new {
			i := strings.Index(content, old)
			if err != nil {
				t.Fatalf("unique exact match refused: %v\ncontent %q\nold %q", err, content, old)
			}
			if e.rung != RungExact || len(e.regions) != 1 || e.regions[0].start != i || e.regions[0].end != i+len(old) {
				t.Fatalf("unique exact match at %d not taken: rung %s regions %+v", i, e.rung, e.regions)
			}
			if want := splitFile(content).withEndings(new); e.regions[0].text != want {
				t.Fatalf("exact match writes %q, want new_text %q in the file's line endings", e.regions[0].text, want)
			}
		}
		if exact > 1 && !replaceAll && old != new && err == nil {
			t.Fatalf("old_text occurs %d times exactly, but the edit was applied (rung %s)", exact, e.rung)
		}
		if err != nil {
			if len(e.regions) != 0 {
				t.Fatalf("error %v with regions %+v", err, e.regions)
			}
			return
		}
		if len(e.regions) == 0 || (len(e.regions) > 1 && !replaceAll) {
			t.Fatalf("rung %s: %d regions (replace_all %v)", e.rung, len(e.regions), replaceAll)
		}
		at := 0
		for _, r := range e.regions {
			if r.start < at || r.end < r.start || r.end > len(content) {
				t.Fatalf("region %+v out of order or bounds (after %d, len %d)", r, at, len(content))
			}
			lineRung := e.rung != RungExact && e.rung != RungLineEndings
			if lineRung && r.start > 0 && content[r.start-1] != '\n' {
				t.Fatalf("rung %s region starts mid-line at %d", e.rung, r.start)
			}
			at = r.end
		}
		got := e.apply(content)
		first, last := e.regions[0], e.regions[len(e.regions)-1]
		if !strings.HasPrefix(got, content[:first.start]) || !strings.HasSuffix(got[first.start:], content[last.end:]) {
			t.Fatalf("text outside the matched regions changed:\ncontent %q\ngot     %q\nregions %+v", content, got, e.regions)
		}
		// Between regions the original text is kept too.
		rest := got[first.start:]
		for i, r := range e.regions {
			if !strings.HasPrefix(rest, r.text) {
				t.Fatalf("region %d text not where expected", i)
			}
			rest = rest[len(r.text):]
			next := len(content)
			if i+1 < len(e.regions) {
				next = e.regions[i+1].start
			}
			if !strings.HasPrefix(rest, content[r.end:next]) {
				t.Fatalf("text between regions %d and %d changed", i, i+1)
			}
			rest = rest[next-r.end:]
		}
	})
}
