package validate

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// addSeeds adds every file under testdata/<sub> to the fuzz corpus.
func addSeeds(f *testing.F, sub string) {
	f.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", sub, "*"))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no seeds in testdata/%s: %v", sub, err)
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// checkFindings holds for every parser: lines are never negative and a
// message stays short enough for the maker's prompt.
func checkFindings(t *testing.T, fs []Finding) {
	t.Helper()
	for _, fd := range fs {
		if fd.Line < 0 {
			t.Errorf("negative line in %+v", fd)
		}
		if len(fd.Message) > 1200 {
			t.Errorf("message of %d bytes", len(fd.Message))
		}
	}
}

func FuzzParseJUnit(f *testing.F) {
	addSeeds(f, "junit")
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := parseJUnit(data, "/work/tree")
		if err != nil {
			return
		}
		if r.failed+r.errors+r.skipped > r.tests {
			t.Errorf("counts: %d failed + %d errors + %d skipped > %d tests", r.failed, r.errors, r.skipped, r.tests)
		}
		if len(r.findings) < r.failed+r.errors {
			t.Errorf("%d findings for %d failed and %d errors", len(r.findings), r.failed, r.errors)
		}
		checkFindings(t, r.findings)
		if len(r.outcomes) > r.tests {
			t.Errorf("%d outcomes from %d test cases", len(r.outcomes), r.tests)
		}
		for id, o := range r.outcomes {
			if o == OutcomePassed && slices.ContainsFunc(r.findings, func(f Finding) bool { return f.Test == id }) {
				t.Errorf("%s passed and has a finding", id)
			}
		}
		markXPassed(r.outcomes, string(data))
		_ = r.summary()
	})
}

func FuzzParseUnittest(f *testing.F) {
	addSeeds(f, "unittest")
	f.Fuzz(func(t *testing.T, data []byte) {
		r := parseUnittest(string(data), "/work/tree")
		if r.ran < -1 {
			t.Errorf("ran = %d", r.ran)
		}
		if n := strings.Count(string(data), "FAIL: ") + strings.Count(string(data), "ERROR: ") + strings.Count(string(data), "UNEXPECTED SUCCESS: "); len(r.findings) > n {
			t.Errorf("%d findings from %d headers", len(r.findings), n)
		}
		checkFindings(t, r.findings)
		for _, f := range r.findings {
			if o := r.outcomes[f.Test]; f.Test != "" && o == OutcomePassed {
				t.Errorf("%s has a failure block yet reads as passed", f.Test)
			}
		}
	})
}

func FuzzParseRuff(f *testing.F) {
	addSeeds(f, "ruff")
	f.Fuzz(func(t *testing.T, data []byte) {
		fs, err := parseRuff(data, "/work/tree")
		if err != nil {
			return
		}
		checkFindings(t, fs)
		p := interpretRuff("/work/tree", 1, string(data), "")
		if p.passed {
			t.Errorf("exit 1 passed")
		}
	})
}

func FuzzParseMypy(f *testing.F) {
	addSeeds(f, "mypy")
	f.Fuzz(func(t *testing.T, data []byte) {
		fs, _ := parseMypy(string(data), "/work/tree")
		checkFindings(t, fs)
		if len(fs) > strings.Count(string(data), "\n")+1 {
			t.Errorf("%d findings from %d lines", len(fs), strings.Count(string(data), "\n")+1)
		}
	})
}
