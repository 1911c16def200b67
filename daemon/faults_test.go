package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/store/storedriver"
	"github.com/ticketd/ticketd/store/storesqlite"
	"github.com/ticketd/ticketd/worktree"
)

// failingEngine is the real SQLite engine whose writes of one operation fail, as a disk that
// refuses them would, while failures is above zero (a test double of the database).
type failingEngine struct {
	storedriver.Engine
	op       string
	failures atomic.Int32
}

func (e *failingEngine) Write(ctx context.Context, op string, fn func(context.Context, storedriver.Tx) error) error {
	if op == e.op && e.failures.Add(-1) >= 0 {
		return errors.New("disk I/O error (10) (SQLITE_IOERR)")
	}
	return e.Engine.Write(ctx, op, fn)
}

// faultNight starts a night in the background on the store open gives; it returns the
// store, the logs and the night's report.
func faultNight(t *testing.T, cfg config.Config, open func() *store.Store, tweak func(*Daemon)) (*store.Store, *syncBuffer, <-chan NightReport) {
	t.Helper()
	st := open()
	t.Cleanup(func() { st.Close() })
	logs := &syncBuffer{}
	d := &Daemon{Config: cfg, Store: st, Logger: slog.New(slog.NewTextHandler(logs, nil))}
	if tweak != nil {
		tweak(d)
	}
	done := make(chan NightReport, 1)
	go func() {
		rep, _ := d.RunNight(context.Background(), "test")
		done <- rep
	}()
	return st, logs, done
}

