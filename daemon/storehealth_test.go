package daemon

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ticketd/ticketd/pipeline/scriptedmodel"
	"github.com/ticketd/ticketd/store"
)

// smallDisk mounts a tmpfs of size (e.g. "4m") on a new folder and returns it; it is
// unmounted when the test ends. Mounting needs root (CAP_SYS_ADMIN): without it the test is
// skipped, saying so.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size="+size); err != nil {
		t.Skipf("cannot mount a %s tmpfs for the database (needs root or CAP_SYS_ADMIN), so a full disk cannot be tested here: %v", size, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fill writes to a new file in dir until the disk is full, and returns the file. A full
// disk alone does not make SQLite's writes fail: once a checkpoint has copied the WAL, the
// log is rewritten in place, and small writes (heartbeats) can go on for minutes in the
// space it already holds. So fill first empties the WAL of each database in dir (a
// TRUNCATE checkpoint from a connection of its own), then takes every free byte: the
// database's next writes have to grow its log, and fail.
func fill(t *testing.T, dir string) string {
	t.Helper()
	wals, _ := filepath.Glob(filepath.Join(dir, "*-wal"))
	for _, wal := range wals {
		truncateWAL(t, strings.TrimSuffix(wal, "-wal"))
	}
	path := filepath.Join(dir, "filler")
	fillFile(t, path)
	return path
}

// fillFile appends to path until the disk is full.
func fillFile(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v, want ENOSPC", path, err)
			}
			if len(chunk) == 1 {
				return
			}
			chunk = chunk[:len(chunk)/2] // the last pages too
		}
	}
}

// truncateWAL checkpoints the database at path into its file and truncates its WAL to zero
// bytes, waiting out the night's own readers and writers (busy_timeout).
func truncateWAL(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(60000)")
	if err != nil {
		t.Fatalf("open %s to truncate its WAL: %v", path, err)
	}
	defer db.Close()
	for range 100 {
		var busy, logPages, done int
		if err := db.QueryRow(`PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logPages, &done); err != nil {
			t.Fatalf("truncate the WAL of %s: %v", path, err)
		}
		if busy == 0 {
			return
		}
	}
	t.Fatalf("truncate the WAL of %s: busy 100 times", path)
}

// TestDiskFull: the database's disk fills while a ticket runs. The failed write is logged at
// once with its reason, claims stop while the disk is full (the other tickets stay queued,
// nothing spent), the running ticket keeps its last recorded state, and once the disk has
// room again the write lands, the reason is added to the ticket's events, and the night
// finishes every ticket.
func TestDiskFull(t *testing.T) {
	t.Parallel() // a night of its own: repository, store, model server, clock
	realNight(t)
	disk := smallDisk(t, "8m")
	f := newFixture(t, 3)
	_, url := f.scripted(t, scriptedmodel.Options{Seed: 1, Latency: 150 * time.Millisecond})
	cfg := f.config(t, url, 2) // a second worker would claim if claims did not stop
	cfg.Store.Path = filepath.Join(disk, "ticketd.db")
	cfg.Night.Lease, cfg.Night.Heartbeat = 30*time.Second, 100*time.Millisecond
	st, err := OpenStore(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var logs syncBuffer
	waits := make(chan struct{}, 64)
	d := &Daemon{Config: cfg, Store: st, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		onStoreWait: func() {
			select {
			case waits <- struct{}{}:
			default:
			}
		}}
	done := make(chan NightReport, 1)
	go func() {
		rep, err := d.RunNight(context.Background(), "test")
		if err != nil {
			t.Errorf("night: %v", err)
		}
		done <- rep
	}()
	id := waitRunning(t, st)
	filler := fill(t, disk)
	running := map[int64]bool{}
	if list, err := st.List(context.Background(), store.Filter{States: []store.State{store.StateRunning}}); err == nil {
		for _, tk := range list {
			running[tk.ID] = true
		}
	}
	full := time.Now()
	waitLog(t, &logs, "ticket database write failed")
	t.Logf("first failed write logged %s after the disk filled", time.Since(full).Round(time.Millisecond))
	// While the disk stays full nothing else is claimed. The workers wait on the database —
	// an idle one declines to claim each second, a busy one pauses before writing its
	// ticket's state again (0.1 s, doubling) — and six such waits (seconds in all) are
	// their chance to do the wrong thing.
	for n := 0; n < 6; n++ {
		select {
		case <-waits:
		case <-time.After(2 * time.Minute):
			t.Fatalf("the workers waited on the full database only %d times within 2 min; logs:\n%s", n, logs.String())
		}
	}
	list, err := st.List(context.Background(), store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range list {
		if !running[tk.ID] && (tk.State != store.StateQueued || tk.Attempts != 0) {
			t.Errorf("ticket %d is %s with %d attempts while the disk is full, want queued and unspent", tk.ID, tk.State, tk.Attempts)
		}
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		t.Fatalf("the night did not finish within 3 min of the disk having room again; logs:\n%s", logs.String())
	}
	list, _ = st.List(context.Background(), store.Filter{})
	for _, tk := range list {
		if tk.State != store.StateDone {
			t.Errorf("ticket %d: %s (%s), want done", tk.ID, tk.State, tk.Reason)
		}
	}
	events, err := st.Events(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	noted := false
	for _, e := range events {
		if e.Kind == "note" && strings.Contains(e.Reason, "did not take a write") && strings.Contains(e.Reason, "full") {
			noted = true
			t.Logf("note on ticket %d: %s", id, e.Reason)
		}
	}
	if !noted {
		t.Errorf("ticket %d has no note with the failed write's reason; events: %+v", id, events)
	}
	for _, want := range []string{"ticket database write failed", "takes writes again"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %q", want)
		}
	}
}
