package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ticketd/ticketd/store/storedriver"
)

// maxClaimBatch bounds one ClaimBatch: a node has at most 64 workers (config's limit).
const maxClaimBatch = 64

// ClaimBatch leases up to len(workers) ready tickets, one to each worker in order, in ONE
// write transaction: a node's idle workers share one fetch and one commit, as River's
// producer fetches for its free workers. Each lease is what Claim would have given that
// worker at that point (same order, pauses, rescues, events, a fresh fence token each),
// with one difference: only the batch's first ticket may overlap a running ticket's
// predicted files (Claim's fallback when nothing else is ready), so two overlapping
// tickets are never handed out together; the batch stops short instead. The batch is all
// or nothing: a failure midway leaves every ticket as it was, and a ctx cancelled midway
// does not interrupt it (as every write: the leases are returned). It returns the
// leases in worker order (fewer than asked when fewer are ready), ErrNoTicket for none.
// Every lease returned must be worked or ended by its caller like Claim's.
func (s *Store) ClaimBatch(ctx context.Context, workers []string, leaseFor time.Duration) ([]Lease, error) {
	if err := checkClaimBatch(workers, leaseFor); err != nil {
		return nil, err
	}
	var out []Lease
	err := s.write(ctx, "claim batch", func(ctx context.Context, tx storedriver.Tx) (err error) {
		out, err = s.claimBatchIn(ctx, tx, workers, leaseFor)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("claim batch for %v: %w", workers, err)
	}
	if len(out) == 0 {
		return nil, ErrNoTicket
	}
	return out, nil
}

// checkClaimBatch refuses a batch no transaction should start with.
func checkClaimBatch(workers []string, leaseFor time.Duration) error {
	if leaseFor <= 0 || len(workers) == 0 || len(workers) > maxClaimBatch {
		return fmt.Errorf("claim batch for %v: lease duration %v and %d workers: want a duration > 0 and 1..%d workers",
			workers, leaseFor, len(workers), maxClaimBatch)
	}
	return nil
}

// claimBatchIn is ClaimBatch's work in the write transaction tx: settling when due, then
// the leases, none when nothing is ready (what settling did is still committed).
func (s *Store) claimBatchIn(ctx context.Context, tx storedriver.Tx, workers []string, leaseFor time.Duration) ([]Lease, error) {
	base, err := s.claimBase(ctx, tx, workers[0], leaseFor)
	if err != nil {
		return nil, err
	}
	out, err := s.claimBatchTx(ctx, tx, base, workers)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, s.settleExpired(ctx, tx, base.Now, workers[0])
	}
	return out, nil
}

// claimBatchTx is ClaimBatch's claims inside tx: PostgreSQL leases the fresh tickets in one
// statement; what it leaves (a ticket with predicted files next, rescues, nothing) the
// loop takes as Claim would.
func (s *Store) claimBatchTx(ctx context.Context, tx storedriver.Tx, base storedriver.ClaimParams, workers []string) ([]Lease, error) {
	var out []Lease
	batched := false
	if bc, ok := tx.(storedriver.BatchClaimer); ok && s.oneStatementClaims() && len(workers) > 1 {
		ls, err := claimFresh(ctx, bc, base, workers)
		if err != nil {
			return nil, err
		}
		out, batched = append(out, ls...), true
	}
	for i := range out {
		if err := s.batchHook(i); err != nil {
			return nil, err
		}
	}
	turn := false
	for i := len(out); i < len(workers); i++ {
		p := base
		p.Worker = workers[i]
		l, err := s.claimNext(ctx, tx, p, &turn, !batched, len(out) == 0, len(workers) == 1)
		if errors.Is(err, sql.ErrNoRows) {
			break
		}
		if err != nil {
			return nil, err
		}
		out = append(out, l)
		if err := s.batchHook(i); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// oneStatementClaims says whether a batch's fresh tickets may be leased in one statement,
// which knows the overlap rule's predicted files but nothing of PassOver (rare: an
// endpoint-side fault being told from a ticket's own); the loop claims then.
func (s *Store) oneStatementClaims() bool {
	return s.q.Overlap.Serialize != "" && s.passOver.Load() == nil
}

// claimNext is a batch's next claim in tx: first without the overlap turn when fresh says
// the next ticket may have no predicted files, then in the turn (taken once, *turn), with
// Claim's fallback to an overlapping ticket only for the batch's first lease. alone: the
// batch has one worker, whose claim may commit with its statement.
func (s *Store) claimNext(ctx context.Context, tx storedriver.Tx, p storedriver.ClaimParams, turn *bool, fresh, first, alone bool) (Lease, error) {
	if !*turn && fresh {
		l, err := s.claimUnpredicted(ctx, tx, p, alone)
		if !errors.Is(err, sql.ErrNoRows) {
			return l, err
		}
	}
	if !*turn {
		if err := s.claimTurn(ctx, tx); err != nil {
			return Lease{}, err
		}
		*turn = true
	}
	return s.claimOne(ctx, tx, p, first, false)
}

// batchHook runs the tests' claimBatchHook after the batch's i-th lease.
func (s *Store) batchHook(i int) error {
	if s.claimBatchHook == nil {
		return nil
	}
	return s.claimBatchHook(i)
}

// claimFresh leases fresh tickets to workers in one statement (storedriver.BatchClaimer).
func claimFresh(ctx context.Context, bc storedriver.BatchClaimer, p storedriver.ClaimParams, workers []string) ([]Lease, error) {
	rows, err := bc.ClaimBatch(ctx, p, workers)
	if err != nil {
		return nil, fmt.Errorf("claim for %d workers: %w", len(workers), err)
	}
	var out []Lease
	for rows.Next() {
		t, err := scanTicket(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("read claimed ticket: %w", err)
		}
		out = append(out, Lease{Ticket: t, Token: t.FenceToken, Attempt: t.Attempts, Worker: t.LeaseOwner, ExpiresAt: t.LeaseExpiresAt})
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("read claimed tickets: %w", err)
	}
	return out, nil
}
