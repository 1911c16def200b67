package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ticketd/ticketd/store"
)

// ErrKeepsCrashing refuses a night on a node whose last nights all died: the host (memory,
// a kernel, a supervisor that kills it) is the trouble, and more nights would only rescue
// the same tickets again and again.
var ErrKeepsCrashing = errors.New("ticketd keeps crashing")

// crashStreak is how many nights in a row must die before the next start refuses one.
const crashStreak = 3

// DefaultStoreCheckEvery is how often a night checks that its database is still the one it
// opened, and beats its lease on the night.
const DefaultStoreCheckEvery = 2 * time.Second

// SettleDeadNights closes the parts of nights whose process died, failed with
// store.ErrProcessEnded and with the cost their calls had, and blames a crash on a ticket
// that was alone in flight (store.SettleDead). ticketd calls it at start: exclusive when it
// holds the only lock on a SQLite file (every unfinished night is dead), else for this
// node's own nights and the nodes whose lease on their night expired.
func (d *Daemon) SettleDeadNights(ctx context.Context, exclusive bool) ([]store.DeadNight, error) {
	d.recordUnrecorded(ctx) // nights that ended while their database took no writes did not die
	scope := store.DeadOwn
	if exclusive {
		scope = store.DeadAll
	}
	dead, err := d.Store.SettleDead(ctx, scope)
	if err != nil {
		return nil, err
	}
	if len(dead) > 0 {
		d.logger().Warn("closed the nights of a process that died: failed, "+store.ErrProcessEnded.Error(),
			"nights", store.DescribeDead(dead))
	}
	return dead, nil
}

// keepsCrashing says why this node must not run a night (nil when it may): its last
// crashStreak parts in nights all died. The refused night itself ends failed, not died, so
// the start after it tries again.
func (d *Daemon) keepsCrashing(ctx context.Context) error {
	deaths, err := d.Store.RecentDeaths(ctx, d.Store.Node(), crashStreak)
	if err != nil || len(deaths) < crashStreak {
		return nil
	}
	for _, died := range deaths {
		if !died {
			return nil
		}
	}
	return fmt.Errorf("%w: the last %d nights on %s ended without closing (killed: out of memory, a reboot, a supervisor?); this night claims nothing, and no ticket is charged for the crashes; see the system's log (journalctl -u ticketd, dmesg) — the next start runs again",
		ErrKeepsCrashing, crashStreak, d.Store.Node())
}

// guardNight runs beside a night until the returned stop is called: every StoreCheckEvery
// it checks the database is still the one the night started with (a deleted or replaced
// file, another database at the URL: claims stop and work in flight stops, the night fails
// loudly), extends this node's lease on the night, and on a shared database closes the
// parts of nodes whose lease expired.
func (d *Daemon) guardNight(ctx context.Context, log *slog.Logger, runID int64, shared bool, stop func(error)) func() {
	every := d.StoreCheckEvery
	if every <= 0 {
		every = DefaultStoreCheckEvery
	}
	lease := max(d.Config.Night.Lease, 3*every)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			if err := d.Store.Verify(ctx); errors.Is(err, store.ErrDatabaseGone) {
				log.Error("the ticket database was deleted or replaced during the night: no more claims, work in flight stops and is released, the night fails",
					"db", d.Store.Path(), "err", err)
				stop(fmt.Errorf("%w: %w", ErrMachineFault, err))
				return
			}
			if err := d.Store.BeatRun(ctx, runID, lease); err != nil && ctx.Err() == nil {
				log.Debug("beat the night's lease", "err", err)
			}
			if shared {
				if dead, err := d.Store.SettleDead(ctx, store.DeadExpired); err == nil && len(dead) > 0 {
					log.Warn("closed another node's part of the night: its lease expired", "nights", store.DescribeDead(dead))
				}
			}
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// beforeJoin runs before a node joins or opens a night, under the intake lock: on a shared
// database it closes the parts of nodes whose lease on their night expired (the night they
// are in must not be joined as if they lived), then says why this node must not run a night
// (nil when it may).
func (d *Daemon) beforeJoin(ctx context.Context, log *slog.Logger) error {
	d.recordUnrecorded(ctx) // under `ticketd run`, the last night's end its database did not take
	if d.Config.Store.Shared() {
		if dead, err := d.Store.SettleDead(ctx, store.DeadExpired); err != nil {
			log.Warn("close the nights of dead nodes", "err", err)
		} else if len(dead) > 0 {
			log.Warn("closed the nights of nodes whose lease expired", "nights", store.DescribeDead(dead))
		}
	}
	err := d.keepsCrashing(ctx)
	if err != nil {
		log.Error("ticketd keeps crashing: this night claims nothing", "node", d.Store.Node(), "err", err)
	}
	return err
}
