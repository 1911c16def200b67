package validate

import (
	"bytes"
	"testing"
)

// TestBlockStartOnlySkipsWhatCannotMatch: blockStart passes over a line without topDefRe's
// keywords at its start, and answers every other line as the expression does.
func TestBlockStartOnlySkipsWhatCannotMatch(t *testing.T) {
	for _, line := range []string{
		"def f(x):", "def\tf():", "class C(Base):", "class C:", "async def g():", "async  def g():", "@decorator",
		"x = 1", "define = 2", "classes = []", "asyncio.run(main())", "async_x = 1", "default: int = 3", "import os",
		"deff()", "class", "def ", "# def f():", "if x:", "d", "é = 1",
	} {
		name, kind, ok := blockStart([]byte(line))
		wantName, wantKind, wantOK := "", "", false
		if line[0] == '@' {
			wantKind, wantOK = "@", true
		} else if m := topDefRe.FindSubmatch([]byte(line)); m != nil {
			wantName, wantKind, wantOK = string(m[1]), "def", true
			if bytes.HasPrefix([]byte(line), []byte("class")) {
				wantKind = "class"
			}
		}
		if name != wantName || kind != wantKind || ok != wantOK {
			t.Errorf("blockStart(%q) = %q, %q, %v; the expression gives %q, %q, %v", line, name, kind, ok, wantName, wantKind, wantOK)
		}
	}
}
