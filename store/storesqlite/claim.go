package storesqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/ticketd/ticketd/store/storedriver"
)

// refreshEvery bounds how often (store time, ms) Claim rereads the lease horizon: leases
// taken by other processes on the same file enter it then.
const refreshEvery = 1000

// claimPick finds the ticket Claim leases: the queued branch and the rescue branch each
// walk tickets_open in claim order (priority DESC, id: among the due, the oldest enqueued
// first, so a retry that waited out its backoff is not sent behind the queue) and yield at
// most one candidate, reading the state in the row. Both repeat the index's WHERE term
// verbatim (SQLite uses a partial index only on a literal match). skipPaused adds the paused filter (a row lookup per candidate), avoid
// the filter of the tickets a claim passes over (storedriver.ClaimParams.Avoid). Without
// rescue, only the queued branch runs: Claim uses that while no lease can have expired
// (see leaseHorizon), which spares every claim the second walk and the merge. It binds ?1
// now, ?2 MaxRescues, ?3 the paused set and ?4 the tickets to pass over.
func claimPick(skipPaused, avoid, rescue bool) string {
	filter := ""
	if skipPaused {
		filter = ` AND repo NOT IN (SELECT value FROM json_each(?3))`
	}
	if avoid {
		filter += ` AND id NOT IN (SELECT value FROM json_each(?4))`
	}
	queued := `SELECT id, priority FROM tickets
				WHERE finished_at IS NULL AND state = 'queued' AND run_after <= ?1` + filter + `
				ORDER BY priority DESC, id LIMIT 1`
	if !rescue {
		return `SELECT id FROM (` + queued + `)`
	}
	return `SELECT id FROM (
			SELECT * FROM (` + queued + `)
			UNION ALL
			SELECT * FROM (SELECT id, priority FROM tickets
				WHERE finished_at IS NULL AND state = 'running' AND lease_expires_at <= ?1
					AND rescues + 1 < ?2 AND cancel_requested = 0` + filter + `
				ORDER BY priority DESC, id LIMIT 1)
		) ORDER BY priority DESC, id LIMIT 1`
}

// claimPicks[shape][rescue] are claimPick's shapes: 0 no filter, 1 paused, 2 paused and
// avoid (an avoid shape binds ?3 too, "[]" when nothing is paused).
var claimPicks = [3][2]string{
	{claimPick(false, false, false), claimPick(false, false, true)},
	{claimPick(true, false, false), claimPick(true, false, true)},
	{claimPick(true, true, false), claimPick(true, true, true)},
}

// claimLease leases the picked ticket ?4 to worker ?1 on node ?5 until ?2 (now ?3). A rescue
// does not charge the attempt its expired lease cut short: attempts stay, rescues grows.
// Claim reads the row back with a SELECT instead of RETURNING, which would buffer it in a
// temporary b-tree opened and freed on every execution (an UPDATE ... RETURNING measured 3.5
// times the instructions of the UPDATE alone).
const claimLease = `UPDATE tickets SET state = 'running', attempts = attempts + (state = 'queued'),
		rescues = rescues + (state = 'running'),
		fence_token = fence_token + 1, lease_owner = ?1, lease_expires_at = ?2, updated_at = ?3,
		rescued_from = CASE WHEN state = 'running' THEN lease_owner END,
		rescued_node = CASE WHEN state = 'running' THEN lease_node ELSE '' END, lease_node = ?5, ` + reserveEvent + `
	WHERE id = ?4`

// leaseHorizonQuery is the earliest lease expiry among running tickets (math.MaxInt64 when
// none), through tickets_open: Claim skips the rescue branch before it.
const leaseHorizonQuery = `SELECT coalesce(min(lease_expires_at), 9223372036854775807) FROM tickets
	WHERE finished_at IS NULL AND state = 'running'`

