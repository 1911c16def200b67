package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/store/clock/clocktest"
)

// TestGCFiles: gc deletes the kept-attempt branches and results/ folders of tickets finished
// before the age, the fix branches only with --branches, and nothing of a ticket still open
// or finished recently.
func TestGCFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	repo, out, db := filepath.Join(dir, "sample"), filepath.Join(dir, "results"), filepath.Join(dir, "ticketd.db")
	gitc := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-C", repo}, args...)...)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, b)
		}
		return string(b)
	}
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	gitc("init", "-q", "-b", "main")
	gitc("commit", "-q", "--allow-empty", "-m", "base")

	old := time.Now().Add(-48 * time.Hour)
	clock := clocktest.New(old).Step(time.Second)
	s, err := store.Open(ctx, db, store.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	finish := func(ext string, done bool) int64 {
		t.Helper()
		id, _, err := s.Enqueue(ctx, store.NewTicket{Source: "test", ExternalID: ext, Repo: "sample", Title: ext, MaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		l, err := s.Claim(ctx, "w", time.Hour)
		if err != nil || l.Ticket.ID != id {
			t.Fatalf("claim: %v", err)
		}
		res := filepath.Join(out, itoa(id))
		if err := os.MkdirAll(filepath.Join(res, "attempt-1"), 0o755); err != nil {
			t.Fatal(err)
		}
		if done {
			err = s.Complete(ctx, id, l.Token, store.Result{Branch: "ticketd/" + itoa(id) + "-fix", ResultDir: res})
		} else {
			_, err = s.Fail(ctx, id, l.Token, store.Failure{Kind: store.FailFix, Reason: "no", Branch: "ticketd/" + itoa(id) + "-attempt-1", ResultDir: res})
		}
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	done := finish("done", true)      // 1: fix branch, a kept attempt and a released one
	escalated := finish("esc", false) // 2: one kept attempt
	open, _, _ := s.Enqueue(ctx, store.NewTicket{Source: "test", ExternalID: "open", Repo: "sample", Title: "open"})
	s.Close()
	for _, b := range []string{"ticketd/1-fix", "ticketd/1-attempt-1", "ticketd/1-attempt-1-released", "ticketd/2-attempt-1", "ticketd/2-attempt-1-2",
		"ticketd/" + itoa(open) + "-attempt-1", "ticketd/12-attempt-1", "feature/mine"} {
		gitc("branch", b)
	}
	cfg := filepath.Join(dir, "config.yaml")
	text := "store:\n  path: " + db + "\noutput: " + out + "\nrepos:\n  sample:\n    path: " + repo + "\nmodels:\n  endpoints:\n    local: {base_url: \"http://127.0.0.1:9/v1\"}\n  roles:\n"
	for _, r := range []string{"triage", "maker", "checker", "judge"} {
		text += "    " + r + ": {endpoint: local, model: gpt-test}\n"
	}
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	branches := func() []string {
		return strings.Fields(gitc("for-each-ref", "--format=%(refname:short)", "refs/heads/"))
	}

	var got gcJSON
	decode(t, ctl(t, "--config", cfg, "gc", "--json", "--older-than", "72h"), &got)
	if len(got.BranchesDeleted) != 0 || len(got.ResultsDeleted) != 0 {
		t.Errorf("gc --older-than 72h of two-day-old tickets deleted %+v", got)
	}
	r := ctl(t, "--config", cfg, "gc", "--older-than", "24h")
	t.Logf("gc:\n%s%s", r.stdout, r.stderr)
	want := []string{"feature/mine", "main", "ticketd/1-fix", "ticketd/12-attempt-1", "ticketd/" + itoa(open) + "-attempt-1"}
	slices.Sort(want)
	if b := branches(); !slices.Equal(b, want) {
		t.Errorf("branches after gc = %v\nwant %v (fix branch kept without --branches; other tickets' untouched)", b, want)
	}
	for _, id := range []int64{done, escalated} {
		if _, err := os.Stat(filepath.Join(out, itoa(id))); !os.IsNotExist(err) {
			t.Errorf("results/%d still there (%v)", id, err)
		}
	}
	mustContain(t, "gc stdout", r.stdout, "deleted 4 kept-attempt branch(es) and 2 results/ folder(s)")
	mustContain(t, "gc stderr", r.stderr, "--branches deletes them too")

	decode(t, ctl(t, "--config", cfg, "gc", "--json", "--branches", "--older-than", "24h"), &got)
	if !slices.Equal(got.BranchesDeleted, []string{"sample:ticketd/1-fix"}) {
		t.Errorf("gc --branches deleted %v, want only the done ticket's fix branch", got.BranchesDeleted)
	}
	decode(t, ctl(t, "--db", db, "gc", "--json", "--older-than", "24h"), &got)
	if !strings.Contains(got.FilesSkipped, "--config") {
		t.Errorf("gc without --config: files_skipped %q, want it to ask for --config", got.FilesSkipped)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