// openStore opens the night's store as the daemon would.
func openStore(t *testing.T, cfg config.Config) func() *store.Store {
	return func() *store.Store {
		st, err := OpenStore(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
}

// released returns the reasons of the ticket's "released" events, and whether any event
// charged it (retry, escalated, parked).
func released(t *testing.T, st *store.Store, id int64) (reasons []string, charged bool) {
	t.Helper()
	evs, err := st.Events(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		switch e.Kind {
		case "released":
			reasons = append(reasons, e.Reason)
		case "retry", "escalated", "parked":
			charged = true
		}
	}
	return reasons, charged
}

// TestTriageNotSavedIsTheMachines: the database refuses the write that saves a ticket's
// triage. Before, the store error took the generic failure path and charged the attempt (2
// of 6 tickets in each disk-full run). Now the attempt ends as a machine fault, the ticket
// goes back uncharged, is fixed at its next claim, and the night says why it is partial.
func TestTriageNotSavedIsTheMachines(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server
	realNight(t)
	f := newFixture(t, 1)
	_, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
	cfg := f.config(t, url, 1)
	eng := &failingEngine{op: "save triage"}
	eng.failures.Store(1)
	st, logs, done := faultNight(t, cfg, func() *store.Store {
		st, err := store.OpenEngine(context.Background(), store.Options{}, func(o storedriver.Options) (storedriver.Engine, error) {
			e, err := storesqlite.Open(context.Background(), cfg.Store.Path, storesqlite.Options{Options: o})
			eng.Engine = e
			return eng, err
		})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}, nil)
	rep := waitNight(t, done, logs)
	t.Logf("night %s: %s", rep.Outcome, rep.Error)
	tk, _ := st.Get(context.Background(), 1)
	reasons, charged := released(t, st, 1)
	if tk.State != store.StateDone || tk.Attempts != 1 || charged || len(reasons) != 1 || !strings.HasPrefix(reasons[0], "machine:") || !strings.Contains(reasons[0], "triage") {
		t.Errorf("ticket: %s after %d attempt(s), charged %v, releases %q; want done at attempt 1, the refused triage released as the machine's", tk.State, tk.Attempts, charged, reasons)
	}
	if rep.Outcome != store.OutcomePartial || !strings.Contains(rep.Error, "the machine failed") || !strings.Contains(rep.Error, "triage") {
		t.Errorf("night %s (%s); want partial naming the refused triage", rep.Outcome, rep.Error)
	}
}

// TestWorkspaceDiskFull: the workspace's disk fills while the maker works. Before, "no space
// left on device" reached the model as a tool error, the attempt ran out its loop budget and
// was charged, and the night said ok. Now the first tool call that meets it ends the attempt
// as the machine's: the model never reads the error, the ticket goes back uncharged, this
// node claims nothing more tonight, and the night is partial naming the full disk.
func TestWorkspaceDiskFull(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server
	realNight(t)
	disk := smallDisk(t, "16m")
	f := newFixture(t, 2)
	server, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
	g, gated := newGate(t, url, "maker")
	cfg := f.config(t, gated, 1)
	cfg.Workspace = filepath.Join(disk, "work")
	st, logs, done := faultNight(t, cfg, openStore(t, cfg), nil)
	select {
	case <-g.held:
	case <-time.After(5 * time.Minute):
		t.Fatalf("no maker request within 5 minutes; logs:\n%s", logs.String())
	}
	filler := fill(t, disk)
	defer os.Remove(filler)
	g.release()
	rep := waitNight(t, done, logs)
	t.Logf("night %s: %s", rep.Outcome, rep.Error)
	ctx := context.Background()
	list, _ := st.List(ctx, store.Filter{})
	for _, tk := range list {
		reasons, charged := released(t, st, tk.ID)
		if tk.State != store.StateQueued || tk.Attempts != 0 || charged {
			t.Errorf("ticket %d: %s after %d attempt(s) (%s), charged %v; want queued and uncharged", tk.ID, tk.State, tk.Attempts, tk.Reason, charged)
		}
		if tk.ID == 1 && (len(reasons) != 1 || !strings.HasPrefix(reasons[0], "machine:") || !strings.Contains(reasons[0], "no space left on device")) {
			t.Errorf("ticket 1 releases %q; want one, the machine's, naming the full disk", reasons)
		}
	}
	for _, r := range server.Requests() {
		if r.Role == "maker" && bytes.Contains(r.Body, []byte("no space left on device")) {
			t.Errorf("the maker was shown the full disk as a tool error:\n%s", clipBytes(r.Body, 400))
		}
	}
	if rep.Outcome != store.OutcomePartial || !strings.Contains(rep.Error, "no space left on device") {
		t.Errorf("night %s (%s); want partial naming the full disk", rep.Outcome, rep.Error)
	}
}

// TestResultsDiskFull: the results folder's disk is full when an attempt fails. A charged
// attempt whose record cannot be written would be history lost: it is released uncharged
// instead, and the night is partial naming the disk.
func TestResultsDiskFull(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server
	realNight(t)
	disk := smallDisk(t, "4m")
	f := newFixture(t, 1)
	f.cases[0].Behaviour = scriptedmodel.BehaviourNever
	_, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
	cfg := f.config(t, url, 1)
	cfg.Output = filepath.Join(disk, "results")
	cfg.Budget.MaxSteps = 3
	if err := os.MkdirAll(cfg.Output, 0o755); err != nil {
		t.Fatal(err)
	}
	filler := fill(t, disk)
	defer os.Remove(filler)
	st, logs, done := faultNight(t, cfg, openStore(t, cfg), nil)
	rep := waitNight(t, done, logs)
	t.Logf("night %s: %s", rep.Outcome, rep.Error)
	tk, _ := st.Get(context.Background(), 1)
	reasons, charged := released(t, st, 1)
	if tk.State != store.StateQueued || tk.Attempts != 0 || charged || len(reasons) != 1 || !strings.Contains(reasons[0], "no space left on device") {
		t.Errorf("ticket: %s after %d attempt(s), charged %v, releases %q; want queued, uncharged, released for the full disk", tk.State, tk.Attempts, charged, reasons)
	}
	if rep.Outcome != store.OutcomePartial || !strings.Contains(rep.Error, "no space left on device") {
		t.Errorf("night %s (%s); want partial naming the full disk", rep.Outcome, rep.Error)
	}
}

// TestDatabaseDeletedMidNight: the database file is deleted while a ticket runs. Before,
// the night wrote on into the unlinked file and ended ok. Now it sees the file gone within
// a check, stops claiming, stops and releases its work, and fails loudly naming it. The
// test waits on events only (the judge's request held, the night's end): what it counts
// as claimed before the deletion is read from the database, not assumed.
func TestDatabaseDeletedMidNight(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server
	realNight(t)
	f := newFixture(t, 2)
	_, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
	g, gated := newGate(t, url, "judge")
	cfg := f.config(t, gated, 1)
	st, logs, done := faultNight(t, cfg, openStore(t, cfg), func(d *Daemon) { d.StoreCheckEvery = 50 * time.Millisecond })
	select {
	case <-g.held:
	case <-time.After(5 * time.Minute):
		t.Fatalf("no judge request within 5 minutes; logs:\n%s", logs.String())
	}
	// The tickets claimed before the file goes, read from the database itself: the night
	// must claim no other after it. (It claims one while the judge is held, but one whose
	// first attempt ended early on a loaded machine may have come before it.)
	before := map[int64]bool{}
	list, err := st.List(context.Background(), store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range list {
		if tk.Attempts > 0 {
			before[tk.ID] = true
		}
	}
	for _, p := range []string{cfg.Store.Path, cfg.Store.Path + "-wal", cfg.Store.Path + "-shm"} {
		os.Remove(p)
	}
	rep := waitNight(t, done, logs)
	t.Logf("night %s: %s", rep.Outcome, rep.Error)
	g.release()
	if rep.Outcome != store.OutcomeFailed || !strings.Contains(rep.Error, "deleted") || !errors.Is(rep.Stopped, store.ErrDatabaseGone) {
		t.Errorf("night %s (%s, stopped by %v); want failed naming the deleted database", rep.Outcome, rep.Error, rep.Stopped)
	}
	if len(rep.Touched) == 0 || len(rep.Touched) != len(before) {
		t.Errorf("the night worked tickets %v; want only those claimed before the file went, %v", rep.Touched, before)
	}
	for _, id := range rep.Touched {
		if !before[id] {
			t.Errorf("the night claimed ticket %d after its database file was deleted", id)
		}
	}
	if up, _, why := st.WriteHealth(); up || !strings.Contains(why, "deleted") {
		t.Errorf("write health up=%v (%s); want down, the file deleted", up, why)
	}
	if !strings.Contains(logs.String(), "deleted or replaced during the night") {
		t.Errorf("the log does not say the database went:\n%s", logs.String())
	}
}

// TestNewDatabaseRedoesNothing: the database is replaced by a new, empty one between nights.
// Before, the next night took in the same issues and redid them all (12 triage and 36 maker
// calls for 6 tickets), writing over results/1..6. Now intake finds their results on disk,
// from another database, and skips them, visibly; nothing is claimed, and no results are
// written over.
func TestNewDatabaseRedoesNothing(t *testing.T) {
	t.Parallel() // nights of their own: repository, store, model server
	realNight(t)
	f := newFixture(t, 2)
	server, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
	cfg := f.config(t, url, 2)
	n1 := runNight(t, cfg, 0)
	if n1.rep.Outcome != store.OutcomeOK {
		t.Fatalf("night 1: %s (%s)", n1.rep.Outcome, n1.rep.Error)
	}
	report, _ := os.ReadFile(filepath.Join(cfg.Output, "1", "report.md"))
	n1.store.Close()
	for _, p := range []string{cfg.Store.Path, cfg.Store.Path + "-wal", cfg.Store.Path + "-shm"} {
		os.Remove(p)
	}
	served := len(server.Requests())
	n2 := runNight(t, cfg, 0)
	t.Logf("second night %s: %s", n2.rep.Outcome, n2.rep.Error)
	ctx := context.Background()
	if list, _ := n2.store.List(ctx, store.Filter{}); len(list) != 0 {
		t.Errorf("the new database took in %d tickets again; want none", len(list))
	}
	if calls := len(server.Requests()) - served; calls > 4 { // the preflight's requests
		t.Errorf("the second night made %d model requests; want the preflight's alone", calls)
	}
	skips, _ := n2.store.IntakeSkips(ctx)
	if len(skips) != 2 || !strings.Contains(skips[0].Reason, "another ticket database already worked it") {
		t.Errorf("intake skips %+v; want both issues, saying another database worked them", skips)
	}
	if after, _ := os.ReadFile(filepath.Join(cfg.Output, "1", "report.md")); !bytes.Equal(report, after) {
		t.Error("results/1/report.md was written over")
	}
}

func clipBytes(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// TestWorkspaceFault: a full workspace pauses the node for the night; the ticket database's
// own "database or disk is full" does not (its health watch resumes claims once it takes
// writes again), and neither does a fault that is no storage fault at all.
func TestWorkspaceFault(t *testing.T) {
	sqliteFull := errors.New("save triage: commit: database or disk is full (13)")
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"workspace ENOSPC", fmt.Errorf("%w: the workspace: %w", ErrMachineFault, &os.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC}), true},
		{"results read-only", fmt.Errorf("write results: %w", syscall.EROFS), true},
		{"database full", fmt.Errorf("%w: %w: the triage: %w", ErrMachineFault, errDatabaseWrite, sqliteFull), false},
		{"database full, unmarked", sqliteFull, true},
		{"not storage", errors.New("connection refused"), false},
		{"nil", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := workspaceFault(tc.err); got != tc.want {
				t.Errorf("workspaceFault(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// TestStaleGitLockInTheRepository: a lock file git left on the ticket's branch in the source
// repository (a git process killed while it held it). Before, every claim spent seconds
// retrying and released the ticket as a transport fault, until it was parked "because the
// endpoint kept failing"; the night never named the file. Now the first claim releases it
// uncharged as the machine's fault, the repository is paused for the night, and the night
// is partial naming the lock file and what to do.
func TestStaleGitLockInTheRepository(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server
	realNight(t)
	f := newFixture(t, 1)
	_, url := f.scripted(t, scriptedmodel.Options{Seed: 1})
	cfg := f.config(t, url, 1)
	lock := filepath.Join(f.repo, ".git", "refs", "heads", worktree.BranchName(1, f.cases[0].Match)+".lock")
	write(t, lock, "")
	st, logs, done := faultNight(t, cfg, openStore(t, cfg), nil)
	rep := waitNight(t, done, logs)
	t.Logf("night %s: %s", rep.Outcome, rep.Error)
	tk, _ := st.Get(context.Background(), 1)
	reasons, charged := released(t, st, 1)
	if tk.State != store.StateQueued || tk.Attempts != 0 || charged || len(reasons) != 1 ||
		!strings.HasPrefix(reasons[0], "machine:") || !strings.Contains(reasons[0], lock) {
		t.Errorf("ticket: %s after %d attempt(s), charged %v, releases %q; want queued, uncharged, released once as the machine's naming %s",
			tk.State, tk.Attempts, charged, reasons, lock)
	}
	if rep.Outcome != store.OutcomePartial || !strings.Contains(rep.Error, lock) || !strings.Contains(rep.Error, "remove the file") ||
		strings.Contains(rep.Error, "endpoint") {
		t.Errorf("night %s (%s); want partial naming the lock file and what to do, not the endpoint", rep.Outcome, rep.Error)
	}
	// The pause came mid-night: the ticket's note does not blame a start-up check.
	if note := lastNote(context.Background(), st, 1); !strings.Contains(note, "failed during the night") || strings.Contains(note, "start-up") {
		t.Errorf("the ticket's note: %q; want the repository named as failed during the night", note)
	}
}
