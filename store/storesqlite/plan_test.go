package storesqlite_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"modernc.org/sqlite"

	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/store/storesqlite"
)

// recordDriver wraps the real driver and remembers the text of every statement the store
// prepares or runs, on both pools, so the plan test checks the statements the code really
// runs rather than copies of them.
type recordDriver struct {
	inner driver.Driver
	mu    sync.Mutex
	on    bool
	seen  map[string]bool
}

func (d *recordDriver) note(q string) {
	d.mu.Lock()
	if d.on {
		d.seen[q] = true
	}
	d.mu.Unlock()
}

func (d *recordDriver) start() {
	d.mu.Lock()
	d.on, d.seen = true, map[string]bool{}
	d.mu.Unlock()
}

func (d *recordDriver) stop() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.on = false
	var out []string
	for q := range d.seen {
		out = append(out, q)
	}
	slices.Sort(out)
	return out
}

func (d *recordDriver) Open(name string) (driver.Conn, error) {
	c, err := d.inner.Open(name)
	if err != nil {
		return nil, err
	}
	return &recordConn{Conn: c, d: d}, nil
}

type recordConn struct {
	driver.Conn
	d *recordDriver
}

func (c *recordConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	c.d.note(q)
	return c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, q)
}

func (c *recordConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c *recordConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	c.d.note(q)
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, q, args)
}

func (c *recordConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	c.d.note(q)
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, q, args)
}

var (
	registerRecorder sync.Once
	recorder         = &recordDriver{inner: &sqlite.Driver{}}
)

// hotWork runs every store call of a worker's night and of the per-night reports: the poll
// and claim path, the worker's writes, the records, a run's totals and stats, one ticket's
// history, the listing of the active tickets and paused claims.
func hotWork(t *testing.T, b bundle) {
	t.Helper()
	ctx := b.ctx
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	run, err := b.s.StartRun(ctx, "once")
	must(err)
	id := b.enqueue(t, "hot-1")
	b.enqueue(t, "hot-2", func(n *store.NewTicket) { n.Repo = "other" })
	if _, created, err := b.s.Enqueue(ctx, store.NewTicket{Source: "test", ExternalID: "hot-1"}); err != nil || created {
		t.Fatalf("duplicate enqueue: created %v, %v", created, err)
	}
	_, err = b.s.NextDue(ctx)
	must(err)
	b.s.SetPaused([]string{"other"})
	_, err = b.s.NextDue(ctx)
	must(err)
	l := b.claim(t, "w1")
	b.s.SetPaused(nil)
	_, err = b.s.Heartbeat(ctx, l.Ticket.ID, l.Token, time.Minute)
	must(err)
	must(b.s.SaveTriage(ctx, l.Ticket.ID, l.Token, "{}"))
	_, err = b.s.RecordModelCall(ctx, store.ModelCall{TicketID: l.Ticket.ID, RunID: run, Attempt: 1, Role: "maker", PromptTokens: 10})
	must(err)
	_, err = b.s.RecordToolCall(ctx, store.ToolCall{TicketID: l.Ticket.ID, Attempt: 1, Tool: "read_files"})
	must(err)
	_, err = b.s.Fail(ctx, l.Ticket.ID, l.Token, store.Failure{Kind: store.FailFix, Reason: "red"})
	must(err)
	l = b.claim(t, "w1")
	must(b.s.Complete(ctx, l.Ticket.ID, l.Token, store.Result{Branch: "b"}))
	if err := b.s.Complete(ctx, l.Ticket.ID, l.Token, store.Result{}); err == nil {
		t.Fatal("second complete succeeded")
	}
	b.clock.Advance(time.Hour) // past hot-1's retry backoff
	l = b.claim(t, "w2")
	b.clock.Advance(2 * time.Minute) // w2 dies: the next claim rescues (and settles)
	l = b.claim(t, "w3")
	_, err = b.s.RequestCancel(ctx, l.Ticket.ID, "op", "stop")
	must(err)
	must(b.s.FinishCancelled(ctx, l.Ticket.ID, l.Token, "stopped"))
	if _, err := b.s.Claim(ctx, "w1", time.Minute); err != store.ErrNoTicket {
		t.Fatalf("claim on an empty queue: %v", err)
	}
	_, err = b.s.List(ctx, store.Filter{States: []store.State{store.StateQueued, store.StateRunning}})
	must(err)
	_, err = b.s.List(ctx, store.Filter{States: []store.State{store.StateRunning}, Limit: 20})
	must(err)
	_, err = b.s.Events(ctx, id)
	must(err)
	_, err = b.s.TransportReleases(ctx, id, run)
	must(err)
	_, err = b.s.ModelCalls(ctx, id)
	must(err)
	_, err = b.s.ToolCalls(ctx, id)
	must(err)
	_, err = b.s.Get(ctx, id)
	must(err)
	must(b.s.FinishRun(ctx, run))
	_, err = b.s.Stats(ctx, run)
	must(err)
	_, err = b.s.Runs(ctx, 10)
	must(err)
}

// historyTables grow with every night; a hot statement must not SCAN them (by name or by
// the aliases the store's queries give them).
var historyTables = []string{"tickets", "t", "events", "e", "model_calls", "tool_calls"}

