package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ticketd/ticketd/store/storedriver"
)

// CI states of a pull request's head commit, as the watch last saw them.
const (
	CIPending = "pending" // checks queued or running
	CIGreen   = "green"   // every check passed
	CIRed     = "red"     // a check failed
	CIStuck   = "stuck"   // checks never started (action_required, or none after a while)
)

// PullWatch is what ticketd last saw of a done ticket's pull request.
type PullWatch struct {
	TicketID int64 `json:"ticket_id"`
	// ReviewCursor is the newest review (GitHub's id) handled: later ones may ask a round.
	ReviewCursor int64 `json:"review_cursor"`
	// CIHead is the commit whose checks CIState describes; CIDetail says which checks and,
	// for a stuck or red one, what to do.
	CIHead   string    `json:"ci_head,omitempty"`
	CIState  string    `json:"ci_state,omitempty"`
	CIDetail string    `json:"ci_detail,omitempty"`
	CIAt     time.Time `json:"ci_at,omitzero"`
}

// PullWatchOf returns what was last seen of ticket id's pull request (zero when nothing).
func (s *Store) PullWatchOf(ctx context.Context, id int64) (PullWatch, error) {
	w := PullWatch{TicketID: id}
	var at sql.NullInt64
	err := s.rd.QueryRow(ctx, s.q.Round.Watch, id).Scan(&w.ReviewCursor, &w.CIHead, &w.CIState, &w.CIDetail, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return w, nil
	}
	if err != nil {
		return w, fmt.Errorf("pull request watch of ticket %d: %w", id, err)
	}
	w.CIAt = fromMS(at)
	return w, nil
}

// SetReviewCursor records the newest review handled on ticket id's pull request.
func (s *Store) SetReviewCursor(ctx context.Context, id, reviewID int64) error {
	err := s.write(ctx, "set review cursor", func(ctx context.Context, tx storedriver.Tx) error {
		_, err := tx.Exec(ctx, s.q.Round.SetCursor, id, reviewID)
		return err
	})
	if err != nil {
		return fmt.Errorf("record review %d as handled on ticket %d: %w", reviewID, id, err)
	}
	return nil
}

// SetPullCI records the state of the checks of ticket id's pull request at commit head.
func (s *Store) SetPullCI(ctx context.Context, id int64, head, state, detail string) error {
	switch state {
	case CIPending, CIGreen, CIRed, CIStuck:
	default:
		return fmt.Errorf("record the checks of ticket %d: unknown state %q: want pending, green, red or stuck", id, state)
	}
	err := s.write(ctx, "set pull request checks", func(ctx context.Context, tx storedriver.Tx) error {
		_, err := tx.Exec(ctx, s.q.Round.SetCI, storedriver.SetCIParams{TicketID: id, Head: head, State: state, Detail: CleanText(detail), At: s.nowMS()}.Args()...)
		return err
	})
	if err != nil {
		return fmt.Errorf("record the checks of ticket %d: %w", id, err)
	}
	return nil
}

// RedOrStuckPulls lists the done tickets' pull requests whose checks are red or never
// started: what the morning's "Needs you" shows. A ticket back in work (a fix round) is
// ticketd's, not listed.
func (s *Store) RedOrStuckPulls(ctx context.Context) ([]PullWatch, error) {
	rows, err := s.rd.Query(ctx, s.q.Round.CIStates)
	if err != nil {
		return nil, fmt.Errorf("red or stuck pull requests: %w", err)
	}
	defer rows.Close()
	var out []PullWatch
	for rows.Next() {
		var w PullWatch
		var at sql.NullInt64
		if err := rows.Scan(&w.TicketID, &w.CIHead, &w.CIState, &w.CIDetail, &at); err != nil {
			return nil, fmt.Errorf("red or stuck pull requests: %w", err)
		}
		w.CIAt = fromMS(at)
		out = append(out, w)
	}
	return out, rows.Err()
}

// RecordRoundComment records the pull request comment that answered round n of ticket id.
func (s *Store) RecordRoundComment(ctx context.Context, id int64, n int, url string) error {
	err := s.write(ctx, "record round comment", func(ctx context.Context, tx storedriver.Tx) error {
		_, err := tx.Exec(ctx, s.q.Round.Answered, url, id, n)
		return err
	})
	if err != nil {
		return fmt.Errorf("record the comment of round %d of ticket %d: %w", n, id, err)
	}
	return nil
}
