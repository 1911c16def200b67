package toolenv

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB that records Skip and Fatalf instead of ending the test.
type recorder struct {
	testing.TB
	skipped, failed, logged string
}

func (r *recorder) Helper()                      {}
func (r *recorder) Skip(args ...any)             { r.skipped = fmt.Sprint(args...) }
func (r *recorder) Fatalf(f string, args ...any) { r.failed = fmt.Sprintf(f, args...) }
func (r *recorder) Logf(f string, args ...any)   { r.logged = fmt.Sprintf(f, args...) }

func TestNeed(t *testing.T) {
	missing := errors.New("bwrap is not on PATH")
	tests := []struct {
		env      string
		tool     Tool
		err      error
		wantSkip bool
		wantFail bool
	}{
		{env: "", tool: Bubblewrap, err: missing, wantSkip: true},
		{env: "0", tool: Bubblewrap, err: missing, wantSkip: true},
		{env: "1", tool: Bubblewrap, err: missing, wantFail: true},
		{env: "all", tool: Bubblewrap, err: missing, wantFail: true},
		{env: "pytest,bwrap", tool: Bubblewrap, err: missing, wantFail: true},
		{env: "pytest,mypy", tool: Bubblewrap, err: missing, wantSkip: true},
		{env: "1", tool: Bubblewrap, err: nil},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s=%q/%v", RequireEnv, tt.env, tt.err), func(t *testing.T) {
			t.Setenv(RequireEnv, tt.env)
			r := &recorder{TB: t}
			Need(r, tt.tool, tt.err)
			if (r.skipped != "") != tt.wantSkip || (r.failed != "") != tt.wantFail {
				t.Fatalf("skipped %q, failed %q; want skip %v, fail %v", r.skipped, r.failed, tt.wantSkip, tt.wantFail)
			}
			for _, msg := range []string{r.skipped, r.failed} {
				if msg != "" && (!strings.Contains(msg, "apt-get install -y bubblewrap") || !strings.Contains(msg, "not on PATH")) {
					t.Errorf("message %q: want the install command and why the tool is missing", msg)
				}
			}
		})
	}
}

func TestHave(t *testing.T) {
	missing := errors.New("bwrap is not on PATH")
	tests := []struct {
		env      string
		err      error
		want     bool
		wantFail bool
	}{
		{env: "", err: missing, want: false},
		{env: "pytest", err: missing, want: false},
		{env: "1", err: missing, wantFail: true},
		{env: "1", err: nil, want: true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s=%q/%v", RequireEnv, tt.env, tt.err), func(t *testing.T) {
			t.Setenv(RequireEnv, tt.env)
			r := &recorder{TB: t}
			got := Have(r, Bubblewrap, tt.err)
			if got != tt.want || (r.failed != "") != tt.wantFail || r.skipped != "" {
				t.Fatalf("Have = %v, failed %q, skipped %q; want %v, fail %v, no skip", got, r.failed, r.skipped, tt.want, tt.wantFail)
			}
			if !got && !tt.wantFail && !strings.Contains(r.logged, "running without bwrap") {
				t.Errorf("logged %q, want it to say what the test runs without", r.logged)
			}
		})
	}
}
