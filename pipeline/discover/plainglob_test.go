package discover

import (
	"regexp"
	"strings"
	"testing"
)

// plainCases are patterns and names matchPlain must judge as the compiled pattern does:
// stars that must give back, "?" on multi-byte characters and on bytes that are no UTF-8,
// literal backslashes and regexp metacharacters.
var plainCases = struct{ patterns, names []string }{
	patterns: []string{"", "*", "?", "test_*.py", "*_test.py", "*test*", "t?st_*.py", "*.*", "**", "*?", "*??", "?*?",
		"a*b*c", "*a*a*", `a\b`, "a.b", "(x)|y", "^$", "+*+", "check_*", "*/tests/*.py", "*é", "é*"},
	names: []string{"", "a", "test_a.py", "test_.py", "a_test.py", "tests", "tast_b.py", "test_a.pyc", "x.test_a.py",
		"abc", "aXbYc", "acb", "aaa", "a", `a\b`, "a.b", "aXb", "(x)|y", "+a+", "é", "€", "\xe2\x82", "\xff\xfe",
		"test_é.py", "te\xffst_a.py", "check_€", "/a/tests/b.py", "a/tests/b/c.py", strings.Repeat("a", 40) + "c"},
}

// TestMatchPlainIsTheRegexp: a pattern without a class matches exactly what its compiled
// expression matches.
func TestMatchPlainIsTheRegexp(t *testing.T) {
	for _, p := range plainCases.patterns {
		for _, n := range plainCases.names {
			checkPlain(t, p, n)
		}
	}
}

func checkPlain(t *testing.T, pattern, name string) {
	t.Helper()
	re := regexp.MustCompile(translate(pattern))
	want := re.MatchString(name)
	if plainGlob(pattern) {
		if got := matchPlain(pattern, name); got != want {
			t.Errorf("matchPlain(%q, %q) = %v, the expression %q says %v", pattern, name, got, translate(pattern), want)
		}
	}
	if got := fnmatch(pattern, name); got != want {
		t.Errorf("fnmatch(%q, %q) = %v, the expression %q says %v", pattern, name, got, translate(pattern), want)
	}
}

func FuzzMatchPlain(f *testing.F) {
	for _, p := range plainCases.patterns {
		for _, n := range plainCases.names[:8] {
			f.Add(p, n)
		}
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		if len(pattern) > 64 || len(name) > 256 {
			return
		}
		if _, err := regexp.Compile(translate(pattern)); err != nil {
			return
		}
		checkPlain(t, pattern, name)
	})
}
