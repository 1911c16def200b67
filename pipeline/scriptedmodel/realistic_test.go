package scriptedmodel

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/pipeline/tools"
)

const realisticBuggy = "def double(x):\n    label = 'double'\n    total = x + x\n    total = total + 1\n    return total\n"

const realisticFixed = "def double(x):\n    label = 'double'\n    total = x + x\n    return total\n"

const realisticPatch = `--- a/calc.py
+++ b/calc.py
@@ -1,5 +1,4 @@
 def double(x):
     label = 'double'
     total = x + x
-    total = total + 1
     return total
`

// TestMangledEditsAgainstTheRealTool sends every mangle kind's first try to the product's
// edit_file, then, when it is refused, the retry the realistic maker makes from the refusal
// (copying the quoted block, or re-reading first). Every kind must end with the file fixed,
// and either the ladder (a rung other than exact) or the refusal did the work.
func TestMangledEditsAgainstTheRealTool(t *testing.T) {
	p, err := compileCase(0, Case{Match: "m", Patch: realisticPatch})
	if err != nil {
		t.Fatal(err)
	}
	for kind, name := range mangleKinds {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "calc.py")
			if err := os.WriteFile(file, []byte(realisticBuggy), 0o644); err != nil {
				t.Fatal(err)
			}
			ws, err := tools.NewWorkspace(dir)
			if err != nil {
				t.Fatal(err)
			}
			m, ok := mangle(p.fixEdit(0), kind)
			if !ok {
				t.Fatalf("kind %s does not fit the hunk", name)
			}
			if m.args == p.fixes[0].args {
				t.Fatalf("kind %s left the edit unchanged: %s", name, m.args)
			}
			res, err := ws.Run(context.Background(), "edit_file", m.args)
			t.Logf("mangled args: %s\nrung %q, err %v", m.args, res.Rung, err)
			switch {
			case err == nil && res.Rung == tools.RungExact:
				t.Errorf("kind %s matched exactly: not a mangle", name)
			case err != nil:
				quoted := p.blockQuoted("fix:0", "error: "+err.Error())
				t.Logf("refused (block quoted: %v): %v", quoted, err)
				if _, err := ws.Run(context.Background(), "edit_file", p.fixes[0].args); err != nil {
					t.Fatalf("retry with the real text refused: %v", err)
				}
			}
			got, _ := os.ReadFile(file)
			if string(got) != realisticFixed {
				t.Errorf("file after kind %s:\ngot  %q\nwant %q", name, got, realisticFixed)
			}
		})
	}
}

func TestClosestBlock(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"none", "error: calc.py does not exist", ""},
		{"block then notes", "error: old_text was not found. The closest block is lines 2-3:\n    a = 1\n    b = 2\nHow your old_text differs from it:\n- x\n", "    a = 1\n    b = 2\n"},
		{"block then advice", "error: x. The closest block is lines 1-1:\ndef f():\nCopy old_text from the lines above", "def f():\n"},
	}
	for _, tt := range tests {
		if got := closestBlock(tt.in); got != tt.want {
			t.Errorf("%s: closestBlock(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

// TestRealismDrawsAreSeeded pins that the drawn mistakes depend on the seed and nothing else.
func TestRealismDrawsAreSeeded(t *testing.T) {
	p, err := compileCase(0, Case{Match: "m", Patch: realisticPatch})
	if err != nil {
		t.Fatal(err)
	}
	half := Realism{MangleEdit: 0.5, MissingPath: 0.5, RedundantRead: 0.5, MixedTurn: 0.5, Prose: 0.5, BrokenJSON: 0.5, WrongFirst: 0.5}
	sig := func(seed int64) string {
		r := compileRealism(p, seed, half)
		b, _ := json.Marshal([]any{r.missingPath, r.redundantRead, r.mixedTurn != nil, r.prose != "", r.brokenJSON, r.wrongFirst, len(r.mangled)})
		return string(b)
	}
	if a, b := sig(1), sig(1); a != b {
		t.Errorf("seed 1 drew %s then %s", a, b)
	}
	distinct := map[string]bool{}
	for seed := int64(1); seed <= 20; seed++ {
		distinct[sig(seed)] = true
	}
	if len(distinct) < 5 {
		t.Errorf("20 seeds drew only %d distinct sets of mistakes: %v", len(distinct), distinct)
	}
	if got := missingPath("pkg/calc.py"); got != "calc.py" {
		t.Errorf("missingPath(pkg/calc.py) = %q", got)
	}
	if got := missingPath("calc.py"); !strings.HasPrefix(got, "src/") {
		t.Errorf("missingPath(calc.py) = %q", got)
	}
}
