package storepgxv5_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/store/storedriver"
	"github.com/ticketd/ticketd/store/storepgxv5"
	"github.com/ticketd/ticketd/store/storetest"
)

// TestMigrationsRecordVersionsOnce: nodes starting together migrate one after the other
// (an advisory lock), so the schema is created once and each version recorded once, at the
// version the SQLite engine has too.
func TestMigrationsRecordVersionsOnce(t *testing.T) {
	url := storetest.FreshPostgres(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	engines := make([]*storepgxv5.Engine, 4)
	errs := make([]error, len(engines))
	for i := range engines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			engines[i], errs[i] = storepgxv5.Open(ctx, url, storepgxv5.Options{})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: Open: %v", i, err)
		}
		defer engines[i].Close()
	}
	var n, v int
	if err := engines[0].Pool().QueryRow(ctx, `SELECT count(*), max(version) FROM schema_migrations`).Scan(&n, &v); err != nil {
		t.Fatal(err)
	}
	// One row per step, each once: the v13 baseline, then every later version.
	if steps := storepgxv5.SchemaVersion - 12; v != storepgxv5.SchemaVersion || n != steps {
		t.Errorf("schema_migrations: %d rows, version %d; want %d rows (the v13 baseline step and each later one) up to v%d", n, v, steps, storepgxv5.SchemaVersion)
	}
	if got, err := engines[1].SchemaVersion(ctx); err != nil || got != storepgxv5.SchemaVersion {
		t.Errorf("SchemaVersion = %d, %v", got, err)
	}
}

