package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ticketd/ticketd/store/storedriver"
)

// Question is one question a maker asked a human on a ticket, with its answer once given.
type Question struct {
	TicketID   int64     `json:"ticket_id"`
	N          int       `json:"n"` // 1-based, per ticket
	Attempt    int       `json:"attempt"`
	Text       string    `json:"question"`
	AskedAt    time.Time `json:"asked_at"`
	Answered   bool      `json:"answered"`
	Answer     string    `json:"answer,omitempty"`
	AnsweredBy string    `json:"answered_by,omitempty"`
	AnsweredAt time.Time `json:"answered_at,omitzero"`
	// CommentURL is the GitHub comment that put the question on the issue ("" when none).
	CommentURL string `json:"comment_url,omitempty"`
}

// Asked is what a worker hands AskHuman: the question and the attempt's kept work.
type Asked struct {
	Question  string
	Branch    string // optional: the attempt's partial work, kept
	ResultDir string // optional: where report.md was written
}

// AskHuman ends a leased attempt with the maker's question: running -> needs_info, outside
// the queue until Answer (or a requeue). The attempt is not charged (as a release), the
// question is kept as the ticket's next Question and the ticket's open question, and the
// event "needs_info" carries it. A ticket whose cancellation was requested goes to
// cancelled instead.
func (s *Store) AskHuman(ctx context.Context, id, token int64, a Asked) (State, error) {
	return s.EndAttempt(ctx, Ending{ID: id, Token: token, Kind: EndAsk, Asked: a})
}

// checkAsked refuses an empty question.
func checkAsked(id int64, a Asked) error {
	if strings.TrimSpace(a.Question) == "" {
		return fmt.Errorf("ask on ticket %d: the question is empty", id)
	}
	return nil
}

// askHumanTx is AskHuman's transition, in the write transaction tx; it returns the
// ticket's new state.
func (s *Store) askHumanTx(ctx context.Context, tx storedriver.Tx, id, token int64, a Asked) (State, error) {
	q := strings.TrimSpace(a.Question)
	now := s.nowMS()
	var attempts, cancel int
	var owner string
	var maxAttempts int
	if err := tx.QueryRow(ctx, s.q.Leased, id, token).Scan(&attempts, &maxAttempts, &cancel, &owner); errors.Is(err, storedriver.ErrNoRows) {
		return "", s.lostOrMissing(ctx, tx, id)
	} else if err != nil {
		return "", err
	}
	if cancel != 0 {
		reason := "cancel requested; the maker had asked: " + q
		if err := s.fenced(ctx, tx, id, s.q.FinishCancelled, storedriver.FinishCancelledParams{FinishedAt: now, UpdatedAt: now, Reason: reason, ID: id, Token: token}.Args()...); err != nil {
			return "", err
		}
		return StateCancelled, s.writeEvent(ctx, tx, eventWrite{Ticket: id, At: now, Kind: EventCancelled, From: StateRunning, To: StateCancelled, Attempt: attempts, Actor: owner, Reason: reason})
	}
	if err := s.fenced(ctx, tx, id, s.q.AskHuman, storedriver.AskHumanParams{Attempts: max(attempts-1, 0), UpdatedAt: now,
		Reason: "needs info: " + q, Question: q, Branch: a.Branch, ResultDir: a.ResultDir, ID: id, Token: token}.Args()...); err != nil {
		return "", err
	}
	if _, err := tx.Exec(ctx, s.q.InsertQuestion, storedriver.InsertQuestionParams{Attempt: attempts, Question: q, AskedAt: now, TicketID: id}.Args()...); err != nil {
		return "", err
	}
	return StateNeedsInfo, s.writeEvent(ctx, tx, eventWrite{Ticket: id, At: now, Kind: EventNeedsInfo, From: StateRunning, To: StateNeedsInfo, Attempt: attempts, Actor: owner, Reason: q})
}

