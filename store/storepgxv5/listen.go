package storepgxv5

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// channel is the NOTIFY channel a notice that a ticket became claimable goes out on.
func (e *Engine) channel() string { return "ticketd:" + e.schema }

// NoticesReachOtherProcesses is true: every node LISTENs.
func (e *Engine) NoticesReachOtherProcesses() bool { return true }

// notifyEvery spaces the notices one node sends to the others. A NOTIFY is a transaction
// of its own (PostgreSQL gives it an xid and a commit record), sent beside the queue's
// writes: one per transition, each waiting for its WAL flush, cost a one-worker cycle about
// a quarter of its speed. So a notice's commit does not wait for the disk, and a node's
// notices coalesce: idle workers on other nodes learn of a change at most this much later;
// this node's own workers are woken at once.
const notifyEvery = 200 * time.Millisecond

// Notify wakes this process's waiters now and queues one notice for the other nodes; a
// notice already queued covers this one.
func (e *Engine) Notify() {
	e.woken()
	select {
	case e.notify <- struct{}{}:
	default:
	}
}

// notifier sends the queued notices, each in a statement of its own after the commit that
// caused it: a NOTIFY inside the write would serialize every committing transaction on
// PostgreSQL's notification queue lock.
func (e *Engine) notifier(ctx context.Context) {
	defer e.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.notify:
		}
		// Best effort: a notice lost here is made good by the waiters' poll. Its commit need
		// not wait for the WAL to reach the disk (synchronous_commit off for this one
		// transaction): nothing is lost if the server crashes before it does.
		e.pool.Exec(ctx, `SELECT set_config('synchronous_commit', 'off', true), pg_notify($1, '')`, e.channel())
		// At most one notice per notifyEvery: a busy queue's transitions coalesce, and
		// its waiters learn of them that much later at most.
		t := time.NewTimer(notifyEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// listenConn connects a connection of its own and LISTENs on the channel.
func (e *Engine) listenConn(ctx context.Context, cfg *pgx.ConnConfig) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{e.channel()}.Sanitize()); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	return conn, nil
}

// listen passes every notice on conn on to OnNotify. When the connection drops it
// reconnects every PollEvery and, once listening again, passes one notice on for those it
// may have missed meanwhile.
func (e *Engine) listen(ctx context.Context, cfg *pgx.ConnConfig, conn *pgx.Conn) {
	defer e.wg.Done()
	for {
		var err error
		for err == nil {
			if _, err = conn.WaitForNotification(ctx); err == nil {
				e.woken()
			}
		}
		conn.Close(context.Background())
		for {
			t := time.NewTimer(e.opts.PollEvery)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			if conn, err = e.listenConn(ctx, cfg); err == nil {
				e.woken()
				break
			}
		}
	}
}

func (e *Engine) woken() {
	if e.opts.OnNotify != nil {
		e.opts.OnNotify()
	}
}
