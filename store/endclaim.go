package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ticketd/ticketd/store/storedriver"
)

// endClaim is one worker's part of endAndClaim: its plain complete (nil: it only asks for
// a ticket), and what came of both.
type endClaim struct {
	worker string
	end    *Ending // EndComplete without artifacts, or nil

	state State // the ended ticket's, when the ending was written
	lease Lease
	err   error // the ending's own (its lease gone), ErrNoTicket, or the transaction's
}

// ridesOnFetch says whether e may be written in a fetch's transaction: a plain complete,
// whose only failure of its own is a lost lease, which fails no one else's write.
func ridesOnFetch(e Ending) bool {
	return e.Kind == EndComplete && len(e.Artifacts) == 0
}

// endAndClaim writes the parts' completes and leases the next ticket to every worker whose
// complete held or who only asked, in ONE write transaction: a node's workers that end and
// ask together commit once. A lost lease fails only its own part (and claims nothing for
// it); a failed transaction fails every part, with nothing written.
func (s *Store) endAndClaim(ctx context.Context, parts []*endClaim, leaseFor time.Duration) {
	workers := make([]string, len(parts))
	for i, p := range parts {
		workers[i] = p.worker
	}
	if err := checkClaimBatch(workers, leaseFor); err != nil {
		for _, p := range parts {
			p.err = err
		}
		return
	}
	err := errRedo
	// Where a statement costs a round trip (SQL.CompleteEnded), one statement does it all.
	if s.q.CompleteEnded != "" && s.oneStatementClaims() && distinctEnds(parts) {
		err = s.write(ctx, "end and claim", func(ctx context.Context, tx storedriver.Tx) error {
			return s.endAndClaimTogether(ctx, tx, parts, workers, leaseFor)
		})
	}
	if errors.Is(err, errRedo) {
		err = s.write(ctx, "end and claim", func(ctx context.Context, tx storedriver.Tx) error {
			return s.endThenClaim(ctx, tx, parts, leaseFor)
		})
	}
	ended := false
	for _, p := range parts {
		if err != nil {
			p.state, p.lease, p.err = "", Lease{}, fmt.Errorf("end and claim for %s: %w", p.worker, err)
		}
		ended = ended || p.state != ""
	}
	if ended {
		s.eng.Notify() // as EndAttempt's complete: the night's work may be done
	}
}

// errRedo rolls back endAndClaimTogether's transaction, for endThenClaim to write.
var errRedo = errors.New("a complete's lease had gone: written one by one")

// endAndClaimTogether is endAndClaim's transaction as one statement
// (storedriver.EndClaimer) that completes the parts' tickets and leases fresh ones to all
// of them; the loop of claimBatchTx claims what it left. A complete whose lease had gone
// makes it return errRedo: the statement leased a ticket to that worker too.
func (s *Store) endAndClaimTogether(ctx context.Context, tx storedriver.Tx, parts []*endClaim, workers []string, leaseFor time.Duration) error {
	ec, ok := tx.(storedriver.EndClaimer)
	if !ok {
		return errRedo
	}
	for _, p := range parts {
		p.state, p.lease, p.err = "", Lease{}, nil
	}
	fresh := func(ctx context.Context, base storedriver.ClaimParams, workers []string) ([]Lease, error) {
		cp := storedriver.CompleteBatchParams{At: base.Now,
			Kind: string(EventCompleted), From: string(StateRunning), To: string(StateDone)}
		for _, p := range parts {
			if e := p.end; e != nil {
				cp.IDs, cp.Tokens = append(cp.IDs, e.ID), append(cp.Tokens, e.Token)
				cp.Branches, cp.ResultDirs, cp.Summaries = append(cp.Branches, e.Result.Branch), append(cp.ResultDirs, e.Result.ResultDir), append(cp.Summaries, e.Result.Summary)
			}
		}
		rows, err := ec.CompleteAndClaim(ctx, cp, base, workers)
		if err != nil {
			return nil, fmt.Errorf("complete %d and claim for %d workers: %w", len(cp.IDs), len(workers), err)
		}
		done := map[int64]int64{} // the fence token of each ticket completed
		var leased []Lease
		for rows.Next() {
			t, err := scanTicket(rows)
			if err != nil {
				rows.Close()
				return nil, fmt.Errorf("read completed and claimed tickets: %w", err)
			}
			if t.State == StateDone {
				done[t.ID] = t.FenceToken
				continue
			}
			leased = append(leased, Lease{Ticket: t, Token: t.FenceToken, Attempt: t.Attempts, Worker: t.LeaseOwner, ExpiresAt: t.LeaseExpiresAt})
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("read completed and claimed tickets: %w", err)
		}
		for _, p := range parts {
			if p.end == nil {
				continue
			}
			if token, ok := done[p.end.ID]; !ok || token != p.end.Token {
				return nil, errRedo
			}
			p.state = StateDone
		}
		// The statement hands out tickets in claim order, the i-th to workers[i].
		slices.SortFunc(leased, func(a, b Lease) int {
			return cmp.Or(cmp.Compare(b.Ticket.Priority, a.Ticket.Priority), cmp.Compare(a.Ticket.ID, b.Ticket.ID))
		})
		return leased, nil
	}
	leases, err := s.claimBatchIn(ctx, tx, workers, leaseFor, fresh)
	if err != nil {
		return err
	}
	for i, p := range parts {
		if i < len(leases) {
			p.lease = leases[i]
		} else {
			p.err = ErrNoTicket
		}
	}
	return nil
}

