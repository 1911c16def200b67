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
// complete held or who only asked, in ONE write transaction (on PostgreSQL one statement):
// a node's workers that end and ask together commit once. A lost lease fails only its own
// part (and claims nothing for it); a failed transaction fails every part, with nothing
// written. A worker the statement served nothing (a ticket with predicted files next,
// rescues) is claimed for in a batch of its own after it (claimRest).
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
	if err == nil {
		s.claimRest(ctx, parts, leaseFor)
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

// errRedo says the one statement cannot write endAndClaim's parts: the transaction is rolled
// back untouched and endThenClaim writes them.
var errRedo = errors.New("not one statement: written one by one")

// errUnserved marks a part whose complete was written but whose worker the one statement
// leased nothing: its claim is a batch of its own (claimRest).
var errUnserved = errors.New("claim not served yet")

// endAndClaimTogether is endAndClaim's transaction as one statement
// (storedriver.EndClaimer) that completes the parts' tickets and leases fresh tickets to
// the workers whose complete held or who only asked. A worker left without one (a ticket
// with predicted files next, rescues, nothing ready) is marked errUnserved for claimRest.
func (s *Store) endAndClaimTogether(ctx context.Context, tx storedriver.Tx, parts []*endClaim, workers []string, leaseFor time.Duration) error {
	ec, ok := tx.(storedriver.EndClaimer)
	if !ok {
		return errRedo
	}
	for _, p := range parts {
		p.state, p.lease, p.err = "", Lease{}, nil
	}
	base, err := s.claimBase(ctx, tx, workers[0], leaseFor)
	if err != nil {
		return err
	}
	cp, ends := completeBatchOf(parts, base.Now)
	rows, err := ec.CompleteAndClaim(ctx, cp, base, workers, ends)
	if err != nil {
		return fmt.Errorf("complete %d and claim for %d workers: %w", len(cp.IDs), len(workers), err)
	}
	done, leased, err := readEndClaim(rows)
	if err != nil {
		return err
	}
	// Read apart from tx: sent alone, the statement was its own transaction.
	s.markEnds(ctx, s.eng.Read(), parts, done)
	for _, p := range parts {
		switch {
		case p.err != nil: // its complete was not written: it claims nothing
		case len(leased) == 0:
			p.err = errUnserved
		default:
			p.lease, leased = leased[0], leased[1:]
		}
	}
	return nil
}

// completeBatchOf is the parts' completes at as one batch, and, aligned with parts, the
// ticket each completes (0 for none).
func completeBatchOf(parts []*endClaim, at int64) (storedriver.CompleteBatchParams, []int64) {
	cp := storedriver.CompleteBatchParams{At: at, Kind: string(EventCompleted), From: string(StateRunning), To: string(StateDone)}
	ends := make([]int64, len(parts))
	for i, p := range parts {
		if e := p.end; e != nil {
			ends[i] = e.ID
			cp.IDs, cp.Tokens = append(cp.IDs, e.ID), append(cp.Tokens, e.Token)
			cp.Branches, cp.ResultDirs, cp.Summaries = append(cp.Branches, e.Result.Branch), append(cp.ResultDirs, e.Result.ResultDir), append(cp.Summaries, e.Result.Summary)
		}
	}
	return cp, ends
}

// readEndClaim reads CompleteAndClaim's rows: the fence token of each ticket completed, by
// id, and the leases in claim order (the order the statement hands them out in).
func readEndClaim(rows storedriver.Rows) (map[int64]int64, []Lease, error) {
	done := map[int64]int64{}
	var leased []Lease
	for rows.Next() {
		t, err := scanTicket(rows)
		if err != nil {
			rows.Close()
			return nil, nil, fmt.Errorf("read completed and claimed tickets: %w", err)
		}
		if t.State == StateDone {
			done[t.ID] = t.FenceToken
			continue
		}
		leased = append(leased, Lease{Ticket: t, Token: t.FenceToken, Attempt: t.Attempts, Worker: t.LeaseOwner, ExpiresAt: t.LeaseExpiresAt})
	}
	if err := rows.Close(); err != nil {
		return nil, nil, fmt.Errorf("read completed and claimed tickets: %w", err)
	}
	slices.SortFunc(leased, func(a, b Lease) int {
		return cmp.Or(cmp.Compare(b.Ticket.Priority, a.Ticket.Priority), cmp.Compare(a.Ticket.ID, b.Ticket.ID))
	})
	return done, leased, nil
}

// markEnds settles each part's complete after a batch: done when done holds its ticket at
// its token, else its err says why (the lease had gone, or the ticket was never there, as
// q reads it). A complete the batch did not write is lost whatever the reading says.
func (s *Store) markEnds(ctx context.Context, q storedriver.Reader, parts []*endClaim, done map[int64]int64) {
	for _, p := range parts {
		e := p.end
		if e == nil {
			continue
		}
		if token, ok := done[e.ID]; ok && token == e.Token {
			p.state = StateDone
			continue
		}
		err := s.lostOrMissing(ctx, q, e.ID) // never nil
		if !isLost(err) {
			err = fmt.Errorf("%w (whether the ticket exists could not be read: %v)", ErrLeaseLost, err)
		}
		p.err = fmt.Errorf("complete ticket %d token %d: %w", e.ID, e.Token, err)
	}
}

// claimRest claims, in a batch of their own, for the parts the one statement served
// nothing (errUnserved): their completes stand whatever this claim's fate.
func (s *Store) claimRest(ctx context.Context, parts []*endClaim, leaseFor time.Duration) {
	var rest []*endClaim
	var names []string
	for _, p := range parts {
		if errors.Is(p.err, errUnserved) {
			rest, names = append(rest, p), append(names, p.worker)
		}
	}
	if len(rest) == 0 {
		return
	}
	var leases []Lease
	err := s.write(ctx, "claim batch", func(ctx context.Context, tx storedriver.Tx) (err error) {
		leases, err = s.claimBatchIn(ctx, tx, names, leaseFor)
		return err
	})
	if err != nil {
		err = fmt.Errorf("claim batch for %v: %w", names, err)
	}
	handOut(rest, leases, err)
}

// handOut gives parts, in order, the leases of one batch claim (ErrNoTicket to those left
// without one), or every part the batch's error.
func handOut(parts []*endClaim, leases []Lease, err error) {
	for i, p := range parts {
		switch {
		case err != nil:
			p.err = err
		case i < len(leases):
			p.lease, p.err = leases[i], nil
		default:
			p.err = ErrNoTicket
		}
	}
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
	leases, err := s.claimBatchIn(ctx, tx, names, leaseFor)
	if err != nil {
		return err
	}
	handOut(claimers, leases, nil)
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
	if bc, ok := tx.(storedriver.BatchCompleter); ok && s.q.CompleteEnded != "" && len(ends) > 1 && distinctEnds(ends) {
		cp, _ := completeBatchOf(ends, s.nowMS())
		done, err := bc.CompleteBatch(ctx, cp)
		if err != nil {
			return err
		}
		s.markEnds(ctx, tx, ends, done)
		return nil
	}
	for _, p := range ends {
		err := s.completeTx(ctx, tx, p.end.ID, p.end.Token, p.end.Result, false)
		if err == nil && s.q.CompleteEnded == "" {
			err = s.endRoundTx(ctx, tx, p.end.ID, StateDone)
		}
		switch {
		case isLost(err):
			p.err = fmt.Errorf("complete ticket %d token %d: %w", p.end.ID, p.end.Token, err)
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
