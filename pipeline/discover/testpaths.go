package discover

import (
	"cmp"
	"fmt"
	"regexp"
	"strings"
)

// MissingTestpaths splits the configured testpaths pytest uses into those that name nothing
// among files (the repository's, slash-separated) and those that match: pytest expands each
// as a recursive glob from the root and silently drops one that matches nothing, and when
// none matches it collects from the root, as without testpaths. Both nil when no testpaths
// apply (none configured, or a check's command names its own paths).
func (t *Tests) MissingTestpaths(files []string) (missing, kept []string) {
	if t == nil {
		return nil, nil
	}
	for _, p := range t.testpaths {
		if testpathMatches(p, files) {
			kept = append(kept, p)
		} else {
			missing = append(missing, p)
		}
	}
	return missing, kept
}

// MissingTestpathsNote says which configured testpaths name nothing at the base (files)
// and what pytest collects instead, "" when each names something.
func (t *Tests) MissingTestpathsNote(files []string) string {
	missing, kept := t.MissingTestpaths(files)
	if len(missing) == 0 {
		return ""
	}
	config := cmp.Or(t.Config, "the configuration")
	if len(kept) == 0 {
		return fmt.Sprintf("%s sets testpaths = %s, which names no file or folder at the base commit: pytest then collects from the repository root, every test module it finds there, as without testpaths; fix or remove the setting",
			config, strings.Join(missing, " "))
	}
	which := "which is not at the base commit: pytest skips it"
	if len(missing) > 1 {
		which = "which are not at the base commit: pytest skips them"
	}
	return fmt.Sprintf("%s's testpaths name %s, %s without a word and collects from %s alone; fix or remove the setting",
		config, strings.Join(missing, ", "), which, strings.Join(kept, " "))
}

// testpathMatches reports whether testpath, a glob as Python's glob.iglob(recursive=True)
// reads it (** any folders, * and ? within one name), names a file of files or a folder
// holding one.
func testpathMatches(testpath string, files []string) bool {
	p := strings.TrimSuffix(strings.TrimPrefix(strings.ReplaceAll(testpath, `\`, "/"), "./"), "/")
	if p == "" || p == "." {
		return len(files) > 0
	}
	re := globRegexp(p)
	for _, f := range files {
		for d := f; d != "." && d != "/" && d != ""; d = parentDir(d) {
			if d == p || re != nil && re.MatchString(d) {
				return true
			}
		}
	}
	return false
}

func parentDir(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return "."
	}
	return p[:i]
}

// globRegexp translates a recursive glob (GlobRegexp); nil when it holds no wildcard or does
// not compile.
func globRegexp(pattern string) *regexp.Regexp {
	if !strings.ContainsAny(pattern, "*?[") {
		return nil
	}
	re, err := GlobRegexp(pattern)
	if err != nil {
		return nil
	}
	return re
}
