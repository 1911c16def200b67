package storesqlite

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
)

// checkpointEvery is how many commits the writer makes between kicks of the background
// checkpointer: about 400 WAL frames of a queue cycle's 3.3 per commit, so the writer's
// own auto-checkpoint (the backstop at walCheckpointPages) finds little left to sync.
const checkpointEvery = 128

// checkpointer copies the WAL into the database file from a connection of its own, off the
// writer's path. With synchronous=NORMAL, a checkpoint first fsyncs the WAL, whose cost grows
// with every byte written since the last one: run inside the commit that crossed
// wal_autocheckpoint, it held that caller (and every writer behind it) for about 3.7 ms per
// 2048 frames, 11% of a one-worker queue cycle. A PASSIVE checkpoint never waits for a lock
// and never blocks the writer, so it can run beside it; the WAL still restarts only after a
// complete checkpoint, which the writer's auto-checkpoint makes, now with only the frames
// since the last background pass to sync.
type checkpointer struct {
	db     *sql.DB
	mu     sync.Mutex    // held by each pass, and by the writer's RESTART (Store.boundWAL)
	kick   chan struct{} // buffered(1): a kick while a pass runs queues one more pass
	done   chan struct{}
	passes atomic.Int64  // completed passes, for tests
	passed chan struct{} // buffered(1): signalled after each pass, for tests
	ran    chan struct{} // buffered(1): signalled after each pass, failed ones too, for tests
	once   sync.Once
	err    error
}

func newCheckpointer(db *sql.DB) *checkpointer {
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	c := &checkpointer{db: db, kick: make(chan struct{}, 1), done: make(chan struct{}), passed: make(chan struct{}, 1), ran: make(chan struct{}, 1)}
	go c.loop()
	return c
}

func (c *checkpointer) loop() {
	defer close(c.done)
	for range c.kick {
		var busy, frames, copied int
		// Best effort: an error (the writer's backstop checkpoint holding the checkpoint
		// lock, a full disk) leaves the work to the next pass or to the backstop.
		c.mu.Lock()
		err := c.db.QueryRowContext(context.Background(), `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &copied)
		c.mu.Unlock()
		if err == nil {
			c.passes.Add(1)
			select {
			case c.passed <- struct{}{}:
			default:
			}
		}
		select {
		case c.ran <- struct{}{}:
		default:
		}
	}
}

// poke asks for a pass without ever waiting.
func (c *checkpointer) poke() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// close stops the loop after the pass in progress and closes the connection; a second
// call (Store.Close twice) returns the first one's result.
func (c *checkpointer) close() error {
	c.once.Do(func() {
		close(c.kick)
		<-c.done
		c.err = c.db.Close()
	})
	return c.err
}