// Claim picks and leases the next ticket (storedriver.ClaimParams) and reads its row back.
func (tx *wtx) Claim(ctx context.Context, p storedriver.ClaimParams) (storedriver.Row, error) {
	e := tx.e
	if last := e.lastRefresh.Load(); p.Now-last >= refreshEvery || p.Now < last {
		if err := e.refreshLeaseHorizon(ctx, tx); err != nil {
			return nil, err
		}
		e.lastRefresh.Store(p.Now)
	}
	args := []any{p.Now, p.MaxRescues}
	skip := 0
	switch {
	case p.Avoid != "":
		skip, args = 2, append(args, cmp.Or(p.Paused, "[]"), p.Avoid)
	case p.Paused != "":
		skip, args = 1, append(args, p.Paused)
	}
	// Before the horizon no lease this engine knows of has expired: the queued branch
	// alone gives the same answer. Should it find nothing, the full statement runs, so
	// a lease the horizon missed (another process's, until the next refresh) is only
	// rescued after the ready queued tickets, never left behind.
	rescue := p.Now >= e.leaseHorizon.Load()
	id, err := tx.pick(ctx, skip, rescue, args)
	if errors.Is(err, sql.ErrNoRows) && !rescue {
		id, err = tx.pick(ctx, skip, true, args)
	}
	if err != nil {
		return &wrow{err: err}, nil // sql.ErrNoRows at Scan: nothing to claim
	}
	if res, err := e.exec(ctx, tx, claimLease, p.Worker, p.Expires, p.Now, id, p.Node); err != nil {
		return nil, err
	} else if n, err := res.RowsAffected(); err != nil || n != 1 {
		return nil, fmt.Errorf("lease picked ticket %d: %d rows changed (%v)", id, n, err)
	}
	e.lowerLeaseHorizon(p.Expires)
	if err := tx.claimEvent(ctx, id, p); err != nil {
		return nil, err
	}
	return tx.QueryRow(ctx, statements.GetTicket, id), nil
}

// claimEventQuery writes a fresh claim's event under the lease's reservation (?1 id, ?2
// at, ?3 kind, ?4 from, ?5 to, ?6 reason), with the row's new attempts and owner; nothing
// for a rescue, whose events the store appends.
const claimEventQuery = `INSERT INTO events (id, ticket_id, at, kind, from_state, to_state, reason, attempt, actor, prev_id)
	SELECT last_event_id, id, ?2, ?3, ?4, ?5, ?6, attempts, lease_owner, prev_event_id FROM tickets
	WHERE id = ?1 AND last_event_id IS NOT NULL AND coalesce(rescued_from, '') = ''`

// claimEvent writes the claim's event unless the claim was a rescue.
func (tx *wtx) claimEvent(ctx context.Context, id int64, p storedriver.ClaimParams) error {
	ev := p.Event
	res, err := tx.e.exec(ctx, tx, claimEventQuery, id, p.Now, ev.Kind, ev.From, ev.To, ev.Reason)
	if err != nil {
		return fmt.Errorf("append %s event to ticket %d: %w", ev.Kind, id, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("append %s event to ticket %d: %w", ev.Kind, id, err)
	} else if n == 1 {
		return nil
	}
	var rescue bool
	if err := tx.QueryRow(ctx, `SELECT coalesce(rescued_from, '') != '' FROM tickets WHERE id = ?`, id).Scan(&rescue); err != nil {
		return fmt.Errorf("append %s event to ticket %d: %w", ev.Kind, id, err)
	}
	if !rescue {
		return fmt.Errorf("append %s event to ticket %d: the event before it was reserved but never written", ev.Kind, id)
	}
	return nil
}

// pick runs one of the claimPick statements and returns the ticket's id (sql.ErrNoRows
// when none is ready).
func (tx *wtx) pick(ctx context.Context, skip int, rescue bool, args []any) (int64, error) {
	var id int64
	err := tx.QueryRow(ctx, claimPicks[skip][b2i(rescue)], args...).Scan(&id)
	return id, err
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// refreshLeaseHorizon reads the earliest lease expiry of the running tickets.
func (e *Engine) refreshLeaseHorizon(ctx context.Context, tx *wtx) error {
	var h int64
	if err := tx.QueryRow(ctx, leaseHorizonQuery).Scan(&h); err != nil {
		return fmt.Errorf("lease horizon: %w", err)
	}
	e.leaseHorizon.Store(h)
	return nil
}

var _ storedriver.LeaseHorizon = (*wtx)(nil)

// LeasesMayHaveExpired rereads the lease horizon in the write transaction
// (storedriver.LeaseHorizon); the claim that follows uses it without reading it again.
func (tx *wtx) LeasesMayHaveExpired(ctx context.Context, now int64) (bool, error) {
	if err := tx.e.refreshLeaseHorizon(ctx, tx); err != nil {
		return false, err
	}
	tx.e.lastRefresh.Store(now)
	return now >= tx.e.leaseHorizon.Load(), nil
}

// lowerLeaseHorizon takes in a lease this engine just granted.
func (e *Engine) lowerLeaseHorizon(exp int64) {
	for {
		h := e.leaseHorizon.Load()
		if exp >= h || e.leaseHorizon.CompareAndSwap(h, exp) {
			return
		}
	}
}
