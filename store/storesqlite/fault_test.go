package storesqlite_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"modernc.org/sqlite"

	"github.com/ticketd/ticketd/store"
	"github.com/ticketd/ticketd/store/storedriver"
	"github.com/ticketd/ticketd/store/storesqlite"
)

// faultDriver wraps the real driver and, on the writer connection only, fails statements
// and commits with SQLITE_BUSY (without running them, as SQLite does) or stalls them.
type faultDriver struct {
	inner driver.Driver

	mu       sync.Mutex
	rng      *rand.Rand
	busyRate float64       // probability a statement or commit returns busy
	slowRate float64       // probability a statement is slowed by slowFor
	slowFor  time.Duration // a slow write's extra duration
	gate     chan struct{} // when non-nil, the next writer statement waits here
	entered  chan struct{} // signalled when a statement is held at gate
	// failQuery, while failLeft > 0, makes prepared statements with exactly this text fail
	// with busy (failLeft counts down): a fault aimed at one statement, e.g. ROLLBACK.
	failQuery string
	failLeft  int
	injected  atomic.Int64
}

// aimed reports whether the statement q must fail now (see failQuery).
func (d *faultDriver) aimed(q string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failLeft > 0 && q == d.failQuery {
		d.failLeft--
		d.injected.Add(1)
		return true
	}
	return false
}

type busyErr struct{}

func (busyErr) Error() string { return "database is locked (injected SQLITE_BUSY)" }
func (busyErr) Code() int     { return 5 }

func (d *faultDriver) fault() error {
	d.mu.Lock()
	gate, entered := d.gate, d.entered
	d.gate = nil
	busy := d.rng.Float64() < d.busyRate
	slow := d.rng.Float64() < d.slowRate
	d.mu.Unlock()
	if gate != nil {
		entered <- struct{}{}
		<-gate
	}
	if busy {
		d.injected.Add(1)
		return busyErr{}
	}
	if slow {
		time.Sleep(d.slowFor) // a slow disk, not a test's timing assumption
	}
	return nil
}

func (d *faultDriver) Open(name string) (driver.Conn, error) {
	c, err := d.inner.Open(name)
	if err != nil || strings.Contains(name, "mode=ro") {
		return c, err
	}
	return &faultConn{Conn: c, d: d}, nil
}

type faultConn struct {
	driver.Conn
	d *faultDriver
}

func (c *faultConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	st, err := c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	return &faultStmt{Stmt: st, d: c.d, q: q}, nil
}

func (c *faultConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &faultTx{Tx: tx, d: c.d}, nil
}

func (c *faultConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	if err := c.d.fault(); err != nil {
		return nil, err
	}
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, q, args)
}

func (c *faultConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	if err := c.d.fault(); err != nil {
		return nil, err
	}
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, q, args)
}

type faultStmt struct {
	driver.Stmt
	d *faultDriver
	q string
}

