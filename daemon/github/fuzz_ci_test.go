package github

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	gh "github.com/google/go-github/v89/github"

	"github.com/ticketd/ticketd/store"
)

// FuzzFailedTests: any log maps to at most maxLogTests distinct pytest node ids, each of a
// .py file inside the repository (no absolute path, no "..", no leading dash), never a
// panic.
func FuzzFailedTests(f *testing.F) {
	for _, s := range []string{
		"FAILED tests/test_a.py::test_x - AssertionError\nERROR tests/test_b.py::T::test_y\n",
		"2026-12-03T01:02:03.1234567Z FAILED tests/test_a.py::test_x[1-2] - boom\r\n",
		"FAILED /etc/passwd.py::x\nFAILED ../up.py::x\nFAILED -k.py::x\nFAILED tests/a.py\n",
		"FAILED tests/test_a.py::test_x\nFAILED tests/test_a.py::test_x\n",
		"=== 3 failed, 2 passed in 0.1s ===\n", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, log string) {
		ids := failedTests(log)
		if len(ids) > maxLogTests {
			t.Fatalf("%d ids; want at most %d", len(ids), maxLogTests)
		}
		seen := map[string]bool{}
		for _, id := range ids {
			file, _, ok := strings.Cut(id, "::")
			if !ok || !strings.HasSuffix(file, ".py") || strings.HasPrefix(file, "/") || strings.HasPrefix(file, "-") ||
				slices.Contains(strings.Split(file, "/"), "..") || strings.ContainsAny(id, " \t\n\x00") {
				t.Errorf("id %q from %q", id, log)
			}
			if seen[id] {
				t.Errorf("id %q twice", id)
			}
			seen[id] = true
		}
	})
}

// FuzzClassifyChecks: any check-runs and status payload, as go-github decodes them, gives
// one known state; a failed run is always red, and an empty answer is stuck only after the
// while.
func FuzzClassifyChecks(f *testing.F) {
	for _, s := range [][2]string{
		{`{"total_count":1,"check_runs":[{"id":1,"name":"tests","status":"completed","conclusion":"failure"}]}`, `{"state":"pending","statuses":[]}`},
		{`{"total_count":1,"check_runs":[{"id":1,"name":"tests","status":"completed","conclusion":"action_required"}]}`, `{}`},
		{`{"total_count":0,"check_runs":[]}`, `{"state":"failure","statuses":[{"context":"ci/x","state":"error"}]}`},
		{`{"check_runs":[{"status":"in_progress","conclusion":null},{"status":"completed","conclusion":"success"}]}`, `{"statuses":[{"state":"success"}]}`},
		{`{"check_runs":[{"status":"waiting"}]}`, `null`},
		{`{}`, `{}`},
	} {
		f.Add(s[0], s[1], int64(0))
	}
	f.Fuzz(func(t *testing.T, runsJSON, statusJSON string, ageMin int64) {
		var runs gh.ListCheckRunsResults
		var st gh.CombinedStatus
		if json.Unmarshal([]byte(runsJSON), &runs) != nil || json.Unmarshal([]byte(statusJSON), &st) != nil {
			return
		}
		age := time.Duration(ageMin%(48*60)) * time.Minute
		v := classifyChecks(runs.CheckRuns, &st, age, 30*time.Minute)
		switch v.State {
		case store.CIPending, store.CIGreen, store.CIRed, store.CIStuck:
		default:
			t.Fatalf("state %q", v.State)
		}
		for _, r := range runs.CheckRuns {
			if r.GetConclusion() == "failure" && v.State != store.CIRed {
				t.Errorf("a failed run gave %s", v.State)
			}
		}
		if len(runs.CheckRuns) == 0 && len(st.Statuses) == 0 && (v.State == store.CIStuck) != (age >= 30*time.Minute) {
			t.Errorf("no checks at age %s gave %s", age, v.State)
		}
	})
}