// Answer records the answer to a needs_info ticket's open question and puts the ticket back
// in the queue, ready at once: needs_info -> queued, event "answered" by who. Any other
// state is ErrInvalidTransition (nothing is waiting for an answer).
func (s *Store) Answer(ctx context.Context, id int64, answer, who string) error {
	answer = strings.TrimSpace(answer)
	if answer == "" {
		return fmt.Errorf("answer ticket %d: the answer is empty", id)
	}
	err := s.write(ctx, "answer", func(ctx context.Context, tx storedriver.Tx) error {
		now := s.nowMS()
		st, attempts, err := s.currentState(ctx, tx, id)
		if err != nil {
			return err
		}
		if st != StateNeedsInfo {
			return fmt.Errorf("%w: ticket is %s, not needs_info: no question is waiting for an answer", ErrInvalidTransition, st)
		}
		if n, err := tx.Exec(ctx, s.q.AnswerQuestion, storedriver.AnswerQuestionParams{Answer: answer, AnsweredBy: who, AnsweredAt: now, TicketID: id}.Args()...); err != nil {
			return err
		} else if n != 1 {
			return fmt.Errorf("ticket %d is needs_info but its question is not on record (or already answered)", id)
		}
		if _, err := tx.Exec(ctx, s.q.Answered, storedriver.ToQueueParams{RunAfter: now, UpdatedAt: now, Reason: "answered by " + who, ID: id}.Args()...); err != nil {
			return err
		}
		return s.writeEvent(ctx, tx, eventWrite{Ticket: id, At: now, Kind: EventAnswered, From: StateNeedsInfo, To: StateQueued, Attempt: attempts, Actor: who, Reason: answer})
	})
	if err != nil {
		return fmt.Errorf("answer ticket %d: %w", id, err)
	}
	s.eng.Notify() // claimable at once, on any node
	return nil
}

// Questions returns a ticket's questions in the order they were asked ([] when none).
func (s *Store) Questions(ctx context.Context, id int64) ([]Question, error) {
	rows, err := s.rd.Query(ctx, s.q.Questions, id)
	if err != nil {
		return nil, fmt.Errorf("questions of ticket %d: %w", id, err)
	}
	defer rows.Close()
	out := []Question{}
	for rows.Next() {
		var (
			q               Question
			asked, answered sql.NullInt64
			answer          sql.NullString
		)
		if err := rows.Scan(&q.TicketID, &q.N, &q.Attempt, &q.Text, &asked, &answer, &q.AnsweredBy, &answered, &q.CommentURL); err != nil {
			return nil, fmt.Errorf("questions of ticket %d: %w", id, err)
		}
		q.AskedAt, q.AnsweredAt = fromMS(asked), fromMS(answered)
		q.Answered, q.Answer = answer.Valid, answer.String
		out = append(out, q)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("questions of ticket %d: %w", id, err)
	}
	return out, nil
}

// RecordQuestionComment keeps the GitHub comment that asked question n of a ticket, so a
// restart looks it up instead of posting it twice.
func (s *Store) RecordQuestionComment(ctx context.Context, id int64, n int, url string) error {
	err := s.write(ctx, "record question comment", func(ctx context.Context, tx storedriver.Tx) error {
		if k, err := tx.Exec(ctx, s.q.SetQuestionComment, url, id, n); err != nil {
			return err
		} else if k != 1 {
			return ErrNotFound
		}
		st, attempts, err := s.currentState(ctx, tx, id)
		if err != nil {
			return err
		}
		return s.writeEvent(ctx, tx, eventWrite{Ticket: id, At: s.nowMS(), Kind: EventPublished, From: st, To: st, Attempt: attempts, Actor: "github", Reason: "question " + fmt.Sprint(n) + ": " + url, Reserve: true})
	})
	if err != nil {
		return fmt.Errorf("record question %d comment of ticket %d: %w", n, id, err)
	}
	return nil
}

// Waiting is a needs_info ticket with its open question.
type Waiting struct {
	Ticket   Ticket   `json:"ticket"`
	Question Question `json:"question"`
}

// WaitingForAnswer returns the needs_info tickets of source (every source when "") with their
// open question, oldest question first, at most limit (0: all). It reads the open tickets
// only (tickets_open).
func (s *Store) WaitingForAnswer(ctx context.Context, source string, limit int) ([]Waiting, error) {
	args := []any{source}
	if limit > 0 {
		args = append(args, limit)
	}
	rows, err := s.rd.Query(ctx, s.q.WaitingForAnswer(limit > 0), args...)
	if err != nil {
		return nil, fmt.Errorf("tickets waiting for an answer: %w", err)
	}
	defer rows.Close()
	out := []Waiting{}
	for rows.Next() {
		var (
			w     Waiting
			asked sql.NullInt64
		)
		t, err := scanTicket(rows, &w.Question.N, &w.Question.Attempt, &w.Question.Text, &asked, &w.Question.CommentURL)
		if err != nil {
			return nil, fmt.Errorf("tickets waiting for an answer: %w", err)
		}
		w.Ticket, w.Question.TicketID, w.Question.AskedAt = t, t.ID, fromMS(asked)
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("tickets waiting for an answer: %w", err)
	}
	return out, nil
}
