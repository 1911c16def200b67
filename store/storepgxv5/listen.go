package storepgxv5

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// channel is the NOTIFY channel a notice that a ticket became claimable goes out on.
const channel = "ticketd_claimable"

// Notify queues one notice for the notifier; a notice already queued covers this one.
func (e *Engine) Notify() {
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
		// Best effort: a notice lost here is made good by the waiters' poll.
		e.pool.Exec(ctx, `SELECT pg_notify($1, '')`, channel)
	}
}

// listen holds a connection of its own on LISTEN and passes every notice on to OnNotify.
// When the connection drops it reconnects after PollEvery and passes one notice on, for
// those it may have missed meanwhile.
func (e *Engine) listen(ctx context.Context, cfg *pgx.ConnConfig) {
	defer e.wg.Done()
	for ctx.Err() == nil {
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err == nil {
			_, err = conn.Exec(ctx, "LISTEN "+channel)
		}
		if err == nil {
			e.woken()
			for err == nil {
				_, err = conn.WaitForNotification(ctx)
				if err == nil {
					e.woken()
				}
			}
		}
		if conn != nil {
			conn.Close(context.Background())
		}
		t := time.NewTimer(e.opts.PollEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

func (e *Engine) woken() {
	if e.opts.OnNotify != nil {
		e.opts.OnNotify()
	}
}
