package storepgxv5

import (
	"context"
	"fmt"
	"sync"
)

// Lock takes the session advisory lock named "ticketd:<schema>:"+name on a connection it holds
// until unlock; PostgreSQL releases it when that session ends (the node died, the network
// went).
func (e *Engine) Lock(ctx context.Context, name string) (func(), error) {
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	key := "ticketd:" + e.schema + ":" + name
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtext($1))`, key); err != nil {
		// The wait may have been cut short mid-statement: this session must not be reused.
		conn.Conn().Close(context.Background())
		conn.Release()
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
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
	}, nil
}
