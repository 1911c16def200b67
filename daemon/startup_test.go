package daemon

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/worktree"
)

// TestCollectLeftovers: at start, what lost attempts left (a worktree of a crashed process,
// the working branch of a ticket whose lease expired or that ended without its worker, a
// baseline checkout's branch) is removed; a fix's branch, kept attempts' branches, a live
// lease's branch and branches of tickets this database does not know stay.
func TestCollectLeftovers(t *testing.T) {
	f := newFixture(t, 1)
	clock := newFakeClock(time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC))
	st, err := store.Open(context.Background(), filepath.Join(f.dir, "t.db"), store.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	claim := func(title string, lease time.Duration) store.Lease {
		t.Helper()
		if _, _, err := st.Enqueue(ctx, store.NewTicket{Source: "test", ExternalID: title, Repo: "shop", Title: title}); err != nil {
			t.Fatal(err)
		}
		l, err := st.Claim(ctx, "w1", lease)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	claim("lost", 5*time.Second)                   // 1: its daemon was killed
	fixed := claim("fixed", 5*time.Second)         // 2: done on its branch
	claim("live", time.Hour)                       // 3: another ticketd holds it
	cancelled := claim("cancelled", 5*time.Second) // 4: cancelled while its daemon was down
	if err := st.Complete(ctx, fixed.Ticket.ID, fixed.Token, store.Result{Branch: "ticketd/2-fixed"}); err != nil {
		t.Fatal(err)
	}
	if err := st.FinishCancelled(ctx, cancelled.Ticket.ID, cancelled.Token, "test"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute) // every 5 s lease has expired; the hour-long one has not

	// A crashed process's worktree on the lost ticket's branch.
	crashed := worktree.NewManager(filepath.Join(f.dir, "work"), nil)
	if _, err := crashed.Prepare(ctx, f.repo, "main", "ticketd/1-lost"); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"ticketd/1-attempt-1", "ticketd/1-attempt-1-2", "ticketd/2-fixed", "ticketd/3-live",
		"ticketd/4-cancelled", "ticketd/baseline-shop", "ticketd/agree-2", "ticketd/night-suite-2", "ticketd/2-ci-base",
		"ticketd/2-ci-fix", "ticketd/agree-2-mine", "ticketd/99-not-ours", "feature/mine"} {
		git(t, f.repo, "branch", b, "main")
	}

	d := &Daemon{Store: st, Clock: clock}
	trees := worktree.NewManager(filepath.Join(f.dir, "work"), nil)
	d.collectLeftovers(ctx, slog.New(slog.DiscardHandler), trees, map[string]config.Repo{"shop": {Path: f.repo, BaseRef: "main"}})

	got := strings.Fields(git(t, f.repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/"))
	want := []string{"feature/mine", "main", "ticketd/1-attempt-1", "ticketd/1-attempt-1-2", "ticketd/2-fixed", "ticketd/3-live", "ticketd/99-not-ours", "ticketd/agree-2-mine"}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("branches after the collection:\n got  %v\n want %v", got, want)
	}
	if wt := git(t, f.repo, "worktree", "list", "--porcelain"); strings.Count(wt, "worktree ") != 1 {
		t.Errorf("worktrees left:\n%s", wt)
	}
	if entries, _ := os.ReadDir(filepath.Join(f.dir, "work")); len(entries) != 0 {
		t.Errorf("workspace still holds %v", entries)
	}
}
