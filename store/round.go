package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ticketd/ticketd/store/storedriver"
)

// RoundSource says who asked a round.
type RoundSource string

// The sources of rounds.
const (
	RoundRevise RoundSource = "revise" // an operator's note (ticketctl revise, the console)
	RoundReview RoundSource = "review" // a writer's review on the pull request
	RoundCI     RoundSource = "ci"     // a red check on the pull request the fix caused
)

// Round outcomes: open while the round is queued or running, then how the ticket ended it.
const (
	RoundOpen    = "open"
	RoundRefused = "refused" // asked after review.max_rounds: the ticket escalated instead
)

// ErrRoundsSpent: a round was asked of a ticket that had had its review.max_rounds; the
// ticket was escalated for a human with the open threads listed, and the ask is kept as a
// refused round.
var ErrRoundsSpent = errors.New("the ticket's rounds are spent (review.max_rounds): it is escalated for a human")

// Thread is one unresolved review thread or review comment a round answers. Its text is
// untrusted (anyone with write access wrote it): the maker reads it as quoted data.
type Thread struct {
	// ID names the thread where it lives (a GitHub review thread's node id, a comment id);
	// the summary comment answers each by it.
	ID     string `json:"id,omitempty"`
	Author string `json:"author,omitempty"`
	Path   string `json:"path,omitempty"`
	Line   int    `json:"line,omitempty"`
	Body   string `json:"body"`
	URL    string `json:"url,omitempty"`
}

// RoundAsk is what a round is asked with.
type RoundAsk struct {
	Source RoundSource
	// Note is the operator's or CI's word for the round; Threads the review's open threads.
	Note    string
	Threads []Thread
	// MaxRounds bounds the rounds a ticket gets (review.max_rounds, at least 1).
	MaxRounds int
}

// Round is one round asked of a ticket, as the rounds table keeps it.
type Round struct {
	N       int         `json:"n"`
	At      time.Time   `json:"at"`
	Actor   string      `json:"actor"`
	Source  RoundSource `json:"source"`
	Note    string      `json:"note,omitempty"`
	Threads []Thread    `json:"threads,omitempty"`
	// Branch is the fix branch the round goes on from (and moves, when it ends done).
	Branch string `json:"branch"`
	// Attempts is how many attempts the ticket had had when the round was asked: the
	// round's attempts are numbered from Attempts+1.
	Attempts int    `json:"attempts"`
	Outcome  string `json:"outcome"`
	// EndedAt is zero while the round is open.
	EndedAt time.Time `json:"ended_at,omitzero"`
	// CommentURL is the pull request comment that answered the round ("" until posted).
	CommentURL string `json:"comment_url,omitempty"`
}

// Bounds on what a round keeps of untrusted text.
const (
	maxThreads      = 50
	maxThreadBody   = 4000
	maxRoundThreads = 64 << 10
)

