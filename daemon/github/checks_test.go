package github

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
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

// TestJobLogKeepsTheTail: an Actions job log can run to hundreds of megabytes; only its
// last maxLogBytes (where pytest's summary is) is kept, and no more than a few times that
// is ever held in memory while reading it.
func TestJobLogKeepsTheTail(t *testing.T) {
	const total = 64 << 20
	chunk := bytes.Repeat([]byte("2026-01-01T00:00:00.0000000Z noise noise noise noise\n"), 20000)
	logSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for n := 0; n < total; n += len(chunk) {
			w.Write(chunk)
		}
		io.WriteString(w, "FAILED tests/test_money.py::test_average - ZeroDivisionError\n")
	}))
	t.Cleanup(logSrv.Close)
	b, cn := setupCanned(t)
	cn.set("GET /repos/acme/app/actions/jobs/7/logs", reply{302, map[string]string{"Location": logSrv.URL + "/signed-log"}, ""})
	p := newPublisher(b, &pushLog{})

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	log, err := p.jobLog(context.Background(), repoRef{"acme", "app"}, 7)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) > maxLogBytes || !strings.HasSuffix(log, "test_average - ZeroDivisionError\n") {
		t.Errorf("log of %d bytes kept %d bytes ending %q, want at most %d ending with the summary", total, len(log), log[max(0, len(log)-80):], maxLogBytes)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8*maxLogBytes {
		t.Errorf("reading a %d MB log allocated %d MB, want at most %d MB", total>>20, alloc>>20, 8*maxLogBytes>>20)
	}
}
