package github

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ticketd/ticketd/daemon/github/githubfake"
	"github.com/ticketd/ticketd/store"
)

// TestReadChecksPages: GitHub lists a commit's check runs and statuses 100 at a time at
// most; a red check on a later page (a large matrix) must make the verdict red, not green.
func TestReadChecksPages(t *testing.T) {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	runsWith := func(n, failAt int) []githubfake.CheckRun {
		var runs []githubfake.CheckRun
		for i := range n {
			c := githubfake.CheckRun{ID: int64(i + 1), Name: fmt.Sprintf("test (%d)", i), Status: "completed", Conclusion: "success"}
			if i == failAt {
				c.Conclusion = "failure"
			}
			runs = append(runs, c)
		}
		return runs
	}
	statusesWith := func(n, failAt int) []githubfake.Status {
		var sts []githubfake.Status
		for i := range n {
			s := githubfake.Status{Context: fmt.Sprintf("ci/%d", i), State: "success"}
			if i == failAt {
				s.State = "failure"
			}
			sts = append(sts, s)
		}
		return sts
	}
	tests := []struct {
		name     string
		runs     []githubfake.CheckRun
		statuses []githubfake.Status
		want     string
	}{
		{"all green over two pages", runsWith(150, -1), statusesWith(120, -1), store.CIGreen},
		{"a failed run on page two", runsWith(150, 120), nil, store.CIRed},
		{"a failed status on page two", runsWith(3, -1), statusesWith(130, 110), store.CIRed},
		{"more runs than are read", runsWith(1150, -1), nil, store.CIPending},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t)
			b.fake.SetCheckRuns(testRepo, sha, tt.runs)
			b.fake.SetStatuses(testRepo, sha, tt.statuses)
			runs, combined, err := readChecks(context.Background(), b.client, repoRef{"acme", "app"}, sha)
			if err != nil {
				t.Fatal(err)
			}
			v := classifyChecks(runs, combined, time.Minute, time.Hour)
			if v.State != tt.want {
				t.Errorf("%d runs, %d statuses: verdict %s (%s), want %s", len(tt.runs), len(tt.statuses), v.State, v.Detail, tt.want)
			}
		})
	}
}
