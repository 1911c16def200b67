package daemon

import (
	"context"
	"log/slog"

	"github.com/ticketd/ticketd/daemon/dupes"
	"github.com/ticketd/ticketd/store"
)

// maxOpenForDuplicates bounds the open tickets compared at intake (a night's queue is far
// smaller; past it the newest are left unlinked, never dropped).
const maxOpenForDuplicates = 5000

// linkDuplicates links each queued, never attempted ticket that reports the same failure as
// an earlier open ticket of its repository as that ticket's duplicate (docs/night.md), and
// settles the duplicates of tickets that ended since. Failures are logged: an unlinked
// duplicate is worked on its own, which costs money but loses nothing.
func (d *Daemon) linkDuplicates(ctx context.Context) {
	log := d.logger()
	cfg := d.Config.Duplicates
	if !cfg.Enabled {
		return
	}
	open, err := d.Store.List(ctx, store.Filter{States: []store.State{store.StateQueued, store.StateRunning,
		store.StateParked, store.StateNeedsInfo, store.StateNeedsBudget}, Limit: maxOpenForDuplicates})
	if err != nil {
		log.Warn("duplicates: list open tickets", "err", err)
		return
	}
	var candidates, all []dupes.Ticket
	for _, t := range open {
		dt := dupes.Ticket{ID: t.ID, Repo: t.Repo, Title: t.Title, Body: t.Body}
		all = append(all, dt)
		if t.State == store.StateQueued && t.Attempts == 0 && t.AttemptsBefore == 0 {
			candidates = append(candidates, dt)
		}
	}
	for _, l := range dupes.Find(candidates, all, cfg.Similarity) {
		linked, err := d.Store.LinkDuplicate(ctx, l.ID, l.Of, l.Reason)
		if err != nil {
			log.Warn("duplicates: link", "ticket", l.ID, "of", l.Of, "err", err)
			continue
		}
		if linked {
			log.Info("duplicate linked", "ticket", l.ID, "of", l.Of, "reason", l.Reason)
		}
	}
	d.settleWaitingDuplicates(ctx, log)
}

// settleWaitingDuplicates settles the duplicates whose ticket ended while no hook saw it
// (escalated or cancelled, or done on a node that stopped before settling).
func (d *Daemon) settleWaitingDuplicates(ctx context.Context, log *slog.Logger) {
	waiting, err := d.Store.List(ctx, store.Filter{States: []store.State{store.StateDuplicate}, Limit: maxOpenForDuplicates})
	if err != nil {
		log.Warn("duplicates: list waiting duplicates", "err", err)
		return
	}
	seen := map[int64]bool{}
	for _, t := range waiting {
		l, err := d.Store.DuplicateOf(ctx, t.ID)
		if err != nil || seen[l.Of] {
			continue
		}
		seen[l.Of] = true
		d.settleDuplicates(ctx, log, l.Of)
	}
}

// settleDuplicates closes ticket id's duplicates with its fix when it is done, or puts them
// back in the queue when it ended otherwise (store.SettleDuplicates).
func (d *Daemon) settleDuplicates(ctx context.Context, log *slog.Logger, id int64) {
	s, err := d.Store.SettleDuplicates(ctx, id)
	if err != nil {
		log.Error("duplicates: settle; they wait until the next night's intake", "ticket", id, "err", err)
		return
	}
	for _, t := range s.Closed {
		log.Info("duplicate closed with its fix", "ticket", t.ID, "of", id, "branch", t.Branch)
	}
	for _, dup := range s.Requeued {
		log.Info("duplicate requeued: the ticket it duplicated ended without a fix", "ticket", dup, "of", id)
	}
}
