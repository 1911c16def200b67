package store

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
)

// openAtVersion builds a database as a binary knowing only the first v migrations left it.
func openAtVersion(t *testing.T, path string, v int) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	if err := migrate(context.Background(), db, v, 1); err != nil {
		t.Fatalf("migrate to v%d: %v", v, err)
	}
	return db
}

func TestMigrateFromEveryVersion(t *testing.T) {
	for from := 0; from < len(migrations); from++ {
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
			s, err := Open(context.Background(), path, Options{Now: clock.Now})
			if err != nil {
				t.Fatalf("Open v%d database: %v", from, err)
			}
			defer s.Close()
			v, err := schemaVersion(context.Background(), s.r)
			if err != nil || v != SchemaVersion {
				t.Fatalf("version after Open = %d, %v; want %d", v, err, SchemaVersion)
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
	db := openAtVersion(t, path, len(migrations))
	if _, err := db.Exec(`INSERT INTO schema_migrations (version, applied_at) VALUES (?, 1)`, len(migrations)+1); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err := Open(context.Background(), path, Options{})
	if err == nil || !strings.Contains(err.Error(), "upgrade ticketd") {
		t.Fatalf("Open newer schema: %v; want an error asking to upgrade", err)
	}
}

func TestOpenTwiceIsIdempotent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	for i := range 2 {
		s, err := Open(context.Background(), path, Options{})
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		var n int
		if err := s.r.QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil || n != SchemaVersion {
			t.Errorf("open %d: %d migrations recorded, %v; want %d", i, n, err, SchemaVersion)
		}
		var mode string
		s.r.QueryRow(`PRAGMA journal_mode`).Scan(&mode)
		if mode != "wal" {
			t.Errorf("journal_mode = %q; want wal", mode)
		}
		if _, err := s.r.Exec(`DELETE FROM tickets`); err == nil {
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
				s, err := Open(context.Background(), path, Options{})
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
		b := setup(t, func(o *Options) { o.Synchronous = tc.sync })
		var got, fk, limit, pageSize, autoCkpt int
		var mode string
		b.s.wc.QueryRowContext(b.ctx, `PRAGMA synchronous`).Scan(&got)
		b.s.wc.QueryRowContext(b.ctx, `PRAGMA foreign_keys`).Scan(&fk)
		b.s.wc.QueryRowContext(b.ctx, `PRAGMA journal_size_limit`).Scan(&limit)
		b.s.wc.QueryRowContext(b.ctx, `PRAGMA journal_mode`).Scan(&mode)
		b.s.wc.QueryRowContext(b.ctx, `PRAGMA page_size`).Scan(&pageSize)
		b.s.wc.QueryRowContext(b.ctx, `PRAGMA wal_autocheckpoint`).Scan(&autoCkpt)
		if got != tc.want || fk != 1 || limit != walRestartBytes {
			t.Errorf("Synchronous %q: synchronous=%d foreign_keys=%d journal_size_limit=%d; want %d, 1, %d", tc.sync, got, fk, limit, tc.want, walRestartBytes)
		}
		// page_size only takes effect if it ran before the switch to WAL.
		if mode != "wal" || pageSize != newPageSize || autoCkpt != walCheckpointPages {
			t.Errorf("new database: journal_mode=%s page_size=%d wal_autocheckpoint=%d; want wal, %d, %d", mode, pageSize, autoCkpt, newPageSize, walCheckpointPages)
		}
	}
	if _, err := Open(context.Background(), filepath.Join(t.TempDir(), "x.db"), Options{Synchronous: "OFF"}); err == nil {
		t.Error("Synchronous OFF accepted; want an error")
	}

	b := setup(t)
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
	s, err := Open(ctx, path, Options{Now: newFakeClock().Now})
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
	s.r.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name = 'events_ticket'`).Scan(&indexes)
	if indexes != 0 {
		t.Error("events_ticket index still exists after v10")
	}
}

// TestEventChainRefusesForksAndGaps: an event the store appends without a reservation would
// fork the chain and collides with the head instead; a reservation left without its event
// stops the ticket's next append rather than let the chain skip; either way the transaction
// rolls back and the ticket's history stays whole.
func TestEventChainRefusesForksAndGaps(t *testing.T) {
	b := setup(t)
	id := b.enqueue(t, "1")
	if err := b.s.AddNote(b.ctx, id, "me", "second"); err != nil {
		t.Fatal(err)
	}
	appendOnly := func(ctx context.Context, tx *wtx) error {
		return b.s.appendEvent(ctx, tx, id, b.s.nowMS(), "note", StateQueued, StateQueued, 0, "me", "unreserved")
	}
	if err := b.s.write(b.ctx, "append without a reservation", appendOnly); err == nil || !strings.Contains(err.Error(), "UNIQUE") {
		t.Errorf("append without a reservation: %v; want the primary key to refuse it", err)
	}
	reserveOnly := func(ctx context.Context, tx *wtx) error {
		_, err := b.s.exec(ctx, tx, `UPDATE tickets SET `+reserveEvent+` WHERE id = ?`, id)
		return err
	}
	gap := func(ctx context.Context, tx *wtx) error {
		if err := reserveOnly(ctx, tx); err != nil {
			return err
		}
		return b.s.event(ctx, tx, id, b.s.nowMS(), "note", StateQueued, StateQueued, 0, "me", "after a gap")
	}
	if err := b.s.write(b.ctx, "append over a gap", gap); err == nil || !strings.Contains(err.Error(), "reserved but never written") {
		t.Errorf("append over an unwritten reservation: %v; want it refused", err)
	}
	evs, err := b.s.Events(b.ctx, id)
	if err != nil || len(evs) != 2 || evs[0].Kind != "enqueued" || evs[1].Reason != "second" {
		t.Errorf("events = %+v, %v; want enqueued and the note, nothing else", evs, err)
	}
	if err := b.s.AddNote(b.ctx, id, "me", "third"); err != nil {
		t.Fatalf("a note after the refused writes: %v", err)
	}
	if evs, err := b.s.Events(b.ctx, id); err != nil || len(evs) != 3 || evs[2].Reason != "third" || evs[2].ID <= evs[1].ID {
		t.Errorf("events = %+v, %v; want the third note last", evs, err)
	}
}
