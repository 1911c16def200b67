package daemon

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/store"
)

// TestWindowGrace: when the run window closes, claims stop; an attempt still running gets
// the grace period. One that finishes inside it is done; one that does not is stopped and
// released without spending its attempt. The night's clock is the test's: the window closes
// while the first attempt waits for its checker, and the grace period ends only when the
// test says, so no load can reorder them.
func TestWindowGrace(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	tests := []struct {
		name         string
		endGrace     bool // the checker never answers and the grace period runs out
		wantState    store.State
		wantAttempts int
	}{
		{name: "finishes within the grace period", wantState: store.StateDone, wantAttempts: 1},
		// The checker is asked after the maker's edit passed the gate, and never answers:
		// the grace period ends with the edit in the worktree, the partial work to keep.
		{name: "stopped when the grace period ends", endGrace: true, wantState: store.StateQueued, wantAttempts: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, 2)
			_, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
			hold := holdRole(t, url, "checker", "")
			cfg := f.config(t, hold.URL, 1)
			// Heartbeats follow the test's clock too: a lease of the store's (real) clock
			// must outlast the attempt unbeaten.
			// (The attempt's wall-clock budget of 5 minutes follows the night's clock as well.)
			cfg.Night.Window, cfg.Night.Grace, cfg.Night.Lease = time.Minute, time.Minute, time.Hour
			clock := newFakeClock(time.Now())
			st, done := startNight(t, context.Background(), cfg, clock)
			hold.waitArrived(t)
			clock.Advance(cfg.Night.Window) // claims stop before Advance returns
			if tt.endGrace {
				clock.Advance(cfg.Night.Grace)
				hold.waitAbandoned(t) // the stopped attempt gave up its checker call
			} else {
				hold.Release()
			}
			n := night{store: st, rep: awaitNight(t, done)}
			if !errors.Is(n.rep.Stopped, ErrWindowClosed) {
				t.Errorf("night stopped by %v, want the window", n.rep.Stopped)
			}
			if len(n.rep.Touched) != 1 {
				t.Fatalf("night touched tickets %v, want only the first: no claim after the window", n.rep.Touched)
			}
			tk, err := n.store.Get(context.Background(), n.rep.Touched[0])
			if err != nil {
				t.Fatal(err)
			}
			if tk.State != tt.wantState || tk.Attempts != tt.wantAttempts {
				t.Errorf("ticket %d: %s with %d attempts (%s); want %s with %d", tk.ID, tk.State, tk.Attempts, tk.Reason, tt.wantState, tt.wantAttempts)
			}
			if tt.wantState != store.StateQueued {
				return
			}
			if !strings.Contains(tk.Reason, "grace period") {
				t.Errorf("released with reason %q, want it to name the grace period", tk.Reason)
			}
			// The partial work is kept like a failed attempt's: a branch and a patch.
			if want := ReleasedBranch(tk.ID, 1); tk.Branch != want {
				t.Errorf("released ticket's branch = %q, want the partial work kept on %s", tk.Branch, want)
			}
			patch, err := os.ReadFile(filepath.Join(tk.ResultDir, "attempt-1-released", "patch"))
			if err != nil || !strings.Contains(string(patch), "+++ b/shop/rule_00.py") {
				t.Errorf("attempt-1-released/patch = %q (%v), want the maker's partial edit of shop/rule_00.py", patch, err)
			}
			if log := git(t, f.repo, "log", "--format=%s", "main.."+ReleasedBranch(tk.ID, 1)); !strings.Contains(log, "not accepted") {
				t.Errorf("branch %s holds %q, want the kept attempt's commit", ReleasedBranch(tk.ID, 1), log)
			}
		})
	}
}

// roleHold is a proxy in front of the model server that holds the requests of one role (the
// "ticketd role:" line of the prompt) that contain match, until Release or until the
// client gives up; it passes the rest through.
type roleHold struct {
	URL       string
	arrived   chan struct{} // a value per held request
	abandoned chan struct{} // a value per held request whose client gave up
	release   chan struct{}
	once      sync.Once
}

func holdRole(t *testing.T, url, role, match string) *roleHold {
	t.Helper()
	target, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	h := &roleHold{arrived: make(chan struct{}, 64), abandoned: make(chan struct{}, 64), release: make(chan struct{})}
	proxy := httputil.NewSingleHostReverseProxy(&neturl.URL{Scheme: target.Scheme, Host: target.Host})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		// Only a ticket's requests: the night's preflight (which names none) passes.
		if bytes.Contains(body, []byte("ticketd role: "+role)) && bytes.Contains(body, []byte("# Ticket ")) && bytes.Contains(body, []byte(match)) {
			h.arrived <- struct{}{}
			select {
			case <-r.Context().Done():
				h.abandoned <- struct{}{}
				return
			case <-h.release:
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(h.Release) // a night still waiting must not hold up the server's Close
	h.URL = srv.URL + target.Path
	return h
}

// Release lets every held request, and every later one, through.
func (h *roleHold) Release() { h.once.Do(func() { close(h.release) }) }

func (h *roleHold) waitArrived(t *testing.T) {
	t.Helper()
	waitSignal(t, h.arrived, "a held model request")
}

func (h *roleHold) waitAbandoned(t *testing.T) {
	t.Helper()
	waitSignal(t, h.abandoned, "the client giving up a held model request")
}

// waitSignal waits for a value on ch. The bound only keeps a broken night from hanging the
// test binary; nothing is asserted about how long it takes.
func waitSignal(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Minute):
		t.Fatalf("no %s within 5 minutes", what)
	}
}
