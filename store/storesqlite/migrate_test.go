package storesqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/store/storesqlite"
)

// openAtVersion builds a database as a binary knowing only the first v migrations left it.
func openAtVersion(t *testing.T, path string, v int) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	if err := storesqlite.Migrate(context.Background(), db, v, 1); err != nil {
		t.Fatalf("migrate to v%d: %v", v, err)
	}
	return db
}

func TestMigrateFromEveryVersion(t *testing.T) {
	for from := 0; from < storesqlite.Migrations; from++ {
		t.Run("from_v"+string(rune('0'+from)), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "old.db")
			db := openAtVersion(t, path, from)
			if from >= 1 {
				// A ticket as a v1 binary wrote it, mid-run.
				if _, err := db.Exec(`INSERT INTO tickets (source, external_id, title, state, attempts, run_after,
					lease_owner, lease_expires_at, fence_token, created_at, updated_at)
					VALUES ('dir', 'a.md', 'old ticket', 'running', 1, 1, 'w1', 1000, 1, 1, 1)`); err != nil {
					t.Fatal(err)
				}
				if _, err := db.Exec(`INSERT INTO model_calls (ticket_id, role, model, prompt_tokens, cost_usd, started_at)
					VALUES (1, 'maker', 'm', 100, 0.5, 1)`); err != nil {
					t.Fatal(err)
				}
			}
			db.Close()

			clock := newFakeClock()
			s, err := store.Open(context.Background(), path, store.Options{Now: clock.Now})
			if err != nil {
				t.Fatalf("Open v%d database: %v", from, err)
			}
			defer s.Close()
			v, err := s.SchemaVersion(context.Background())
			if err != nil || v != storesqlite.SchemaVersion {
				t.Fatalf("version after Open = %d, %v; want %d", v, err, storesqlite.SchemaVersion)
			}
			ctx := context.Background()
			if from >= 1 {
				// The old running ticket's lease has long expired: the new binary rescues it.
				l, err := s.Claim(ctx, "w2", time.Minute)
				if err != nil {
					t.Fatalf("claim migrated ticket: %v", err)
				}
				if l.Ticket.Title != "old ticket" || l.Attempt != 1 || l.Ticket.Rescues != 1 || l.Ticket.RescuedFrom != "w1" {
					t.Errorf("migrated claim = %+v; want old ticket, attempt 1 (not charged), rescues 1, rescued from w1", l.Ticket)
				}
				calls, err := s.ModelCalls(ctx, 1)
				if err != nil || len(calls) != 1 || calls[0].RunID != 0 || *calls[0].CostUSD != 0.5 {
					t.Errorf("migrated model calls = %+v, %v", calls, err)
				}
			}
			// New tables work.
			run, err := s.StartRun(ctx, "once")
			if err != nil {
				t.Fatal(err)
			}
			if err := s.FinishRun(ctx, run); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestMigrateRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.db")
	db := openAtVersion(t, path, storesqlite.Migrations)
	if _, err := db.Exec(`INSERT INTO schema_migrations (version, applied_at) VALUES (?, 1)`, storesqlite.Migrations+1); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err := store.Open(context.Background(), path, store.Options{})
	if err == nil || !strings.Contains(err.Error(), "upgrade ticketd") {
		t.Fatalf("Open newer schema: %v; want an error asking to upgrade", err)
	}
}

func TestOpenTwiceIsIdempotent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	for i := range 2 {
		s, err := storesqlite.Open(context.Background(), path, storesqlite.Options{})
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		var n int
		if err := s.DB().QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil || n != storesqlite.SchemaVersion {
			t.Errorf("open %d: %d migrations recorded, %v; want %d", i, n, err, storesqlite.SchemaVersion)
		}
		var mode string
		s.DB().QueryRow(`PRAGMA journal_mode`).Scan(&mode)
		if mode != "wal" {
			t.Errorf("journal_mode = %q; want wal", mode)
		}
		if _, err := s.DB().Exec(`DELETE FROM tickets`); err == nil {
			t.Error("read pool accepted a write; want it read-only")
		}
		s.Close()
	}
}

