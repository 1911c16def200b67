package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// recorder is a testing.TB that records Skip, Fatalf and Logf instead of ending the test.
type recorder struct {
	testing.TB
	skipped, failed, logged string
}

func (r *recorder) Helper()                      {}
func (r *recorder) Skip(args ...any)             { r.skipped = fmt.Sprint(args...) }
func (r *recorder) Fatalf(f string, args ...any) { r.failed = fmt.Sprintf(f, args...) }
func (r *recorder) Logf(f string, args ...any)   { r.logged = fmt.Sprintf(f, args...) }

// TestForwards: the names every test uses here take toolenv's decision (its own test pins
// the whole table); a tool named by a string converts as the systemd test does.
func TestForwards(t *testing.T) {
	missing := errors.New("bwrap is not on PATH")
	tests := []struct {
		env              string
		wantRequired     bool
		wantNeedSkip     bool
		wantNeedFail     bool
		wantHaveFail     bool
		wantHaveLogsSkip bool
	}{
		{env: "", wantNeedSkip: true, wantHaveLogsSkip: true},
		{env: "pytest", wantNeedSkip: true, wantHaveLogsSkip: true},
		{env: "pytest,bwrap", wantRequired: true, wantNeedFail: true, wantHaveFail: true},
		{env: "1", wantRequired: true, wantNeedFail: true, wantHaveFail: true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s=%q", RequireEnv, tt.env), func(t *testing.T) {
			t.Setenv(RequireEnv, tt.env)
			if got := Required(Tool("bwrap")); got != tt.wantRequired {
				t.Errorf("Required(bwrap) = %v, want %v", got, tt.wantRequired)
			}
			r := &recorder{TB: t}
			Need(r, Bubblewrap, missing)
			if (r.skipped != "") != tt.wantNeedSkip || (r.failed != "") != tt.wantNeedFail {
				t.Errorf("Need: skipped %q, failed %q; want skip %v, fail %v", r.skipped, r.failed, tt.wantNeedSkip, tt.wantNeedFail)
			}
			r = &recorder{TB: t}
			if Have(r, Bubblewrap, missing) {
				t.Errorf("Have = true for a missing tool")
			}
			if (r.failed != "") != tt.wantHaveFail || (r.logged != "") != tt.wantHaveLogsSkip {
				t.Errorf("Have: failed %q, logged %q; want fail %v, log %v", r.failed, r.logged, tt.wantHaveFail, tt.wantHaveLogsSkip)
			}
		})
	}
}

// TestSettleIssues: the issue files of the folder are dated an hour back, other files and
// other folders' issues are left as they are.
func TestSettleIssues(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "sub")
	paths := map[string]bool{ // path: dated back
		filepath.Join(dir, "01.md"):     true,
		filepath.Join(dir, "02.md"):     true,
		filepath.Join(dir, "notes.txt"): false,
		filepath.Join(other, "03.md"):   false,
	}
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	for p := range paths {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	SettleIssues(t, dir)
	for p, back := range paths {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if age := time.Since(info.ModTime()); (age > 59*time.Minute) != back {
			t.Errorf("%s: modified %s ago; dated back %v, want %v", p, age.Round(time.Second), !back, back)
		}
	}
}
