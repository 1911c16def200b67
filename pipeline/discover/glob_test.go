package discover

import "testing"

// TestGlobRegexp: the glob of testpaths and reviewers' paths, whose classes follow Python's
// fnmatch (pytest expands testpaths with glob.iglob); the two translators it replaced made
// "[]]x" a regular expression that does not compile and "[^a]" a negation.
func TestGlobRegexp(t *testing.T) {
	for _, tt := range []struct {
		glob       string
		match, not []string
	}{
		{"tests", []string{"tests"}, []string{"a/tests", "tests/x", "testsx"}},
		{"tests/*", []string{"tests/a", "tests/.x"}, []string{"tests/a/b", "tests"}},
		{"**/tests", []string{"tests", "a/tests", "a/b/tests"}, []string{"a/tests/b", "xtests"}},
		{"src/**", []string{"src/a", "src/a/b"}, []string{"src2/a"}},
		{"src/**/test_*.py", []string{"src/test_a.py", "src/x/y/test_a.py"}, []string{"src/x/a_test.py"}},
		{"t?st", []string{"test", "tast"}, []string{"t/st", "tst"}},
		{"[!_]*", []string{"a", "ab"}, []string{"_a", "a/b"}},
		{"[]]x", []string{"]x"}, []string{"x", "]]x"}},
		{"[!]]x", []string{"ax"}, []string{"]x"}},
		{"[^a]", []string{"^", "a"}, []string{"b"}},
		{"[[:alpha:]]", []string{"[]", ":]", "a]"}, []string{"b]", "a"}},
		{`[\]`, []string{`\`}, []string{"]"}},
		{"a[b", []string{"a[b"}, []string{"ab"}},
		{"a.b(c)+", []string{"a.b(c)+"}, []string{"axb(c)+"}},
	} {
		re, err := GlobRegexp(tt.glob)
		if err != nil {
			t.Errorf("GlobRegexp(%q): %v", tt.glob, err)
			continue
		}
		for _, p := range tt.match {
			if !re.MatchString(p) {
				t.Errorf("GlobRegexp(%q) (%s) does not match %q", tt.glob, re, p)
			}
		}
		for _, p := range tt.not {
			if re.MatchString(p) {
				t.Errorf("GlobRegexp(%q) (%s) matches %q", tt.glob, re, p)
			}
		}
	}
	if _, err := GlobRegexp("[z-a]"); err == nil {
		t.Error("GlobRegexp([z-a]): no error for a reversed range")
	}
}

// A testpath whose class starts with "]" names what Python's glob finds; the old translator
// compiled nothing and called it missing.
func TestTestpathMatchesPythonClasses(t *testing.T) {
	files := []string{"]x/test_a.py", "^/test_b.py"}
	for _, tp := range []string{"[]]x", "[^a]"} {
		if !testpathMatches(tp, files) {
			t.Errorf("testpath %q matches nothing among %q", tp, files)
		}
	}
}

// python_files and --doctest-glob are fnmatch patterns ("*" crosses "/"), with the same
// classes as GlobRegexp's: "[^t]est_*.py" is a class of "^" and "t" in Python.
func TestFnmatchClasses(t *testing.T) {
	for _, tt := range []struct {
		pattern, name string
		want          bool
	}{
		{"[^t]est_*.py", "test_a.py", true},
		{"[^t]est_*.py", "best_a.py", false},
		{"[!t]est_*.py", "best_a.py", true},
		{"[]]*.py", "]a.py", true},
	} {
		if got := fnmatch(tt.pattern, tt.name); got != tt.want {
			t.Errorf("fnmatch(%q, %q) = %v; want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
}
