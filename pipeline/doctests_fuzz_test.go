package pipeline

import (
	"strings"
	"testing"
)

// FuzzDoctestTexts: any source the maker writes is read without a panic, and each doctest
// line kept is a line of the source.
func FuzzDoctestTexts(f *testing.F) {
	for _, s := range []string{
		"def add(a, b):\n    \"\"\"\n    >>> add(1, 2)\n    3\n    \"\"\"\n",
		"class A:\n    def f(self):\n        '''>>> A().f()\n        '''\n",
		"def (x):\n    >>> 1\n",
		"class :\n",
		">>>\n\t>>> x\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		for q, text := range doctestTexts(src) {
			for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
				if !strings.Contains(string(src), l) {
					t.Fatalf("doctest line %q of scope %q is not in the source %q", l, q, src)
				}
			}
		}
	})
}

// FuzzJSONPart: what is taken of a cheap role's answer is part of it, and valid JSON
// whenever it is not the answer as it came.
func FuzzJSONPart(f *testing.F) {
	for _, s := range []string{`{"verdict":"pass"}`, "```json\n{\"a\":1}\n```", `Here: {"a": {"b": 2}} done`, `{ } }`, "}{", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := jsonPart(s)
		if !strings.Contains(s, got) {
			t.Fatalf("jsonPart(%q) = %q, not part of the answer", s, got)
		}
	})
}