// TestHotStatementsUseIndexes runs the worker's and the night's store calls and asks SQLite
// for the plan of every statement they ran: none may SCAN tickets, events, model_calls or
// tool_calls (a full pass over the history), so their cost does not grow with it.
func TestHotStatementsUseIndexes(t *testing.T) {
	registerRecorder.Do(func() { sql.Register("sqlite-record", recorder) })
	b := setup(t, nil, func(o *storesqlite.Options) { o.DriverName = "sqlite-record" })
	recorder.start()
	hotWork(t, b)
	queries := recorder.stop()
	if len(queries) < 25 {
		t.Fatalf("recorded %d statements; want the whole hot path (at least 25)", len(queries))
	}
	for _, q := range queries {
		upper := strings.ToUpper(strings.TrimSpace(q))
		if strings.HasPrefix(upper, "BEGIN") || strings.HasPrefix(upper, "COMMIT") || strings.HasPrefix(upper, "ROLLBACK") ||
			strings.HasPrefix(upper, "PRAGMA") {
			continue
		}
		plan := explain(t, b.e, q)
		if scanned := historyScans(plan); len(scanned) > 0 {
			t.Errorf("statement scans %v:\n%s\nplan:\n  %s", scanned, q, strings.Join(plan, "\n  "))
		}
	}
}

// historyScans returns the history tables a plan SCANs. A walk of tickets_open is not a
// scan of history: that partial index holds only the tickets not yet finished, the live
// queue.
func historyScans(plan []string) []string {
	var out []string
	for _, step := range plan {
		rest, ok := strings.CutPrefix(step, "SCAN ")
		name, how, _ := strings.Cut(rest, " ")
		if !ok || !slices.Contains(historyTables, name) || strings.HasSuffix(how, "INDEX tickets_open") {
			continue
		}
		out = append(out, name)
	}
	return out
}

// TestPlanCheckCatchesScans is the plan test's negative control: the old List (states bound
// as parameters, model calls grouped over the whole table) must be caught.
func TestPlanCheckCatchesScans(t *testing.T) {
	b := setup(t, nil, nil)
	old := `SELECT t.id, coalesce(m.n, 0) FROM tickets t LEFT JOIN (
			SELECT ticket_id, count(*) AS n FROM model_calls GROUP BY ticket_id) m ON m.ticket_id = t.id
		WHERE t.state IN (?, ?) ORDER BY t.id DESC`
	plan := explain(t, b.e, old)
	got := historyScans(plan)
	t.Logf("old List plan:\n  %s\nscans %v", strings.Join(plan, "\n  "), got)
	if !slices.Contains(got, "t") || !slices.Contains(got, "model_calls") {
		t.Errorf("historyScans(old List) = %v; want t and model_calls (else the check cannot fail)", got)
	}
}

// explain returns the detail column of EXPLAIN QUERY PLAN for q (parameters left NULL).
func explain(t *testing.T, e *storesqlite.Engine, q string) []string {
	t.Helper()
	rows, err := e.WriterQuery(context.Background(), "EXPLAIN QUERY PLAN "+q, make([]any, countParams(q))...)
	if err != nil {
		t.Fatalf("explain %s: %v", q, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		out = append(out, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// countParams is how many arguments q binds: its highest ?N, or else its count of ?.
func countParams(q string) int {
	n, plain := 0, 0
	for _, m := range paramRE.FindAllStringSubmatch(q, -1) {
		if m[1] == "" {
			plain++
			continue
		}
		var k int
		fmt.Sscan(m[1], &k)
		n = max(n, k)
	}
	return max(n, plain)
}

var paramRE = regexp.MustCompile(`\?(\d*)`)

// TestBaselineStatementsUseIndexes: the baseline statements run once per repository per night
// but the table grows with every base commit; none may scan it.
func TestBaselineStatementsUseIndexes(t *testing.T) {
	registerRecorder.Do(func() { sql.Register("sqlite-record", recorder) })
	b := setup(t, nil, func(o *storesqlite.Options) { o.DriverName = "sqlite-record" })
	recorder.start()
	if err := b.s.SaveBaseline(b.ctx, store.Baseline{Repo: "r", BaseCommit: "c", ChecksHash: "h", Results: "[]"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.s.LoadBaseline(b.ctx, "r", "c", "h"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.s.PruneBaselines(b.ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	queries := recorder.stop()
	checked := 0
	for _, q := range queries {
		if !strings.Contains(q, "baselines") {
			continue
		}
		checked++
		plan := explain(t, b.e, q)
		t.Logf("%s\nplan:\n  %s", q, strings.Join(plan, "\n  "))
		for _, step := range plan {
			if strings.HasPrefix(step, "SCAN baselines") {
				t.Errorf("statement scans baselines:\n%s\nplan:\n  %s", q, strings.Join(plan, "\n  "))
			}
		}
	}
	if checked < 3 {
		t.Fatalf("checked %d baseline statements; want 3 (save, load, prune)", checked)
	}
	// Negative control: a lookup without the key's first column must be caught.
	plan := explain(t, b.e, `SELECT results FROM baselines WHERE checks_hash = ?`)
	if !slices.ContainsFunc(plan, func(s string) bool { return strings.HasPrefix(s, "SCAN baselines") }) {
		t.Errorf("plan of an unindexed lookup = %v; want a SCAN (else the check cannot fail)", plan)
	}
}
