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
	"testing"
	"time"

	"github.com/ticketd/ticketd/pipeline"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/store"
)

// TestWindowGrace: when the run window closes, claims stop; an attempt still running gets
// the grace period. One that finishes inside it is done; one that does not is stopped and
// released without spending its attempt.
func TestWindowGrace(t *testing.T) {
	requirePytest(t)
	tests := []struct {
		name         string
		grace        time.Duration
		holdChecker  bool // the checker never answers: the attempt cannot end by itself
		wantState    store.State
		wantAttempts int
	}{
		{name: "finishes within the grace period", grace: time.Minute, wantState: store.StateDone, wantAttempts: 1},
		// The checker is asked after the maker's edit passed the gate, and never answers:
		// the grace period ends with the edit in the worktree, the partial work to keep.
		{name: "stopped when the grace period ends", grace: 3 * time.Second, holdChecker: true, wantState: store.StateQueued, wantAttempts: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, 2)
			// Every model answer takes 150 ms: an attempt (about 6 calls) outlives the window.
			_, url := f.scripted(t, scriptedmodel.Options{Seed: 1, Latency: 150 * time.Millisecond})
			if tt.holdChecker {
				url = holdRole(t, url, "checker")
			}
			cfg := f.config(t, url, 1)
			cfg.Night.Window = 300 * time.Millisecond
			cfg.Night.Grace = tt.grace
			n := runNight(t, cfg, pipeline.LayoutCacheFriendly)
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

// holdRole puts a proxy in front of the model server at url that never answers requests of
// role (the "ticketd role:" line of the prompt) until the client gives up, and passes the
// rest through. It returns the proxy's base URL.
func holdRole(t *testing.T, url, role string) string {
	t.Helper()
	target, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(&neturl.URL{Scheme: target.Scheme, Host: target.Host})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		// Only a ticket's requests: the night's preflight (which names none) passes.
		if bytes.Contains(body, []byte("ticketd role: "+role)) && bytes.Contains(body, []byte("# Ticket ")) {
			<-r.Context().Done()
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + target.Path
}
