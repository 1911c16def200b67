package storepgxv5_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

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
	if v != storepgxv5.SchemaVersion || n != 1 {
		t.Errorf("schema_migrations: %d rows, version %d; want 1 row (the baseline step) at v%d", n, v, storepgxv5.SchemaVersion)
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
// PostgreSQL schema is in storedriver.SchemaTables.
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
			_, err := tx.Insert(ctx, e.SQL().Enqueue, "t", fmt.Sprint(time.Now().UnixNano()), "", "", "", "[]", 0, 3, 1, 1, 1)
			return err
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