// endThenClaim is endAndClaim's transaction statement by statement: the completes, then a
// batch claim for every worker whose complete held or who only asked.
func (s *Store) endThenClaim(ctx context.Context, tx storedriver.Tx, parts []*endClaim, leaseFor time.Duration) error {
	for _, p := range parts {
		p.state, p.lease, p.err = "", Lease{}, nil
	}
	if err := s.completeParts(ctx, tx, parts); err != nil {
		return err
	}
	var claimers []*endClaim
	var names []string
	for _, p := range parts {
		if p.err == nil {
			claimers, names = append(claimers, p), append(names, p.worker)
		}
	}
	if len(claimers) == 0 {
		return nil
	}
	leases, err := s.claimBatchIn(ctx, tx, names, leaseFor, nil)
	if err != nil {
		return err
	}
	for i, c := range claimers {
		if i < len(leases) {
			c.lease = leases[i]
		} else {
			c.err = ErrNoTicket
		}
	}
	return nil
}

// completeParts writes the parts' completes in tx: in one statement where the engine can
// (storedriver.BatchCompleter), else each as EndAttempt would. A complete whose lease is
// gone sets its part's err and changes nothing; any other failure is returned.
func (s *Store) completeParts(ctx context.Context, tx storedriver.Tx, parts []*endClaim) error {
	var ends []*endClaim
	for _, p := range parts {
		if p.end != nil {
			ends = append(ends, p)
		}
	}
	if len(ends) == 0 {
		return nil
	}
	lost := func(p *endClaim, err error) {
		p.err = fmt.Errorf("complete ticket %d token %d: %w", p.end.ID, p.end.Token, err)
	}
	if bc, ok := tx.(storedriver.BatchCompleter); ok && s.q.CompleteEnded != "" && len(ends) > 1 && distinctEnds(ends) {
		now := s.nowMS()
		bp := storedriver.CompleteBatchParams{At: now,
			Kind: string(EventCompleted), From: string(StateRunning), To: string(StateDone)}
		for _, p := range ends {
			r := p.end.Result
			bp.IDs, bp.Tokens = append(bp.IDs, p.end.ID), append(bp.Tokens, p.end.Token)
			bp.Branches, bp.ResultDirs, bp.Summaries = append(bp.Branches, r.Branch), append(bp.ResultDirs, r.ResultDir), append(bp.Summaries, r.Summary)
		}
		done, err := bc.CompleteBatch(ctx, bp)
		if err != nil {
			return err
		}
		for _, p := range ends {
			if token, ok := done[p.end.ID]; ok && token == p.end.Token {
				p.state = StateDone
				continue
			}
			err := s.lostOrMissing(ctx, tx, p.end.ID) // never nil
			if !isLost(err) {
				return err
			}
			lost(p, err)
		}
		return nil
	}
	for _, p := range ends {
		err := s.completeTx(ctx, tx, p.end.ID, p.end.Token, p.end.Result, false)
		if err == nil && s.q.CompleteEnded == "" {
			err = s.endRoundTx(ctx, tx, p.end.ID, StateDone)
		}
		switch {
		case isLost(err):
			lost(p, err)
		case err != nil:
			return err
		default:
			p.state = StateDone
		}
	}
	return nil
}

// distinctEnds says whether no two of parts end the same ticket: one statement finds each
// ticket's token by its id, so two workers ending one ticket (one of them on a lease that
// has gone) are written one by one.
func distinctEnds(parts []*endClaim) bool {
	seen := map[int64]bool{}
	for _, p := range parts {
		if p.end == nil {
			continue
		}
		if seen[p.end.ID] {
			return false
		}
		seen[p.end.ID] = true
	}
	return true
}

// isLost says whether a worker's fenced write failed for its own lease: gone, or its
// ticket never there.
func isLost(err error) bool {
	return errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrNotFound)
}
