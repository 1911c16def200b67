package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/ticketd/ticketd/store/storedriver"
)

// ErrNotDuplicate: the ticket is not linked as a duplicate (Unlink, DuplicateOf).
var ErrNotDuplicate = errors.New("ticket is not a duplicate")

// LinkDuplicate makes ticket id a duplicate of ticket of: queued -> duplicate, event
// "duplicate" with reason. Both must be of one repository; id must be queued and never
// attempted, never linked before (an operator's unlink is final), and of must be open and
// not itself a duplicate. linked is false, with no change, when id is no longer eligible
// (claimed meanwhile, already linked or unlinked); other refusals are errors.
func (s *Store) LinkDuplicate(ctx context.Context, id, of int64, reason string) (linked bool, err error) {
	if id == of {
		return false, fmt.Errorf("link ticket %d as a duplicate of itself: refused", id)
	}
	err = s.write(ctx, "link duplicate", func(ctx context.Context, tx storedriver.Tx) error {
		linked = false
		t, err := scanTicket(tx.QueryRow(ctx, s.q.GetTicket, id))
		if err != nil {
			return fmt.Errorf("ticket %d: %w", id, notFound(err))
		}
		p, err := scanTicket(tx.QueryRow(ctx, s.q.GetTicket, of))
		if err != nil {
			return fmt.Errorf("ticket %d: %w", of, notFound(err))
		}
		if t.Repo != p.Repo {
			return fmt.Errorf("%w: ticket %d is of repository %q, ticket %d of %q: duplicates are never linked across repositories", ErrInvalidTransition, id, t.Repo, of, p.Repo)
		}
		if p.State.Terminal() || p.State == StateDuplicate {
			return fmt.Errorf("%w: ticket %d is %s: only an open ticket that is not a duplicate is worked for others", ErrInvalidTransition, of, p.State)
		}
		var prev int64
		var prevReason string
		var unlinked sql.NullInt64
		switch err := tx.QueryRow(ctx, s.q.Dup.LinkOf, id).Scan(&prev, &prevReason, &unlinked); {
		case err == nil:
			return nil // linked once already (and maybe unlinked by an operator): leave it
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		now := s.nowMS()
		why := fmt.Sprintf("duplicate of #%d: %s", of, reason)
		n, err := tx.Exec(ctx, s.q.Dup.Link, now, why, id)
		if err != nil || n == 0 {
			return err // n == 0: not queued, or attempted: it is worked on its own
		}
		if _, err := tx.Exec(ctx, s.q.Dup.InsertLink, id, of, reason, now); err != nil {
			return err
		}
		linked = true
		return s.writeEvent(ctx, tx, eventWrite{Ticket: id, At: now, Kind: EventDuplicate, From: StateQueued, To: StateDuplicate, Actor: "ticketd", Reason: why})
	})
	if err != nil {
		return false, fmt.Errorf("link ticket %d as a duplicate of %d: %w", id, of, err)
	}
	return linked, nil
}

// Link is a duplicate's link to the ticket worked for it.
type Link struct {
	Of     int64  `json:"duplicate_of"`
	Reason string `json:"reason"`
	// Unlinked is set when an operator unlinked it (the ticket is worked on its own).
	Unlinked bool `json:"unlinked"`
}

// DuplicateOf returns ticket id's link, or ErrNotDuplicate when it was never linked.
func (s *Store) DuplicateOf(ctx context.Context, id int64) (Link, error) {
	var l Link
	var unlinked sql.NullInt64
	err := s.rd.QueryRow(ctx, s.q.Dup.LinkOf, id).Scan(&l.Of, &l.Reason, &unlinked)
	if errors.Is(err, sql.ErrNoRows) {
		return Link{}, fmt.Errorf("ticket %d: %w", id, ErrNotDuplicate)
	}
	if err != nil {
		return Link{}, fmt.Errorf("link of ticket %d: %w", id, err)
	}
	l.Unlinked = unlinked.Valid
	return l, nil
}

// DuplicatesOf returns the tickets linked as duplicates of ticket of, by id.
func (s *Store) DuplicatesOf(ctx context.Context, of int64) ([]int64, error) {
	rows, err := s.rd.Query(ctx, s.q.Dup.LinkedTo, of)
	if err != nil {
		return nil, fmt.Errorf("duplicates of ticket %d: %w", of, err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("duplicates of ticket %d: %w", of, err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// Unlink puts a duplicate back in the queue, ready at once, to be worked on its own:
// duplicate -> queued, event "unlinked" by who. It is never linked again. Any other state
// is ErrInvalidTransition.
func (s *Store) Unlink(ctx context.Context, id int64, who string) error {
	err := s.write(ctx, "unlink duplicate", func(ctx context.Context, tx storedriver.Tx) error {
		now := s.nowMS()
		st, attempts, err := s.currentState(ctx, tx, id)
		if err != nil {
			return err
		}
		if st != StateDuplicate {
			return fmt.Errorf("%w: ticket is %s, not duplicate: %w", ErrInvalidTransition, st, ErrNotDuplicate)
		}
		return s.unlink(ctx, tx, id, now, attempts, who, "unlinked by "+who+": worked on its own")
	})
	if err != nil {
		return fmt.Errorf("unlink ticket %d: %w", id, err)
	}
	s.eng.Notify()
	return nil
}

func (s *Store) unlink(ctx context.Context, tx storedriver.Tx, id, now int64, attempts int, who, reason string) error {
	if _, err := tx.Exec(ctx, s.q.Dup.Unlink, now, now, reason, id); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, s.q.Dup.EndLink, now, who, id); err != nil {
		return err
	}
	return s.writeEvent(ctx, tx, eventWrite{Ticket: id, At: now, Kind: EventUnlinked, From: StateDuplicate, To: StateQueued, Attempt: attempts, Actor: who, Reason: reason})
}

// Settled is what SettleDuplicates did with the duplicates of one ticket.
type Settled struct {
	// Closed are the duplicates closed done with the ticket's fix (as they are now).
	Closed []Ticket
	// Requeued are the duplicates put back in the queue, the ticket having ended without
	// a fix.
	Requeued []int64
}

// SettleDuplicates ends the wait of ticket of's duplicates once it has ended: done closes
// them done with its branch and summary (event "closed_with"); escalated or cancelled puts
// them back in the queue to be worked on their own (event "unlinked"), so that no report is
// dropped with a ticket that failed. An open ticket leaves them waiting.
func (s *Store) SettleDuplicates(ctx context.Context, of int64) (Settled, error) {
	var out Settled
	err := s.write(ctx, "settle duplicates", func(ctx context.Context, tx storedriver.Tx) error {
		out = Settled{}
		p, err := scanTicket(tx.QueryRow(ctx, s.q.GetTicket, of))
		if err != nil {
			return notFound(err)
		}
		if !p.State.Terminal() {
			return nil
		}
		ids, err := linkedTo(ctx, tx, s.q.Dup.LinkedTo, of)
		if err != nil {
			return err
		}
		now := s.nowMS()
		for _, id := range ids {
			if p.State != StateDone {
				why := fmt.Sprintf("#%d, which it duplicated, ended %s: worked on its own", of, p.State)
				if err := s.unlink(ctx, tx, id, now, 0, "ticketd", why); err != nil {
					return err
				}
				out.Requeued = append(out.Requeued, id)
				continue
			}
			why := fmt.Sprintf("closed with #%d, fixed on %s", of, p.Branch)
			n, err := tx.Exec(ctx, s.q.Dup.Close, now, now, why, p.Branch, p.Summary, id)
			if err != nil {
				return err
			}
			if n == 0 {
				continue
			}
			if err := s.writeEvent(ctx, tx, eventWrite{Ticket: id, At: now, Kind: EventClosedWith, From: StateDuplicate, To: StateDone, Actor: "ticketd", Reason: why}); err != nil {
				return err
			}
			t, err := scanTicket(tx.QueryRow(ctx, s.q.GetTicket, id))
			if err != nil {
				return err
			}
			out.Closed = append(out.Closed, t)
		}
		return nil
	})
	if err != nil {
		return Settled{}, fmt.Errorf("settle the duplicates of ticket %d: %w", of, err)
	}
	if len(out.Requeued) > 0 {
		s.eng.Notify()
	}
	return out, nil
}

func linkedTo(ctx context.Context, tx storedriver.Tx, query string, of int64) ([]int64, error) {
	rows, err := tx.Query(ctx, query, of)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

func notFound(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	return err
}