// Revise asks a round of a done ticket: the ticket goes back to the queue with a fresh
// budget of attempts (as a requeue), and its next attempt works on its fix branch from the
// branch's head (Round.Branch), reading a.Note and a.Threads. A ticket that had
// a.MaxRounds rounds already is escalated instead, its reason listing the open threads, and
// Revise returns ErrRoundsSpent (the refused ask is kept as a round). Only a done ticket
// with a fix branch can be revised (ErrInvalidTransition otherwise). Both are recorded as
// events naming who.
func (s *Store) Revise(ctx context.Context, id int64, who string, a RoundAsk) (Round, error) {
	r, err := cleanAsk(a)
	if err != nil {
		return Round{}, fmt.Errorf("revise ticket %d: %w", id, err)
	}
	if a.MaxRounds < 1 {
		return Round{}, fmt.Errorf("revise ticket %d: max rounds must be at least 1, got %d", id, a.MaxRounds)
	}
	threads, err := json.Marshal(r.Threads)
	if err != nil {
		return Round{}, fmt.Errorf("revise ticket %d: %w", id, err)
	}
	if len(threads) > maxRoundThreads {
		return Round{}, fmt.Errorf("revise ticket %d: the threads hold %d bytes; keep them under %d", id, len(threads), maxRoundThreads)
	}
	spent := false
	err = s.write(ctx, "revise", func(ctx context.Context, tx storedriver.Tx) error {
		spent = false
		t, err := scanTicket(tx.QueryRow(ctx, s.q.GetTicket, id))
		if err != nil {
			return notFound(err)
		}
		if t.State != StateDone || t.Branch == "" {
			return fmt.Errorf("%w: ticket is %s; only a done ticket's fix can be revised (requeue it to start over)", ErrInvalidTransition, t.State)
		}
		rounds, err := s.roundsTx(ctx, tx, id)
		if err != nil {
			return err
		}
		now := s.nowMS()
		r.N, r.At, r.Actor, r.Branch, r.Attempts = nextRound(rounds), time.UnixMilli(now).UTC(), who, t.Branch, t.Attempts
		if usedRounds(rounds) >= a.MaxRounds {
			spent = true
			r.Outcome, r.EndedAt = RoundRefused, r.At
			return s.refuseRoundTx(ctx, tx, t, r, string(threads), a.MaxRounds)
		}
		r.Outcome = RoundOpen
		reason := roundReason(r, t)
		if _, err := tx.Exec(ctx, s.q.Requeue, storedriver.RequeueParams{RunAfter: now, UpdatedAt: now, Reason: reason, ID: id, From: string(StateDone)}.Args()...); err != nil {
			return err
		}
		if err := s.insertRoundTx(ctx, tx, id, r, string(threads), nil); err != nil {
			return err
		}
		return s.writeEvent(ctx, tx, eventWrite{Ticket: id, At: now, Kind: EventRevised, From: StateDone, To: StateQueued, Attempt: t.Attempts, Actor: who, Reason: reason})
	})
	if err != nil {
		return Round{}, fmt.Errorf("revise ticket %d: %w", id, err)
	}
	if spent {
		return r, fmt.Errorf("revise ticket %d: %w", id, ErrRoundsSpent)
	}
	s.eng.Notify()
	return r, nil
}

// roundReason is the revised event's reason.
func roundReason(r Round, t Ticket) string {
	reason := fmt.Sprintf("round %d (%s) asked by %s on %s; attempts go on from %d with a fresh budget of %d", r.N, r.Source, r.Actor, t.Branch, t.Attempts+1, t.MaxAttempts)
	if r.Note != "" {
		reason += "; note: " + r.Note
	}
	if len(r.Threads) > 0 {
		reason += fmt.Sprintf("; %d review thread(s)", len(r.Threads))
	}
	return reason
}

// refuseRoundTx escalates a done ticket whose rounds are spent, its reason listing the
// threads still open, and keeps the ask as a refused round.
func (s *Store) refuseRoundTx(ctx context.Context, tx storedriver.Tx, t Ticket, r Round, threads string, max int) error {
	now := r.At.UnixMilli()
	reason := fmt.Sprintf("review.max_rounds (%d) rounds done on %s and more was asked by %s: a human takes it from here", max, t.Branch, r.Actor)
	if open := ThreadList(r.Threads); open != "" {
		reason += "; open threads:\n" + open
	}
	if r.Note != "" {
		reason += "\nnote: " + r.Note
	}
	n, err := tx.Exec(ctx, s.q.Round.Escalate, now, now, reason, t.ID)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%w: ticket %d left done meanwhile", ErrInvalidTransition, t.ID)
	}
	if err := s.insertRoundTx(ctx, tx, t.ID, r, threads, now); err != nil {
		return err
	}
	return s.writeEvent(ctx, tx, eventWrite{Ticket: t.ID, At: now, Kind: EventEscalated, From: StateDone, To: StateEscalated, Attempt: t.Attempts, Actor: r.Actor, Reason: reason})
}

func (s *Store) insertRoundTx(ctx context.Context, tx storedriver.Tx, id int64, r Round, threads string, ended any) error {
	_, err := tx.Exec(ctx, s.q.Round.Insert, storedriver.InsertRoundParams{TicketID: id, At: r.At.UnixMilli(), Actor: r.Actor,
		Source: string(r.Source), Note: r.Note, Threads: threads, Branch: r.Branch, Attempts: r.Attempts, Outcome: r.Outcome, EndedAt: ended}.Args()...)
	return err
}

