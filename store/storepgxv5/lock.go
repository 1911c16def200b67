package storepgxv5

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Lock takes the session advisory lock named "ticketd:<schema>:"+name on a connection it holds
// until unlock; PostgreSQL releases it when that session ends (the node died, the network
// went). A wait whose session the server ended (a restart, a failover) never held the lock:
// it waits again on a new session, for up to WriteTimeout of the server not answering.
func (e *Engine) Lock(ctx context.Context, name string) (func(), error) {
	key := "ticketd:" + e.schema + ":" + name
	pause := 50 * time.Millisecond
	var lostSince time.Time
	for {
		conn, err := e.lockOnce(ctx, key)
		if err == nil {
			return e.unlocker(conn, key), nil
		}
		var lost *connLost
		if ctx.Err() != nil || !errors.As(err, &lost) {
			return nil, fmt.Errorf("lock %s: %w", name, err)
		}
		if lostSince.IsZero() {
			lostSince = time.Now()
		} else if time.Since(lostSince) > e.opts.WriteTimeout {
			return nil, fmt.Errorf("lock %s: the database at %s did not answer for %s: %w", name, e.location, e.opts.WriteTimeout, lost.err)
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("lock %s: %w (while waiting for the database: %v)", name, ctx.Err(), err)
		case <-t.C:
		}
		pause = min(2*pause, time.Second)
	}
}

// lockOnce waits for the lock on one session; an error that ended the session (or found no
// session to take) is a *connLost.
func (e *Engine) lockOnce(ctx context.Context, key string) (*pgxpool.Conn, error) {
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		return nil, &connLost{err}
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtext($1))`, key); err != nil {
		// The wait may have been cut short mid-statement: this session must not be reused.
		closed := conn.Conn().IsClosed()
		conn.Conn().Close(context.Background())
		conn.Release()
		if closed && ctx.Err() == nil {
			return nil, &connLost{err}
		}
		return nil, err
	}
	return conn, nil
}

func (e *Engine) unlocker(conn *pgxpool.Conn, key string) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			var ok bool
			err := conn.QueryRow(context.Background(), `SELECT pg_advisory_unlock(hashtext($1))`, key).Scan(&ok)
			if err != nil || !ok {
				conn.Conn().Close(context.Background()) // ending the session releases the lock
			}
			conn.Release()
		})
	}
}
