package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ticketd/ticketd/daemon/intake"
	"github.com/ticketd/ticketd/scripts/testenv"
	"github.com/ticketd/ticketd/store"
)

// TestKillMidIntake SIGKILLs the built ticketd while it takes a folder of issues in (some
// tickets made, not all), starts it again, and stops it (SIGTERM) once every issue is a
// ticket. Each issue must be one ticket, with the file's whole title and text; none charged
// an attempt; no worktree left.
func TestKillMidIntake(t *testing.T) {
	t.Parallel() // a process, folder, database and model server of its own
	if testing.Short() {
		t.Skip("builds the ticketd binary and kills it mid-intake")
	}
	bin := buildTicketd(t)
	// A few issues the night can fix, and many more it only takes in: a folder large enough
	// that its intake is seen under way even where the test looks seldom (-race).
	const fixable, issues = 4, 300
	c := newChaosNight(t, "sqlite", fixable)
	for i := fixable; i < issues; i++ {
		body := fmt.Sprintf("---\ntitle: Report %d of a rounding quirk\nrepo: shop\n---\nOrder %d rounds half a cent the wrong way.\n", i, i)
		if err := os.WriteFile(filepath.Join(c.later, fmt.Sprintf("%03d.md", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	testenv.SettleIssues(t, c.later)
	c.fileMore(t, issues)
	// taken is how many issues are tickets: the newest ticket's id in a fresh database, read
	// on a connection kept open, so a look costs little beside the intake it watches.
	taken := func() int {
		st := c.daemonDB.store(t)
		if st == nil {
			return 0
		}
		newest, err := st.List(t.Context(), store.Filter{Limit: 1})
		if err != nil || len(newest) == 0 {
			return 0
		}
		return int(newest[0].ID)
	}
	hit := false
	for try := 0; try < 4 && !hit; try++ {
		cmd, done := c.startOnce(t, bin)
		for !hit {
			n := taken()
			if n > 0 && n < issues {
				hit = true
				break
			}
			if n == issues {
				break // intake passed between two looks: the kill misses it
			}
			select {
			case err := <-done:
				t.Fatalf("ticketd once ended (%v) before its intake\n%s", err, c.log(30))
			case <-time.After(time.Millisecond):
			}
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Fatal(err)
		}
		<-done
		// The look may have read an intake the kill then found finished.
		n := taken()
		hit = n > 0 && n < issues
		t.Logf("SIGKILLed pid %d with %d of %d issues taken in", cmd.Process.Pid, n, issues)
		if !hit {
			c.daemonDB.close()
			// Start over with a fresh database: the next start takes the whole folder again.
			os.Remove(c.location)
			os.Remove(c.location + "-wal")
			os.Remove(c.location + "-shm")
		}
	}
	if !hit {
		t.Skip("intake finished between the test's looks in 4 starts (a fast machine): no kill landed mid-intake")
	}
	cmd, done := c.startOnce(t, bin)
	deadline := time.Now().Add(3 * time.Minute)
	for taken() < issues {
		select {
		case err := <-done:
			t.Fatalf("ticketd once ended (%v) before its intake\n%s", err, c.log(30))
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the restart did not take the folder in within 3 minutes\n%s", c.log(30))
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("ticketd once did not stop within 2 minutes of SIGTERM\n%s", c.log(30))
	}

	seen := map[string]int{}
	for _, s := range c.summaries(t) {
		seen[s.ExternalID]++
		data, err := os.ReadFile(filepath.Join(c.dir, "issues", s.ExternalID))
		if err != nil {
			t.Errorf("ticket %d: external id %q names no issue file: %v", s.ID, s.ExternalID, err)
			continue
		}
		is, err := intake.ParseIssue(data)
		if err != nil {
			t.Fatal(err)
		}
		if s.Title != is.Title || strings.TrimSpace(s.Body) != strings.TrimSpace(is.Body) {
			t.Errorf("ticket %d: title %q, body %q; want the file's %q, %q", s.ID, s.Title, s.Body, is.Title, is.Body)
		}
		if s.State != store.StateQueued && s.State != store.StateDone || s.State == store.StateQueued && s.Attempts != 0 {
			t.Errorf("ticket %d: %s with %d attempts (%s); want queued uncharged, or done", s.ID, s.State, s.Attempts, s.Reason)
		}
	}
	if len(seen) != issues {
		t.Errorf("%d issues became tickets; want %d", len(seen), issues)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("issue %s: %d tickets; want one", id, n)
		}
	}
	if wt := gitOut(t, c.repo, "worktree", "list", "--porcelain"); strings.Count(wt, "worktree ") != 1 {
		t.Errorf("worktrees left registered:\n%s", wt)
	}
}