// ThreadList lists threads one a line, for a report or a reason: where, who, and the
// text's first line, clipped.
func ThreadList(threads []Thread) string {
	var b strings.Builder
	for _, th := range threads {
		line, _, _ := strings.Cut(strings.TrimSpace(th.Body), "\n")
		if len(line) > 160 {
			line = line[:160] + "…"
		}
		where := th.Path
		if where != "" && th.Line > 0 {
			where = fmt.Sprintf("%s:%d", where, th.Line)
		}
		fmt.Fprintf(&b, "- %s", firstOf(where, "(the pull request)"))
		if th.Author != "" {
			fmt.Fprintf(&b, " (%s)", th.Author)
		}
		fmt.Fprintf(&b, ": %s", line)
		if th.URL != "" {
			fmt.Fprintf(&b, " <%s>", th.URL)
		}
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n")
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// cleanAsk bounds and cleans the ask's untrusted text.
func cleanAsk(a RoundAsk) (Round, error) {
	switch a.Source {
	case RoundRevise, RoundReview, RoundCI:
	default:
		return Round{}, fmt.Errorf("unknown round source %q: want revise, review or ci", a.Source)
	}
	note := strings.TrimSpace(a.Note)
	if len(note) > maxNote {
		return Round{}, fmt.Errorf("the note has %d bytes; keep it under %d", len(note), maxNote)
	}
	if note == "" && len(a.Threads) == 0 {
		return Round{}, errors.New("a round needs a note or review threads saying what to change")
	}
	if len(a.Threads) > maxThreads {
		return Round{}, fmt.Errorf("%d review threads; a round answers at most %d", len(a.Threads), maxThreads)
	}
	r := Round{Source: a.Source, Note: CleanText(note), Threads: make([]Thread, 0, len(a.Threads))}
	for _, th := range a.Threads {
		th.Body = strings.TrimSpace(th.Body)
		if len(th.Body) > maxThreadBody {
			th.Body = th.Body[:maxThreadBody] + "\n[clipped]"
		}
		th.Body, th.Author, th.Path, th.ID, th.URL = CleanText(th.Body), CleanText(th.Author), CleanText(th.Path), CleanText(th.ID), CleanText(th.URL)
		r.Threads = append(r.Threads, th)
	}
	return r, nil
}

// usedRounds counts the rounds that ran or run (refused asks do not).
func usedRounds(rounds []Round) int {
	n := 0
	for _, r := range rounds {
		if r.Outcome != RoundRefused {
			n++
		}
	}
	return n
}

func nextRound(rounds []Round) int {
	if len(rounds) == 0 {
		return 1
	}
	return rounds[len(rounds)-1].N + 1
}

// Rounds returns the rounds asked of a ticket, oldest first.
func (s *Store) Rounds(ctx context.Context, id int64) ([]Round, error) {
	out, err := s.roundsTx(ctx, s.rd, id)
	if err != nil {
		return nil, fmt.Errorf("rounds of ticket %d: %w", id, err)
	}
	return out, nil
}

// OpenRound returns the ticket's open round (queued or running), ok false when none.
func (s *Store) OpenRound(ctx context.Context, id int64) (Round, bool, error) {
	rounds, err := s.Rounds(ctx, id)
	if err != nil {
		return Round{}, false, err
	}
	if n := len(rounds); n > 0 && rounds[n-1].Outcome == RoundOpen {
		return rounds[n-1], true, nil
	}
	return Round{}, false, nil
}

func (s *Store) roundsTx(ctx context.Context, q storedriver.Reader, id int64) ([]Round, error) {
	rows, err := q.Query(ctx, s.q.Round.List, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Round{}
	for rows.Next() {
		var r Round
		var at int64
		var ended sql.NullInt64
		var threads, source string
		if err := rows.Scan(&r.N, &at, &r.Actor, &source, &r.Note, &threads, &r.Branch, &r.Attempts, &r.Outcome, &ended, &r.CommentURL); err != nil {
			return nil, err
		}
		r.At, r.EndedAt, r.Source = time.UnixMilli(at).UTC(), fromMS(ended), RoundSource(source)
		if err := json.Unmarshal([]byte(threads), &r.Threads); err != nil {
			return nil, fmt.Errorf("round %d: threads: %w", r.N, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// endRoundTx ends the ticket's open round, if any, when an attempt ends the ticket in state
// to: a finished ticket's round ends with it (done, escalated, cancelled); a retry keeps it
// open.
func (s *Store) endRoundTx(ctx context.Context, tx storedriver.Tx, id int64, to State) error {
	if !to.Terminal() {
		return nil
	}
	_, err := tx.Exec(ctx, s.q.Round.End, string(to), s.nowMS(), id)
	return err
}
