package daemon

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/pipeline/validate"
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

// meetingChecks is the real check runner whose tool probes (the start-up checks) first
// wait for the model endpoint to have received a preflight request, and say they started.
type meetingChecks struct {
	*validate.Runner
	once        sync.Once
	probing     chan struct{} // closed when the start-up checks' first tool probe begins
	preflighted chan struct{} // closed when the endpoint received its first request
}

func (m *meetingChecks) Preflight(ctx context.Context, dir string, c validate.Check, seen *validate.Probed) error {
	m.once.Do(func() { close(m.probing) })
	select {
	case <-m.preflighted:
	case <-time.After(time.Minute): // only when the test fails: it must not hang
		return errors.New("no preflight request reached the endpoint while the start-up checks ran")
	}
	return m.Runner.Preflight(ctx, dir, c, seen)
}

// TestStartupChecksRunBesidePreflight: the repositories' start-up checks run while the
// model endpoints answer the night's preflight, not after it. The endpoint holds its
// answer until a start-up check has begun, and the check waits for the endpoint's request:
// a night that ran them one after the other would fail its preflight.
func TestStartupChecksRunBesidePreflight(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server
	realNight(t)
	f := newFixture(t, 1)
	_, scripted := f.scripted(t, scriptedmodel.Options{Seed: 1})
	target, err := url.Parse(scripted)
	if err != nil {
		t.Fatal(err)
	}
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	checks := &meetingChecks{probing: make(chan struct{}), preflighted: make(chan struct{})}
	var requested sync.Once
	forward := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requested.Do(func() { close(checks.preflighted) })
		select {
		case <-checks.probing:
		case <-time.After(time.Minute): // only when the test fails
			http.Error(w, "the start-up checks did not run beside the preflight", http.StatusBadRequest)
			return
		}
		forward.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	cfg := f.config(t, proxy.URL+strings.TrimPrefix(scripted, target.Scheme+"://"+target.Host), 1)
	checks.Runner = checkRunner(cfg, "", discard)
	st, err := OpenStore(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d := &Daemon{Config: cfg, Store: st, Logger: discard, Checks: checks}
	if _, err := d.RunNight(context.Background(), "test"); err != nil {
		t.Fatalf("RunNight: %v", err)
	}
	tk, err := st.Get(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if tk.State != store.StateDone {
		t.Errorf("ticket 1 %s (%s), want done: the night worked after its overlapped start", tk.State, tk.Reason)
	}
}