// TestConcurrentOpensMigrateOnce: processes that open the same new database at once (the
// daemon starting while ticketctl or a test reads it) each find the schema complete; the
// one that loses the race for a migration skips it instead of failing on "table already
// exists". (TestSIGKILLNight found it.)
func TestConcurrentOpensMigrateOnce(t *testing.T) {
	for round := range 5 {
		path := filepath.Join(t.TempDir(), "x.db")
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Go(func() {
				s, err := storesqlite.Open(context.Background(), path, storesqlite.Options{})
				if err == nil {
					err = s.Close()
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("round %d, open %d: %v", round, i, err)
			}
		}
	}
}

func TestPragmasAndCheckpoint(t *testing.T) {
	for _, tc := range []struct {
		sync string
		want int
	}{{"", 1}, {"normal", 1}, {"FULL", 2}} {
		b := setup(t, func(o *store.Options) { o.Synchronous = tc.sync }, nil)
		var got, fk, limit, pageSize, autoCkpt int
		var mode string
		b.e.WriterQueryRow(b.ctx, `PRAGMA synchronous`).Scan(&got)
		b.e.WriterQueryRow(b.ctx, `PRAGMA foreign_keys`).Scan(&fk)
		b.e.WriterQueryRow(b.ctx, `PRAGMA journal_size_limit`).Scan(&limit)
		b.e.WriterQueryRow(b.ctx, `PRAGMA journal_mode`).Scan(&mode)
		b.e.WriterQueryRow(b.ctx, `PRAGMA page_size`).Scan(&pageSize)
		b.e.WriterQueryRow(b.ctx, `PRAGMA wal_autocheckpoint`).Scan(&autoCkpt)
		if got != tc.want || fk != 1 || limit != storesqlite.JournalSizeLimit {
			t.Errorf("Synchronous %q: synchronous=%d foreign_keys=%d journal_size_limit=%d; want %d, 1, %d", tc.sync, got, fk, limit, tc.want, storesqlite.JournalSizeLimit)
		}
		// page_size only takes effect if it ran before the switch to WAL.
		if mode != "wal" || pageSize != storesqlite.NewPageSize || autoCkpt != storesqlite.WALCheckpointPages {
			t.Errorf("new database: journal_mode=%s page_size=%d wal_autocheckpoint=%d; want wal, %d, %d", mode, pageSize, autoCkpt, storesqlite.NewPageSize, storesqlite.WALCheckpointPages)
		}
	}
	if _, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "x.db"), store.Options{Synchronous: "OFF"}); err == nil {
		t.Error("Synchronous OFF accepted; want an error")
	}

	b := setup(t, nil, nil)
	for i := range 300 {
		b.enqueue(t, fmt.Sprint(i))
	}
	walSize := func() int64 {
		fi, err := os.Stat(b.s.Path() + "-wal")
		if err != nil {
			return 0
		}
		return fi.Size()
	}
	if walSize() == 0 {
		t.Fatal("WAL empty after 300 writes; the test measures nothing")
	}
	run, _ := b.s.StartRun(b.ctx, "once")
	if err := b.s.FinishRun(b.ctx, run); err != nil {
		t.Fatal(err)
	}
	if n := walSize(); n != 0 {
		t.Errorf("WAL is %d bytes after FinishRun; want truncated to 0", n)
	}
}

