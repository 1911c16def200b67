package daemon

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/store/clock/clocktest"
)

// machineNight starts a night in the background against the scripted model (a test double)
// answering each request after latency; it returns the daemon's store, its logs and the
// night's result.
func machineNight(t *testing.T, f fixture, url string, edit func(*config.Config)) (*store.Store, *syncBuffer, config.Config, <-chan NightReport) {
	t.Helper()
	cfg := f.config(t, url, 1)
	if edit != nil {
		edit(&cfg)
	}
	st, err := OpenStore(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	logs := &syncBuffer{}
	d := &Daemon{Config: cfg, Store: st, Logger: slog.New(slog.NewTextHandler(logs, nil))}
	done := make(chan NightReport, 1)
	go func() {
		rep, _ := d.RunNight(context.Background(), "test")
		done <- rep
	}()
	return st, logs, cfg, done
}

// waitNight waits for the night's end; the bound only keeps a broken night from hanging the
// test binary.
func waitNight(t *testing.T, done <-chan NightReport, logs *syncBuffer) NightReport {
	t.Helper()
	select {
	case rep := <-done:
		return rep
	case <-time.After(5 * time.Minute):
		t.Fatalf("the night did not end within 5 min; logs:\n%s", logs.String())
	}
	return NightReport{}
}

// TestWorktreeVanishes: the attempt's worktree is deleted under it. The attempt stops, the
// ticket goes back without an attempt charged, the repository is paused for the night (its
// other ticket is not claimed, and says why), and the night is partial.
func TestWorktreeVanishes(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	f := newFixture(t, 2)
	_, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
	g, gated := newGate(t, url, "judge") // the attempt is surely running while its tree goes
	st, logs, cfg, done := machineNight(t, f, gated, nil)
	id := waitRunning(t, st)
	// The ticket's own worktree: the one git lists on its working branch (a baseline
	// checkout may sit in the workspace too).
	var tree string
	clocktest.WaitFor(t, 2*time.Minute, fmt.Sprintf("a worktree of ticket %d appears", id), func() bool {
		// A list that meets a worktree half added (git writes its admin files one by one:
		// "failed to read .../commondir") is asked again, not a failure.
		cmd := exec.Command("git", "worktree", "list", "--porcelain")
		cmd.Dir = f.repo
		out, err := cmd.Output()
		if err != nil {
			return false
		}
		var dir string
		for _, l := range strings.Split(string(out), "\n") {
			if p, ok := strings.CutPrefix(l, "worktree "); ok {
				dir = p
			}
			if strings.HasPrefix(l, fmt.Sprintf("branch refs/heads/ticketd/%d-", id)) && strings.HasPrefix(dir, cfg.Workspace) {
				tree = dir
			}
		}
		return tree != ""
	})
	select {
	case <-g.held:
	case <-time.After(5 * time.Minute):
		t.Fatal("no judge request within 5 minutes")
	}
	if err := os.RemoveAll(tree); err != nil {
		t.Fatal(err)
	}
	rep := waitNight(t, done, logs)
	ctx := context.Background()
	tk, _ := st.Get(ctx, id)
	if tk.State != store.StateQueued || tk.Attempts != 0 || !strings.HasPrefix(tk.Reason, "machine:") || !strings.Contains(tk.Reason, "vanished") {
		t.Errorf("ticket %d: %s with %d attempts (%s), want queued, none charged, the machine named", id, tk.State, tk.Attempts, tk.Reason)
	}
	other := 3 - id
	ot, _ := st.Get(ctx, other)
	if ot.State != store.StateQueued || ot.Attempts != 0 || !strings.Contains(lastNote(ctx, st, other), "vanished") {
		t.Errorf("ticket %d: %s with %d attempts, note %q; want unclaimed with a note saying why its repository is paused", other, ot.State, ot.Attempts, lastNote(ctx, st, other))
	}
	if rep.Outcome != store.OutcomePartial || !strings.Contains(rep.Error, "paused") {
		t.Errorf("night %s (%s), want partial naming the paused repository", rep.Outcome, rep.Error)
	}
}

// TestBaseRefVanishes: the repository's base branch is deleted while a ticket runs. No
// ticket is charged for it: the running one keeps its fix (its worktree still holds it) or
// goes back unspent, the repository is paused, and the others wait with a note that names
// base_ref; before, every remaining ticket escalated with both attempts spent.
func TestBaseRefVanishes(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	f := newFixture(t, 3)
	_, url := f.scripted(t, scriptedmodel.Options{Seed: 1, Latency: 200 * time.Millisecond})
	st, logs, _, done := machineNight(t, f, url, nil)
	id := waitRunning(t, st)
	git(t, f.repo, "update-ref", "-d", "refs/heads/main")
	rep := waitNight(t, done, logs)
	ctx := context.Background()
	list, err := st.List(ctx, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range list {
		switch {
		case tk.State == store.StateEscalated || tk.Attempts > 0 && tk.State != store.StateDone:
			t.Errorf("ticket %d: %s with %d attempts (%s): charged for a vanished base ref", tk.ID, tk.State, tk.Attempts, tk.Reason)
		case tk.ID == id:
			t.Logf("running ticket %d ended %s (%s)", tk.ID, tk.State, tk.Reason)
		case tk.State != store.StateQueued || !strings.Contains(lastNote(ctx, st, tk.ID), "base_ref"):
			t.Errorf("ticket %d: %s, note %q; want queued with a note naming base_ref", tk.ID, tk.State, lastNote(ctx, st, tk.ID))
		}
	}
	if rep.Outcome != store.OutcomePartial || !strings.Contains(rep.Error, "base_ref") {
		t.Errorf("night %s (%s), want partial naming base_ref", rep.Outcome, rep.Error)
	}
}

// TestRepositoryMovedUnderAFinishedFix: the repository is moved away (renamed) while the
// judge weighs a fix that passed its checks. Before, the commit failed and the attempt was
// charged as the fix's failure ("fix: commit fix: ..."). Now it is released uncharged as the
// machine's, the repository is paused (its other ticket waits), and the night is partial
// naming the path.
func TestRepositoryMovedUnderAFinishedFix(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server
	realNight(t)
	f := newFixture(t, 2)
	_, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
	g, gated := newGate(t, url, "judge")
	cfg := f.config(t, gated, 1)
	st, logs, done := faultNight(t, cfg, openStore(t, cfg), nil)
	select {
	case <-g.held:
	case <-time.After(5 * time.Minute):
		t.Fatalf("no judge request within 5 minutes; logs:\n%s", logs.String())
	}
	if err := os.Rename(f.repo, f.repo+"-moved"); err != nil {
		t.Fatal(err)
	}
	g.release()
	rep := waitNight(t, done, logs)
	t.Logf("night %s: %s", rep.Outcome, rep.Error)
	list, _ := st.List(context.Background(), store.Filter{})
	for _, tk := range list {
		reasons, charged := released(t, st, tk.ID)
		if tk.State != store.StateQueued || tk.Attempts != 0 || charged {
			t.Errorf("ticket %d: %s after %d attempt(s) (%s), charged %v; want queued and uncharged", tk.ID, tk.State, tk.Attempts, tk.Reason, charged)
		}
		if tk.ID == 1 && (len(reasons) != 1 || !strings.HasPrefix(reasons[0], "machine:") || !strings.Contains(reasons[0], "not a git repository")) {
			t.Errorf("ticket 1 releases %q; want one, the machine's, naming the vanished repository", reasons)
		}
	}
	if rep.Outcome != store.OutcomePartial || !strings.Contains(rep.Error, f.repo+" is not a git repository") {
		t.Errorf("night %s (%s); want partial naming the repository's path", rep.Outcome, rep.Error)
	}
}

// gate is an HTTP proxy in front of the scripted model that holds a ticket's requests of
// one role until opened, and says when the first is held.
type gate struct {
	role   string
	marker []byte // a held request holds this too ("# Ticket ": a ticket's, not the preflight's)
	held   chan struct{}
	open   chan struct{}
	once   sync.Once
	openMu sync.Once
}

func newGate(t *testing.T, url, role string) (*gate, string) {
	t.Helper()
	return newGateOn(t, url, role, "# Ticket ")
}

// newGateOn is newGate holding only the requests of role that hold marker.
func newGateOn(t *testing.T, url, role, marker string) (*gate, string) {
	t.Helper()
	target, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{role: role, marker: []byte(marker), held: make(chan struct{}), open: make(chan struct{})}
	proxy := httputil.NewSingleHostReverseProxy(&neturl.URL{Scheme: target.Scheme, Host: target.Host})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte("ticketd role: "+g.role)) && bytes.Contains(body, g.marker) {
			g.once.Do(func() { close(g.held) })
			select {
			case <-g.open:
			case <-r.Context().Done():
				return
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { g.release(); srv.Close() })
	return g, srv.URL + target.Path
}

func (g *gate) release() { g.openMu.Do(func() { close(g.open) }) }

// TestFixFinishedWhileDatabaseFull: the database's disk fills while two tickets wait for
// their judge, stays full past their leases, and the fixes finish meanwhile. Neither fix is
// thrown away: no sibling worker rescues the expired leases when the disk has room again,
// the completions land, and both tickets are done with no rescue counted.
func TestFixFinishedWhileDatabaseFull(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	disk := smallDisk(t, "8m")
	f := newFixture(t, 2)
	_, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
	g, gated := newGate(t, url, "judge")
	st, logs, _, done := machineNight(t, f, gated, func(c *config.Config) {
		c.Store.Path = filepath.Join(disk, "ticketd.db")
		c.Night.Workers = 2
		c.Night.Lease, c.Night.Heartbeat = 2*time.Second, time.Second
	})
	select {
	case <-g.held:
	case <-time.After(5 * time.Minute):
		t.Fatalf("no judge request within 5 minutes; logs:\n%s", logs.String())
	}
	filler := fill(t, disk)
	waitLog(t, logs, "ticket database write failed")
	g.release() // the fixes finish while the database takes no writes
	// The scenario needs the leases (2 s) to expire while the disk is full: the store says
	// when each running ticket's lease runs out.
	clocktest.WaitFor(t, time.Minute, "the running tickets' leases expired", func() bool {
		list, err := st.List(context.Background(), store.Filter{States: []store.State{store.StateRunning}})
		if err != nil || len(list) == 0 {
			return false
		}
		for _, tk := range list {
			if !time.Now().After(tk.LeaseExpiresAt) {
				return false
			}
		}
		return true
	}, logs.String)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitNight(t, done, logs)
	list, _ := st.List(context.Background(), store.Filter{})
	for _, tk := range list {
		if tk.State != store.StateDone || tk.Rescues != 0 {
			t.Errorf("ticket %d: %s, %d rescues (%s); want done with none", tk.ID, tk.State, tk.Rescues, tk.Reason)
		}
	}
	if strings.Contains(logs.String(), "discarding") {
		t.Errorf("a fix was discarded; logs:\n%s", logs.String())
	}
}

// TestShutdownWithAFailingDatabase: SIGTERM (the night's context cancelled) while the
// database takes no writes ends the night within seconds: the write that did not land is
// left for the lease to expire, as a crash would leave it.
func TestShutdownWithAFailingDatabase(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	disk := smallDisk(t, "8m")
	f := newFixture(t, 2)
	_, url := f.scripted(t, scriptedmodel.Options{Seed: 1, Latency: 200 * time.Millisecond})
	// The judge's answer is held, so a ticket is surely running when the disk fills: on an
	// idle machine the night can otherwise finish before the first failed write.
	g, gated := newGate(t, url, "judge")
	cfg := f.config(t, gated, 2)
	cfg.Store.Path = filepath.Join(disk, "ticketd.db")
	cfg.Night.Heartbeat = 100 * time.Millisecond
	st, err := OpenStore(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	logs := &syncBuffer{}
	d := &Daemon{Config: cfg, Store: st, Logger: slog.New(slog.NewTextHandler(logs, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan NightReport, 1)
	go func() {
		rep, _ := d.RunNight(ctx, "test")
		done <- rep
	}()
	select {
	case <-g.held:
	case <-time.After(5 * time.Minute):
		t.Fatalf("no judge request within 5 minutes; logs:\n%s", logs.String())
	}
	filler := fill(t, disk)
	defer os.Remove(filler)
	waitLog(t, logs, "ticket database write failed")
	cancel()
	start := time.Now()
	select {
	case <-done:
		t.Logf("the night ended %s after the shutdown", time.Since(start).Round(time.Millisecond))
	case <-time.After(2 * time.Minute): // a hang, not a slow stop: the time is logged above
		t.Fatalf("the night did not end within 2 min of the shutdown with a failing database; logs:\n%s", logs.String())
	}
}

// TestCheckoutTooLargePausesRepo: the base commit holds a blob of megabytes of zeros (a zip
// bomb to a checkout: a few kilobytes in the repository) whose files add up to more than
// max_worktree_size. No worktree is written, no ticket is charged, the repository is paused
// for the night with a reason naming the file, and the night is partial.
func TestCheckoutTooLargePausesRepo(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	f := newFixture(t, 2)
	write(t, filepath.Join(f.repo, "data", "bomb.bin"), string(make([]byte, 3<<20)))
	git(t, f.repo, "add", "-A")
	git(t, f.repo, "commit", "-q", "-m", "a large blob")
	_, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
	st, logs, _, done := machineNight(t, f, url, func(c *config.Config) { c.MaxWorktreeSize = 2 << 20 })
	rep := waitNight(t, done, logs)
	ctx := context.Background()
	for _, id := range []int64{1, 2} {
		tk, err := st.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		why := tk.Reason + " " + lastNote(ctx, st, id)
		if tk.State != store.StateQueued || tk.Attempts != 0 || !strings.Contains(why, "data/bomb.bin (3.0 MiB)") {
			t.Errorf("ticket %d: %s with %d attempts (%q); want queued, none charged, the file named", id, tk.State, tk.Attempts, why)
		}
	}
	if rep.Outcome != store.OutcomePartial || !strings.Contains(rep.Error, "paused") {
		t.Errorf("night %s (%s), want partial naming the paused repository", rep.Outcome, rep.Error)
	}
}