func TestMigrateRefusesNewerSchemaAndForeignTables(t *testing.T) {
	ctx := context.Background()
	url := storetest.FreshPostgres(t)
	e, err := storepgxv5.Open(ctx, url, storepgxv5.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Pool().Exec(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES ($1, 1)`, storepgxv5.SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	e.Close()
	if _, err := storepgxv5.Open(ctx, url, storepgxv5.Options{}); err == nil || !strings.Contains(err.Error(), "upgrade ticketd") {
		t.Errorf("Open of a newer schema: %v; want an error asking to upgrade", err)
	}

	foreign := storetest.FreshPostgres(t)
	conn, err := pgconn.Connect(ctx, foreign)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := conn.Exec(ctx, `CREATE TABLE tickets (id int)`).Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := storepgxv5.Open(ctx, foreign, storepgxv5.Options{}); err == nil || !strings.Contains(err.Error(), "not a ticketd database") {
		t.Errorf("Open of a schema with someone else's tickets table: %v; want it refused", err)
	}
}

// TestUnreachableServerSaysWhere: a server that is not there fails Open naming the URL,
// without its password.
func TestUnreachableServerSaysWhere(t *testing.T) {
	_, err := storepgxv5.Open(context.Background(), "postgres://ticketd:s3cret@127.0.0.1:1/ticketd?connect_timeout=2", storepgxv5.Options{})
	if err == nil {
		t.Fatal("Open of 127.0.0.1:1 succeeded")
	}
	if !strings.Contains(err.Error(), "127.0.0.1:1") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("Open error %q; want the server named and the password left out", err)
	}
	if _, err := storepgxv5.Open(context.Background(), "postgres://%zz", storepgxv5.Options{}); err == nil {
		t.Error("Open of a malformed URL succeeded")
	}
}

// TestWriteRetriesConflicts: a transaction PostgreSQL refuses as a serialization failure
// is rerun, and one refused through every retry says ErrBusy; other errors are not retried.
func TestWriteRetriesConflicts(t *testing.T) {
	ctx := context.Background()
	var retries int
	e, err := storepgxv5.Open(ctx, storetest.FreshPostgres(t), storepgxv5.Options{
		Options: storedriver.Options{BusyRetries: 3, OnRetry: func(string, int, error) { retries++ }}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	conflict := &pgconn.PgError{Code: "40001", Message: "could not serialize access"}
	tries := 0
	err = e.Write(ctx, "flaky", func(ctx context.Context, tx storedriver.Tx) error {
		if tries++; tries < 3 {
			return conflict
		}
		return nil
	})
	if err != nil || tries != 3 || retries != 2 {
		t.Errorf("Write conflicting twice: %v after %d tries, %d retries; want success on the third", err, tries, retries)
	}
	err = e.Write(ctx, "doomed", func(ctx context.Context, tx storedriver.Tx) error { return conflict })
	if !errors.Is(err, storedriver.ErrBusy) {
		t.Errorf("Write conflicting every time: %v; want ErrBusy", err)
	}
	boom := errors.New("boom")
	tries = 0
	err = e.Write(ctx, "broken", func(ctx context.Context, tx storedriver.Tx) error { tries++; return boom })
	if !errors.Is(err, boom) || tries != 1 {
		t.Errorf("Write failing otherwise: %v after %d tries; want boom, once", err, tries)
	}
}

// TestSchemaTablesCoverTheSchema: as the SQLite engine's: every table and column of the
// PostgreSQL schema is in storedriver.SchemaTables, but for tickets.predicted, which the
// schema derives itself.
func TestSchemaTablesCoverTheSchema(t *testing.T) {
	ctx := context.Background()
	e, err := storepgxv5.Open(ctx, storetest.FreshPostgres(t), storepgxv5.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rows, err := e.Pool().Query(ctx, `SELECT table_name, column_name FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name <> 'schema_migrations' ORDER BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	schema := map[string][]string{}
	for rows.Next() {
		var table, col string
		if err := rows.Scan(&table, &col); err != nil {
			t.Fatal(err)
		}
		if table == "tickets" && col == "predicted" {
			continue // derived from predicted_files by triggers (migration 025), never copied
		}
		schema[table] = append(schema[table], col)
	}
	listed := map[string][]string{}
	for _, tb := range storedriver.SchemaTables {
		listed[tb.Name] = slices.Sorted(slices.Values(tb.Columns))
	}
	for table, cols := range schema {
		if !slices.Equal(cols, listed[table]) {
			t.Errorf("table %s: schema columns %v, SchemaTables %v", table, cols, listed[table])
		}
	}
	if len(listed) != len(schema) {
		t.Errorf("SchemaTables lists %d tables, the schema has %d", len(listed), len(schema))
	}
}

// TestSurvivesLostConnections: when the server drops every connection of a node (a restart,
// a network cut), the next write runs on a new connection (one that failed before it
// committed is rerun), and the listener comes back on its own and passes on the notices
// again.
func TestSurvivesLostConnections(t *testing.T) {
	ctx := context.Background()
	base := storetest.FreshPostgres(t)
	app := "ticketd-test-lost-" + strings.ReplaceAll(t.Name(), "/", "-")
	u := base + "&application_name=" + app
	notices := make(chan struct{}, 16)
	e, err := storepgxv5.Open(ctx, u, storepgxv5.Options{PollEvery: 20 * time.Millisecond,
		Options: storedriver.Options{OnNotify: func() { notices <- struct{}{} }}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	write := func() error {
		return e.Write(ctx, "enqueue", func(ctx context.Context, tx storedriver.Tx) error {
			return enqueueRaw(ctx, e, tx, fmt.Sprint(time.Now().UnixNano()))
		})
	}
	if err := write(); err != nil {
		t.Fatal(err)
	}
	admin, err := pgconn.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	kill := fmt.Sprintf(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = '%s'`, app)
	res := admin.ExecParams(ctx, kill, nil, nil, nil, nil).Read()
	if res.Err != nil || len(res.Rows) != 1 || string(res.Rows[0][0]) == "0" {
		t.Fatalf("terminate the node's connections: %v, %q", res.Err, res.Rows)
	}
	if err := write(); err != nil {
		t.Fatalf("write after the server dropped the connections: %v; want it rerun on a new connection", err)
	}
	// The listener reconnected (and passed one notice on for what it may have missed).
	select {
	case <-notices:
	case <-time.After(30 * time.Second): // a bound for a broken listener, not a wait the test relies on
		t.Fatal("no notice after the listener lost its connection")
	}
	for len(notices) > 0 {
		<-notices
	}
	other, err := storepgxv5.Open(ctx, base, storepgxv5.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.Notify()
	select {
	case <-notices:
	case <-time.After(30 * time.Second):
		t.Fatal("another node's notice did not reach the reconnected listener")
	}
}

// proxy forwards TCP connections to target until closed; closing it cuts every
// connection and refuses new ones, as a database that went away does.
type proxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func startProxy(t *testing.T, addr, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { io.Copy(s, c); s.Close() }()
			go func() { io.Copy(c, s); c.Close() }()
		}
	}()
	return p
}

// enqueuer is a write that enqueues one more ticket each time it is called.
func enqueuer(ctx context.Context, e *storepgxv5.Engine) func() error {
	n := 0
	return func() error {
		n++
		return e.Write(ctx, "enqueue", func(ctx context.Context, tx storedriver.Tx) error {
			return enqueueRaw(ctx, e, tx, fmt.Sprint(n))
		})
	}
}

// proxiedDatabase is a fresh database's URL pointing at a proxy to it, the server's own
// address (target, to start another proxy to) and the proxy.
func proxiedDatabase(t *testing.T) (u *url.URL, target string, p *proxy) {
	t.Helper()
	u, err := url.Parse(storetest.FreshPostgres(t))
	if err != nil {
		t.Fatal(err)
	}
	target = u.Host
	p = startProxy(t, "127.0.0.1:0", target)
	u.Host = p.ln.Addr().String()
	return u, target, p
}

func (p *proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
}

// enqueueRaw enqueues ticket external in tx with the engine's own statements, its first
// event included: the commit refuses a ticket whose head was never written (v26).
func enqueueRaw(ctx context.Context, e *storepgxv5.Engine, tx storedriver.Tx, external string) error {
	id, err := tx.Insert(ctx, e.SQL().Enqueue, "t", external, "", "", "", "[]", 0, 3, 1, 1, 1)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, e.SQL().AppendEvent, storedriver.AppendEventParams{TicketID: id, At: 1, Kind: "enqueued", ToState: "queued"}.Args()...)
	return err
}

// TestDatabaseGoneThenBack: with the database unreachable, a write fails within the write
// timeout saying the database did not take it (not that it was busy, nor a hang); the writes
// after it are tried once each and fail at once, saying since when the database is gone
// (before, each waited the whole write timeout in turn: a night ending on a dead server ran
// a minute and a half late); once it is back, writes go through again, and the next outage
// is waited for again as a blip.
func TestDatabaseGoneThenBack(t *testing.T) {
	ctx := context.Background()
	u, target, p := proxiedDatabase(t)
	addr := p.ln.Addr().String()
	var retries atomic.Int32
	e, err := storepgxv5.Open(ctx, u.String(), storepgxv5.Options{WriteTimeout: time.Second, PollEvery: 50 * time.Millisecond,
		Options: storedriver.Options{OnRetry: func(string, int, error) { retries.Add(1) }}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	write := enqueuer(ctx, e)
	if err := write(); err != nil {
		t.Fatal(err)
	}
	p.close()
	start := time.Now()
	err = write()
	took := time.Since(start)
	t.Logf("write with the database gone: %v after %v", err, took.Round(time.Millisecond))
	if err == nil || errors.Is(err, storedriver.ErrBusy) || !strings.Contains(err.Error(), "did not take the write") || !strings.Contains(err.Error(), addr) {
		t.Errorf("write with the database gone: %v; want an error naming the database, not busy", err)
	}
	if took > 30*time.Second {
		t.Errorf("the failing write took %v; want it bounded by the 1s write timeout and its last try", took)
	}
	if n := retries.Swap(0); n == 0 {
		t.Errorf("the first write with the database gone was not retried; want it rerun until the write timeout (a blip)")
	}
	for i := range 2 {
		err := write()
		t.Logf("write %d after the database was found gone: %v", i+2, err)
		if err == nil || !strings.Contains(err.Error(), "has not answered since") || !strings.Contains(err.Error(), addr) {
			t.Errorf("write %d after the database was found gone: %v; want it to say since when the database at %s is gone", i+2, err, addr)
		}
		if n := retries.Swap(0); n != 0 {
			t.Errorf("write %d after the database was found gone was retried %d times; want one try, failing at once", i+2, n)
		}
	}
	back := startProxy(t, addr, target)
	if err := write(); err != nil {
		t.Errorf("write once the database is back: %v", err)
	}
	retries.Store(0)
	back.close()
	if err := write(); err == nil || strings.Contains(err.Error(), "has not answered since") || retries.Load() == 0 {
		t.Errorf("write in a new outage after the database was back: %v after %d retries; want it retried for the write timeout, as a blip", err, retries.Load())
	}
}

// TestMigrateV13ToV14: a database issue 24's build made (v13) keeps its tickets when v14
// adds needs_info and the questions: a running ticket stays running with no question, and
// the new state is then accepted where the old CHECK refused it.
func TestMigrateV13ToV14(t *testing.T) {
	ctx := context.Background()
	url := storetest.FreshPostgres(t)
	old, err := storepgxv5.Open(ctx, url, storepgxv5.Options{MigrateTo: 13})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Pool().Exec(ctx, `INSERT INTO tickets (source, external_id, state, attempts, run_after, lease_expires_at, created_at, updated_at, lease_node)
		VALUES ('test', '1', 'running', 1, 0, 60000, 0, 0, 'vm1')`); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Pool().Exec(ctx, `UPDATE tickets SET state = 'needs_info', lease_expires_at = NULL`); err == nil {
		t.Error("v13 took the state needs_info")
	}
	old.Close()
	e, err := storepgxv5.Open(ctx, url, storepgxv5.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var state, node, question string
	var questions int
	if err := e.Pool().QueryRow(ctx, `SELECT state, lease_node, question, questions FROM tickets`).Scan(&state, &node, &question, &questions); err != nil {
		t.Fatal(err)
	}
	if state != "running" || node != "vm1" || question != "" || questions != 0 {
		t.Errorf("after v14: state %s, node %s, question %q (%d); want running on vm1, none asked", state, node, question, questions)
	}
	if _, err := e.Pool().Exec(ctx, `UPDATE tickets SET state = 'needs_info', lease_expires_at = NULL`); err != nil {
		t.Errorf("v14 refuses needs_info: %v", err)
	}
	if _, err := e.Pool().Exec(ctx, `UPDATE tickets SET state = 'asleep', lease_expires_at = NULL`); err == nil {
		t.Error("v14 took an unknown state")
	}
}

// TestMigrateV14ToV15: as the SQLite engine's: a v14 database keeps its tickets' attempts,
// and a requeue numbers on from them with a fresh budget; the database gets an identity.
func TestMigrateV14ToV15(t *testing.T) {
	ctx := context.Background()
	url := storetest.FreshPostgres(t)
	old, err := storepgxv5.Open(ctx, url, storepgxv5.Options{MigrateTo: 14})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Pool().Exec(ctx, `INSERT INTO tickets (source, external_id, state, attempts, max_attempts, run_after,
			created_at, updated_at, finished_at, reason)
		VALUES ('dir', 'a.md', 'escalated', 3, 3, 0, 0, 0, 1, 'fix: tests fail')`); err != nil {
		t.Fatal(err)
	}
	old.Close()
	s, err := store.OpenURL(ctx, url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Requeue(ctx, firstTicket(t, s), "op", false); err != nil {
		t.Fatal(err)
	}
	l, err := s.Claim(ctx, "w", time.Minute)
	if err != nil || l.Attempt != 4 || l.Ticket.AttemptLimit() != 6 {
		t.Fatalf("claim after requeue: attempt %d limit %d, %v; want attempt 4 of a fresh budget up to 6", l.Attempt, l.Ticket.AttemptLimit(), err)
	}
	if ident, err := s.Identity(ctx); err != nil || len(ident) != 32 {
		t.Errorf("identity %q, %v; want 32 hex digits", ident, err)
	}
}

func firstTicket(t *testing.T, s *store.Store) int64 {
	t.Helper()
	list, err := s.List(context.Background(), store.Filter{})
	if err != nil || len(list) != 1 || list[0].Attempts != 3 {
		t.Fatalf("migrated tickets %+v, %v; want one with its 3 attempts", list, err)
	}
	return list[0].ID
}

// TestMigrateV24ToV25: a v24 database's tickets with predicted files are flagged so, the
// others not, and a ticket can no longer be deleted.
func TestMigrateV24ToV25(t *testing.T) {
	ctx := context.Background()
	e := migratedFrom(t, 24,
		`INSERT INTO tickets (id, source, external_id, run_after, created_at, updated_at) VALUES
			(1, 'dir', 'a.md', 0, 0, 0), (2, 'dir', 'b.md', 0, 0, 0), (3, 'dir', 'c.md', 0, 0, 0)`,
		`INSERT INTO predicted_files (ticket_id, file) VALUES (1, 'calc.py'), (1, 'util.py'), (3, 'calc.py')`)
	rows, err := e.Pool().Query(ctx, `SELECT predicted FROM tickets ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	flags, err := pgx.CollectRows(rows, pgx.RowTo[bool])
	if err != nil || !slices.Equal(flags, []bool{true, false, true}) {
		t.Errorf("predicted after v25: %v, %v; want true, false, true", flags, err)
	}
	if _, err := e.Pool().Exec(ctx, `DELETE FROM tickets WHERE id = 2`); err == nil || !strings.Contains(err.Error(), "never deleted") {
		t.Errorf("delete a ticket after v25: %v; want the trigger to refuse it", err)
	}
}

// TestMigrateV25ToV26: v26 moves the check that a ticket's head names a written event from
// events.prev_id's foreign key to the commit. On a database migrated from v25, a head moved
// without its event is refused at commit, a rescue's (running to running) included; a claim
// (queued to running) commits unchecked, and one that skipped its event stops the ticket's
// next transition, as the key did; the key is gone.
func TestMigrateV25ToV26(t *testing.T) {
	ctx := context.Background()
	e := migratedFrom(t, 25,
		`INSERT INTO tickets (id, source, external_id, run_after, created_at, updated_at, last_event_id) VALUES
			(1, 'dir', 'a.md', 0, 0, 0, 10), (2, 'dir', 'b.md', 0, 0, 0, 20)`,
		`INSERT INTO events (id, ticket_id, at, kind) VALUES (10, 1, 0, 'enqueued'), (20, 2, 0, 'enqueued')`,
		`SELECT setval('events_id_seq', 100)`)
	// lease is a claim's transition of ticket %d, without its event.
	const lease = `UPDATE tickets SET state = 'running', lease_owner = 'w', lease_expires_at = 1000, attempts = attempts + 1,
		prev_event_id = last_event_id, last_event_id = nextval('events_id_seq') WHERE id = %d`
	claim := `WITH leased AS (` + fmt.Sprintf(lease, 2) + ` RETURNING id, last_event_id, prev_event_id)
		INSERT INTO events (id, ticket_id, at, kind, prev_id) SELECT last_event_id, id, 1, 'claimed', prev_event_id FROM leased`
	for _, c := range []struct {
		name, sql string
		refused   bool
	}{
		{"a note's reservation without its note", `UPDATE tickets SET prev_event_id = last_event_id, last_event_id = nextval('events_id_seq') WHERE id = 1`, true},
		{"a new ticket without its first event", `INSERT INTO tickets (id, source, external_id, run_after, created_at, updated_at, last_event_id) VALUES (3, 'dir', 'c.md', 0, 0, 0, nextval('events_id_seq'))`, true},
		{"a claim with its event", claim, false},
		{"a rescue's reservation without its event", `UPDATE tickets SET prev_event_id = last_event_id, last_event_id = nextval('events_id_seq') WHERE id = 2`, true},
		{"a claim without its event", fmt.Sprintf(lease, 1), false},
		{"the next transition, over the claim's missing event", `WITH r AS (UPDATE tickets SET prev_event_id = last_event_id, last_event_id = nextval('events_id_seq') WHERE id = 1
			RETURNING id, last_event_id, prev_event_id)
			INSERT INTO events (id, ticket_id, at, kind, prev_id) SELECT last_event_id, id, 2, 'note', prev_event_id FROM r`, true},
	} {
		_, err := e.Pool().Exec(ctx, c.sql)
		if refused := err != nil; refused != c.refused || refused && !strings.Contains(err.Error(), "reserved but never written") {
			t.Errorf("%s after v26: %v; want refused %v, at commit", c.name, err, c.refused)
		}
	}
	var keys int
	if err := e.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_constraint WHERE conrelid = 'events'::regclass AND contype = 'f'`).Scan(&keys); err != nil || keys != 0 {
		t.Errorf("foreign keys on events after v26: %d, %v; want none", keys, err)
	}
}

// migratedFrom is a fresh database at schema version v, given rows by the statements of
// setup, then opened by this build: migrated to its latest version. It is closed when the
// test ends.
func migratedFrom(t *testing.T, v int, setup ...string) *storepgxv5.Engine {
	t.Helper()
	ctx := context.Background()
	url := storetest.FreshPostgres(t)
	old, err := storepgxv5.Open(ctx, url, storepgxv5.Options{MigrateTo: v})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range setup {
		if _, err := old.Pool().Exec(ctx, q); err != nil {
			old.Close()
			t.Fatalf("v%d: %s: %v", v, q, err)
		}
	}
	old.Close()
	e, err := storepgxv5.Open(ctx, url, storepgxv5.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// TestWriteOutlastsARestart: a write whose server went away (a restart, a failover) is
// rerun until the server is back, for up to the write timeout, not only for the few quick
// tries a busy database gets: a restart takes seconds, and a write lost to it (a night's
// record, a release) must not fail the night.
func TestWriteOutlastsARestart(t *testing.T) {
	ctx := context.Background()
	u, target, p := proxiedDatabase(t)
	addr := p.ln.Addr().String()
	const busyRetries = 3
	retries := make(chan int, 100)
	e, err := storepgxv5.Open(ctx, u.String(), storepgxv5.Options{WriteTimeout: time.Minute, PollEvery: 50 * time.Millisecond,
		Options: storedriver.Options{BusyRetries: busyRetries, OnRetry: func(op string, try int, err error) {
			select {
			case retries <- try:
			default:
			}
		}}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	write := enqueuer(ctx, e)
	if err := write(); err != nil {
		t.Fatal(err)
	}
	p.close()
	done := make(chan error, 1)
	go func() { done <- write() }()
	for try := 0; try <= 2*busyRetries; {
		select {
		case err := <-done:
			t.Fatalf("write with the server away for %d tries: %v; want it rerun until the server is back (write timeout 1m)", try, err)
		case try = <-retries:
		}
	}
	back := startProxy(t, addr, target)
	defer back.close()
	if err := <-done; err != nil {
		t.Errorf("write once the server is back: %v", err)
	}
}

// TestMigrateOutlastsARestart: a node whose start meets the database restarting (cron
// starts the night while the server is away for seconds) waits for it, as a write does,
// instead of giving up the night; a server that refuses what is asked (a database that does
// not exist) still fails at once.
func TestMigrateOutlastsARestart(t *testing.T) {
	ctx := context.Background()
	u, target, away := proxiedDatabase(t)
	addr := away.ln.Addr().String()
	away.close() // the port refuses connections, as a stopped server's does
	retries := make(chan string, 100)
	opts := storepgxv5.Options{WriteTimeout: time.Minute, PollEvery: 50 * time.Millisecond,
		Options: storedriver.Options{OnRetry: func(op string, try int, err error) {
			select {
			case retries <- op:
			default:
			}
		}}}
	type opened struct {
		e   *storepgxv5.Engine
		err error
	}
	done := make(chan opened, 1)
	go func() {
		e, err := storepgxv5.Open(ctx, u.String(), opts)
		done <- opened{e, err}
	}()
	for n := 0; n < 3; {
		select {
		case o := <-done:
			t.Fatalf("open with the server away after %d retries: %v; want it to wait for the server (write timeout 1m)", n, o.err)
		case op := <-retries:
			if op == "migrate" {
				n++
			}
		}
	}
	back := startProxy(t, addr, target)
	t.Cleanup(back.close)
	o := <-done
	if o.err != nil {
		t.Fatalf("open once the server is back: %v", o.err)
	}
	t.Cleanup(func() { o.e.Close() })
	if v, err := o.e.SchemaVersion(ctx); err != nil || v != storepgxv5.SchemaVersion {
		t.Errorf("schema after the wait: v%d, %v; want v%d", v, err, storepgxv5.SchemaVersion)
	}

	nodb := *u
	nodb.Path = "/ticketd_no_such_database"
	if _, err := storepgxv5.Open(ctx, nodb.String(), opts); err == nil || !strings.Contains(err.Error(), "ticketd_no_such_database") {
		t.Errorf("open of a database that does not exist: %v; want its error", err)
	}
	select {
	case op := <-retries:
		t.Errorf("a database that does not exist was retried (%s); want it to fail at once", op)
	default:
	}
}

// TestSessionsEndIdleTransactions: the store's sessions have PostgreSQL end a session left
// idle inside a transaction after a minute, so a node stopped mid-transaction (a paused VM,
// a SIGSTOP) does not keep its row locks for good: another node could never rescue the
// ticket it leased (cmd/ticketd's TestStaleNodeCannotFinish hung so once). The URL may set
// another value.
func TestSessionsEndIdleTransactions(t *testing.T) {
	ctx := context.Background()
	url := storetest.FreshPostgres(t)
	for _, tt := range []struct{ name, url, want string }{
		{"default", url, "1min"},
		{"the URL's own", url + map[bool]string{true: "&", false: "?"}[strings.Contains(url, "?")] + "idle_in_transaction_session_timeout=5s", "5s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, err := storepgxv5.Open(ctx, tt.url, storepgxv5.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			var got string
			if err := e.Pool().QueryRow(ctx, `SHOW idle_in_transaction_session_timeout`).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("idle_in_transaction_session_timeout = %q, want %q", got, tt.want)
			}
		})
	}
}
