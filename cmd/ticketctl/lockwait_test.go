package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store"
)

// holdWriteLock takes the database's write lock in another connection, as a daemon mid-write
// (or any process) holds it, until the returned release is called.
func holdWriteLock(t *testing.T, db string) (release func()) {
	t.Helper()
	ctx := context.Background()
	h, err := sql.Open("sqlite", "file:"+db+"?_pragma=busy_timeout(1000)")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := h.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "UPDATE tickets SET priority = priority WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			conn.ExecContext(ctx, "ROLLBACK")
			conn.Close()
			h.Close()
		})
	}
	t.Cleanup(release)
	return release
}

// TestReadsNeverWaitForAWriter: while another process holds the database's write lock,
// reads answer at once (they read the WAL's last commit). Before, opening the store took
// the write lock for its migration check and closing it waited to checkpoint: the first
// ticketctl list behind a writer took 47 s. The bound below only keeps a regression from
// hanging the suite; the figure is logged.
func TestReadsNeverWaitForAWriter(t *testing.T) {
	f := setup(t)
	holdWriteLock(t, f.db)
	for _, args := range [][]string{{"list"}, {"show", strconv.FormatInt(f.done, 10)}, {"stats"}, {"nights"}, {"escalations"}, {"intake"}} {
		done := make(chan result, 1)
		start := time.Now()
		go func() { done <- ctl(t, append([]string{"--db", f.db}, args...)...) }()
		select {
		case r := <-done:
			if r.code != exitOK {
				t.Errorf("%v behind a writer: exit %d: %s", args, r.code, r.stderr)
			}
			t.Logf("%v behind a writer: %s", args, time.Since(start).Round(time.Millisecond))
		case <-time.After(20 * time.Second): // the old code waited 47 s
			t.Fatalf("%v is still waiting for the writer after 20 s", args)
		}
	}
}

// signalWriter is a buffer that closes seen when what is written to it contains want.
type signalWriter struct {
	mu   sync.Mutex
	b    bytes.Buffer
	want string
	seen chan struct{}
	once sync.Once
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if strings.Contains(w.b.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

func (w *signalWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestWriteSaysWhatItWaitsFor: a write that meets another process's lock says on stderr what
// it waits for (naming the ticketd pid the lock file holds) instead of hanging without a
// word, and goes through once the lock is let go.
func TestWriteSaysWhatItWaitsFor(t *testing.T) {
	f := setup(t)
	if err := os.WriteFile(f.db+".lock", []byte("4242\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	release := holdWriteLock(t, f.db)
	stderr := &signalWriter{want: "waiting for the database's write lock", seen: make(chan struct{})}
	var stdout bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), []string{"--db", f.db, "requeue", strconv.FormatInt(f.escalated, 10)}, &stdout, stderr)
	}()
	select {
	case <-stderr.seen:
	case code := <-done:
		t.Fatalf("requeue ended (exit %d) without saying it waited:\n%s", code, stderr.String())
	case <-time.After(2 * time.Minute):
		t.Fatalf("requeue said nothing while waiting:\n%s", stderr.String())
	}
	mustContain(t, "stderr", stderr.String(), "ticketd pid 4242")
	release()
	if code := <-done; code != exitOK {
		t.Fatalf("requeue after the lock was let go: exit %d\n%s", code, stderr.String())
	}
	mustContain(t, "stdout", stdout.String(), "escalated -> queued", "the next attempt is 2")
}

// TestIntakeSkipsShown: the issue files intake skipped are listed by ticketctl intake and
// at the top of escalations, not only in the daemon's log.
func TestIntakeSkipsShown(t *testing.T) {
	f := setup(t)
	s, err := store.Open(context.Background(), f.db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetIntakeSkips(context.Background(), "dir:/srv/issues", []store.IntakeSkip{{Path: "07.md", Reason: "issue /srv/issues/07.md: front matter has no title"}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, cmd := range []string{"intake", "escalations"} {
		r := ctl(t, "--db", f.db, cmd)
		if r.code != exitOK {
			t.Fatalf("%s: exit %d: %s", cmd, r.code, r.stderr)
		}
		mustContain(t, cmd, r.stdout, "07.md", "front matter has no title", "dir:/srv/issues")
	}
	var got []store.IntakeSkip
	decode(t, ctl(t, "--db", f.db, "--json", "intake"), &got)
	if len(got) != 1 || got[0].Path != "07.md" {
		t.Errorf("intake --json = %+v; want the one skipped file", got)
	}
}

// TestWaitingSaysWhatItWaitsFor: on PostgreSQL a retry waits for a server that is away (a
// restart), never for "the database's write lock" of a SQLite file.
func TestWaitingSaysWhatItWaitsFor(t *testing.T) {
	for _, tc := range []struct {
		path, want, not string
	}{
		{"postgres://ticketd@db:5432/ticketd", "the database did not take it (dial tcp 10.0.0.5:5432: connect: connection refused); retrying while it is away", "write lock"},
		{filepath.Join(t.TempDir(), "ticketd.db"), "waiting for the database's write lock", "away"},
	} {
		var stderr strings.Builder
		e := &env{stderr: &stderr}
		say := e.sayWaiting(tc.path)
		err := errors.New("dial tcp 10.0.0.5:5432: connect: connection refused\n\tsecond try: refused")
		say("migrate", 1, err)
		say("migrate", 2, err)
		got := stderr.String()
		if !strings.Contains(got, tc.want) || strings.Contains(got, tc.not) || strings.Count(got, "\n") != 1 {
			t.Errorf("%s: said %q; want one line saying %q, not %q", tc.path, got, tc.want, tc.not)
		}
	}
}