func (s *faultStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	if s.d.aimed(s.q) {
		return nil, busyErr{}
	}
	if err := s.d.fault(); err != nil {
		return nil, err
	}
	return s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (s *faultStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	if err := s.d.fault(); err != nil {
		return nil, err
	}
	return s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
}

type faultTx struct {
	driver.Tx
	d *faultDriver
}

// Commit fails like a busy COMMIT that gave up: nothing is written.
func (t *faultTx) Commit() error {
	if err := t.d.fault(); err != nil {
		t.Tx.Rollback()
		return err
	}
	return t.Tx.Commit()
}

var registerFaults sync.Once
var faults = &faultDriver{inner: &sqlite.Driver{}, rng: rand.New(rand.NewPCG(7, 7))}

func setupFaulty(t *testing.T, busyRate, slowRate float64) (bundle, *atomic.Int64) {
	t.Helper()
	registerFaults.Do(func() { sql.Register("sqlite-faults", faults) })
	faults.mu.Lock()
	faults.busyRate, faults.slowRate, faults.slowFor = 0, 0, time.Millisecond
	faults.mu.Unlock()
	t.Cleanup(func() {
		faults.mu.Lock()
		faults.busyRate, faults.slowRate, faults.gate = 0, 0, nil
		faults.failQuery, faults.failLeft = "", 0
		faults.mu.Unlock()
	})
	var retries atomic.Int64
	b := setup(t, func(o *store.Options) {
		o.OnRetry = func(string, int, error) { retries.Add(1) }
	}, func(o *storesqlite.Options) {
		o.DriverName = "sqlite-faults"
		o.BusyPauseMax = time.Millisecond
	})
	faults.mu.Lock()
	faults.busyRate, faults.slowRate = busyRate, slowRate
	faults.mu.Unlock()
	return b, &retries
}

// TestBusyFaultsNeverLoseATransition drives tickets through claim, fail, claim, complete
// while a third of all statements and commits fail with SQLITE_BUSY and some are slow. A
// call either succeeds (and its transition is there) or returns store.ErrBusy (and the ticket is
// exactly as before); nothing in between.
func TestBusyFaultsNeverLoseATransition(t *testing.T) {
	b, retries := setupFaulty(t, 0.3, 0.05)
	n := 40
	if testing.Short() {
		n = 10
	}
	var escaped int
	// do runs op until it succeeds, checking after each store.ErrBusy that nothing changed.
	do := func(id int64, what string, op func() error) {
		t.Helper()
		for {
			before, _ := b.s.Get(b.ctx, id)
			evBefore, _ := b.s.Events(b.ctx, id)
			err := op()
			if err == nil {
				return
			}
			if !errors.Is(err, store.ErrBusy) {
				t.Fatalf("%s ticket %d: %v; want success or store.ErrBusy", what, id, err)
			}
			escaped++
			after, _ := b.s.Get(b.ctx, id)
			evAfter, _ := b.s.Events(b.ctx, id)
			if fmt.Sprint(before) != fmt.Sprint(after) || len(evAfter) != len(evBefore) {
				t.Fatalf("%s ticket %d returned %v but changed it:\nbefore %+v\nafter  %+v", what, id, err, before, after)
			}
		}
	}
	for i := range n {
		var id int64
		do(0, "enqueue", func() (err error) {
			id, _, err = b.s.Enqueue(b.ctx, store.NewTicket{Source: "f", ExternalID: fmt.Sprint(i)})
			return err
		})
		var l store.Lease
		do(id, "claim", func() (err error) { l, err = b.s.Claim(b.ctx, "w", time.Minute); return err })
		do(id, "heartbeat", func() error { _, err := b.s.Heartbeat(b.ctx, id, l.Token, time.Minute); return err })
		do(id, "fail", func() error {
			_, err := b.s.Fail(b.ctx, id, l.Token, store.Failure{Kind: store.FailShutdown})
			return err
		})
		do(id, "claim again", func() (err error) { l, err = b.s.Claim(b.ctx, "w", time.Minute); return err })
		do(id, "complete", func() error { return b.s.Complete(b.ctx, id, l.Token, store.Result{Branch: "b"}) })
	}
	faults.mu.Lock()
	faults.busyRate, faults.slowRate = 0, 0
	faults.mu.Unlock()
	t.Logf("injected %d busy errors; store retried %d times; %d calls gave up with store.ErrBusy", faults.injected.Load(), retries.Load(), escaped)
	if retries.Load() == 0 {
		t.Error("no retries observed; the fault injection did not reach the store")
	}
	if done, _ := checkExactlyOnce(t, b, true); done != n {
		t.Errorf("done = %d; want %d", done, n)
	}
	for id := int64(1); id <= int64(n); id++ {
		if kinds, want := eventKinds(t, b, id), []string{"enqueued", "claimed", "released", "claimed", "completed"}; !equal(kinds, want) {
			t.Errorf("ticket %d events %v; want %v", id, kinds, want)
		}
	}
}

// TestConcurrentWritersUnderBusyFaults: 4 workers with busy faults on every write path; no
// busy escapes thanks to a generous retry budget, and every ticket ends done exactly once.
func TestConcurrentWritersUnderBusyFaults(t *testing.T) {
	b, retries := setupFaulty(t, 0.1, 0.02)
	b.e.SetBusyRetries(100)
	n := 200
	if testing.Short() {
		n = 50
	}
	for i := range n {
		if _, _, err := b.s.Enqueue(b.ctx, store.NewTicket{Source: "f", ExternalID: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				l, err := b.s.Claim(b.ctx, fmt.Sprint("w", w), time.Minute)
				if errors.Is(err, store.ErrNoTicket) {
					return
				}
				if err == nil {
					err = b.s.Complete(b.ctx, l.Ticket.ID, l.Token, store.Result{})
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("worker: %v", err)
	}
	t.Logf("store retried %d times", retries.Load())
	if done, _ := checkExactlyOnce(t, b, true); done != n {
		t.Errorf("done = %d; want %d", done, n)
	}
}

// TestStalledWriterGivesClearError: while the writer is stuck on a slow write, a caller
// whose context ends gets that context's error, not a hang and not a half transition; once
// the disk recovers its retry succeeds.
func TestStalledWriterGivesClearError(t *testing.T) {
	b, _ := setupFaulty(t, 0, 0)
	id := b.enqueue(t, "1")
	other := b.enqueue(t, "2")
	l := b.claim(t, "w1")
	gate, entered := make(chan struct{}), make(chan struct{}, 1)
	faults.mu.Lock()
	faults.gate, faults.entered = gate, entered
	faults.mu.Unlock()
	stalled := make(chan error, 1)
	go func() { _, err := b.s.Claim(b.ctx, "w2", time.Minute); stalled <- err }()
	<-entered // the writer is now held inside the other worker's claim

	ctx, cancel := context.WithCancel(b.ctx)
	done := make(chan error, 1)
	go func() { done <- b.s.Complete(ctx, id, l.Token, store.Result{}) }()
	cancel()
	err := <-done
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Complete with the writer stalled and ctx cancelled: %v; want context.Canceled", err)
	}
	close(gate)
	if err := <-stalled; err != nil {
		t.Fatalf("stalled claim: %v", err)
	}
	got, _ := b.s.Get(b.ctx, id)
	if got.State != store.StateRunning {
		t.Fatalf("ticket %d state %s after a refused Complete; want still running", id, got.State)
	}
	if err := b.s.Complete(b.ctx, id, l.Token, store.Result{}); err != nil {
		t.Fatalf("retried Complete: %v", err)
	}
	if g, _ := b.s.Get(b.ctx, other); g.State != store.StateRunning || g.LeaseOwner != "w2" {
		t.Errorf("stalled claim result: %+v", g)
	}
}

func TestBusyExhaustedIsClear(t *testing.T) {
	b, _ := setupFaulty(t, 1, 0)
	b.e.SetBusyRetries(2)
	_, _, err := b.s.Enqueue(b.ctx, store.NewTicket{Source: "x", ExternalID: "1"})
	if !errors.Is(err, store.ErrBusy) || !strings.Contains(err.Error(), "enqueue x/1") {
		t.Fatalf("Enqueue against an always-busy database: %v; want store.ErrBusy naming the call", err)
	}
	faults.mu.Lock()
	faults.busyRate = 0
	faults.mu.Unlock()
	var n int
	b.e.DB().QueryRow(`SELECT count(*) FROM tickets`).Scan(&n)
	if n != 0 {
		t.Errorf("%d tickets after a refused enqueue; want 0", n)
	}
}

// TestFailedRollbackNeverLeaksIntoTheNextWrite: a write that changed a row and then failed
// is rolled back; should ROLLBACK itself fail through every try, the next write group rolls
// back first, so the failed write's change is never committed with someone else's.
func TestFailedRollbackNeverLeaksIntoTheNextWrite(t *testing.T) {
	for _, fails := range []int{0, 2, 3, 5} {
		t.Run(fmt.Sprintf("rollback fails %d times", fails), func(t *testing.T) {
			b, _ := setupFaulty(t, 0, 0)
			id := b.enqueue(t, "1")
			faults.mu.Lock()
			faults.failQuery, faults.failLeft = "ROLLBACK", fails
			faults.mu.Unlock()
			errBoom := errors.New("boom")
			q := b.e.SQL()
			err := b.e.Write(b.ctx, "doomed", func(ctx context.Context, tx storedriver.Tx) error {
				if _, err := tx.Exec(ctx, q.ReserveEvent, id); err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, q.AppendEvent, id, 1, "note", "queued", "queued", "must never be committed", 0, "doomed"); err != nil {
					return err
				}
				return errBoom
			})
			if !errors.Is(err, errBoom) {
				t.Fatalf("doomed write: %v; want boom", err)
			}
			// The next writes must succeed (busy retries absorb the failing ROLLBACKs) and
			// must not carry the doomed event along.
			b.enqueue(t, "2")
			l := b.claim(t, "w")
			if err := b.s.Complete(b.ctx, l.Ticket.ID, l.Token, store.Result{}); err != nil {
				t.Fatal(err)
			}
			var n int
			if err := b.e.DB().QueryRow(`SELECT count(*) FROM events WHERE actor = 'doomed'`).Scan(&n); err != nil || n != 0 {
				t.Errorf("doomed events committed: %d, %v; want 0", n, err)
			}
			faults.mu.Lock()
			left := faults.failLeft
			faults.mu.Unlock()
			t.Logf("rollback failures left unused: %d", left)
			if left != 0 {
				t.Errorf("%d aimed ROLLBACK failures never happened: the test did not reach the path", left)
			}
		})
	}
}