// TestEventChainMigration: v10 replaces the events_ticket index with a per-ticket chain.
// Events written by a v9 binary, interleaved across tickets, come back per ticket in order
// after the migration, and new events extend the same chains.
func TestEventChainMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v9.db")
	db := openAtVersion(t, path, 9)
	for _, q := range []string{
		`INSERT INTO tickets (id, source, external_id, state, run_after, created_at, updated_at) VALUES (1, 'dir', 'a', 'queued', 1, 1, 1)`,
		`INSERT INTO tickets (id, source, external_id, state, run_after, created_at, updated_at) VALUES (2, 'dir', 'b', 'queued', 1, 1, 1)`,
		`INSERT INTO tickets (id, source, external_id, state, run_after, created_at, updated_at) VALUES (3, 'dir', 'c', 'queued', 1, 1, 1)`,
		`INSERT INTO events (ticket_id, at, kind, to_state) VALUES (1, 1, 'enqueued', 'queued')`,
		`INSERT INTO events (ticket_id, at, kind, to_state) VALUES (2, 2, 'enqueued', 'queued')`,
		`INSERT INTO events (ticket_id, at, kind, reason) VALUES (1, 3, 'note', 'first note on a')`,
		`INSERT INTO events (ticket_id, at, kind, reason) VALUES (2, 4, 'note', 'on b')`,
		`INSERT INTO events (ticket_id, at, kind, reason) VALUES (1, 5, 'note', 'second note on a')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	ctx := context.Background()
	s, err := store.Open(ctx, path, store.Options{Now: newFakeClock().Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.AddNote(ctx, 1, "me", "after the migration"); err != nil {
		t.Fatal(err)
	}
	kinds := func(id int64) string {
		t.Helper()
		evs, err := s.Events(ctx, id)
		if err != nil {
			t.Fatalf("events of %d: %v", id, err)
		}
		var out []string
		for _, e := range evs {
			if e.TicketID != id {
				t.Errorf("events of %d include %+v", id, e)
			}
			out = append(out, fmt.Sprintf("%d:%s %s", e.ID, e.Kind, e.Reason))
		}
		return strings.Join(out, ", ")
	}
	tests := []struct {
		id   int64
		want string
	}{
		{1, "1:enqueued , 3:note first note on a, 5:note second note on a, 6:note after the migration"},
		{2, "2:enqueued , 4:note on b"},
		{3, ""}, // a ticket without events has an empty chain
	}
	for _, tt := range tests {
		if got := kinds(tt.id); got != tt.want {
			t.Errorf("events of ticket %d = %q; want %q", tt.id, got, tt.want)
		}
	}
	var indexes int
	rdb := openAtVersion(t, path, storesqlite.Migrations)
	defer rdb.Close()
	rdb.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name = 'events_ticket'`).Scan(&indexes)
	if indexes != 0 {
		t.Error("events_ticket index still exists after v10")
	}
}

// TestMigrateV14ToV15: a database issue 25's build made (v14) keeps its tickets when v15
// numbers attempts on across requeues: an escalated ticket's attempts stay, a requeue gives
// it a fresh budget from there, and the database gets an identity of its own.
func TestMigrateV14ToV15(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v14.db")
	db := openAtVersion(t, path, 14)
	if _, err := db.Exec(`INSERT INTO tickets (source, external_id, title, state, attempts, max_attempts, run_after,
			created_at, updated_at, finished_at, reason, last_event_id)
		VALUES ('dir', 'a.md', 'old ticket', 'escalated', 3, 3, 1, 1, 1, 1, 'fix: tests fail', NULL)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tk, err := s.Get(ctx, 1)
	if err != nil || tk.State != store.StateEscalated || tk.Attempts != 3 || tk.AttemptsBefore != 0 || tk.Crashes != 0 {
		t.Fatalf("migrated ticket %+v, %v; want escalated with its 3 attempts", tk, err)
	}
	if id, err := s.Identity(ctx); err != nil || len(id) != 32 {
		t.Errorf("identity %q, %v; want 32 hex digits", id, err)
	}
	if err := s.Requeue(ctx, 1, "op", false); err != nil {
		t.Fatal(err)
	}
	l, err := s.Claim(ctx, "w", time.Minute)
	if err != nil || l.Attempt != 4 || l.Ticket.AttemptLimit() != 6 {
		t.Fatalf("claim after requeue: attempt %d limit %d, %v; want attempt 4 of a fresh budget up to 6", l.Attempt, l.Ticket.AttemptLimit(), err)
	}
}
