package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/ticketd/ticketd/store/storedriver"
)

// Retexted is what Retext did with a ticket.
type Retexted struct {
	ID int64 `json:"id"` // 0: the source's ticket is not in the queue (enqueue it)
	// Changed is true when the ticket took the new text.
	Changed bool `json:"changed"`
	// Kept is true when the title or body differ but the ticket keeps its own: it was
	// claimed once (State says where it is now), so its attempts, triage and results are
	// of that text.
	Kept  bool  `json:"kept"`
	State State `json:"state"`
}

// Retext gives the ticket of (nt.Source, nt.ExternalID) the repository, title, body,
// labels and priority its source has now (an issue file edited after intake took it in),
// but only while no worker ever claimed it (queued, its fence token never drawn). Its issue
// prediction is cleared with the old text (the next intake predicts again) and an event
// says what changed. A ticket claimed once keeps the text it was worked with: its history
// would otherwise describe work on a text it no longer has; Kept says its title or body
// differ. Same text: nothing.
func (s *Store) Retext(ctx context.Context, nt NewTicket) (Retexted, error) {
	var r Retexted
	id, err := s.TicketBySource(ctx, nt.Source, nt.ExternalID)
	if err != nil || id == 0 {
		return r, err
	}
	r.ID = id
	labels := nt.Labels
	if labels == nil {
		labels = []string{}
	}
	title, body := CleanText(nt.Title), CleanText(nt.Body)
	t, err := s.Get(ctx, id)
	if err != nil {
		return r, fmt.Errorf("retext %s/%s: %w", nt.Source, nt.ExternalID, err)
	}
	r.State = t.State
	var what []string
	for _, f := range []struct {
		name string
		same bool
	}{
		{"repo", t.Repo == nt.Repo}, {"title", t.Title == title}, {"body", t.Body == body},
		{"labels", slices.Equal(t.Labels, labels) || len(t.Labels) == 0 && len(labels) == 0},
		{"priority", t.Priority == nt.Priority},
	} {
		if !f.same {
			what = append(what, f.name)
		}
	}
	if len(what) == 0 {
		return r, nil
	}
	if t.State != StateQueued || t.FenceToken != 0 {
		// Only a new title or body is news for the operator: labels, priority and repository
		// also follow the configuration (priorities:, a default repository), which may change.
		r.Kept = t.Title != title || t.Body != body
		return r, nil
	}
	lj, err := json.Marshal(labels)
	if err != nil {
		return r, fmt.Errorf("retext %s/%s: encode labels: %w", nt.Source, nt.ExternalID, err)
	}
	warning := cleanNote(nt.Title, nt.Body)
	err = s.write(ctx, "retext", func(ctx context.Context, tx storedriver.Tx) error {
		now := s.nowMS()
		n, err := tx.Exec(ctx, s.q.Retext, storedriver.RetextParams{ID: id, Repo: nt.Repo, Title: title, Body: body,
			Labels: string(lj), Priority: nt.Priority, UpdatedAt: now}.Args()...)
		if err != nil {
			return err
		}
		if n == 0 { // claimed (or moved on) since the read
			st, _, err := s.currentState(ctx, tx, id)
			if err != nil {
				return err
			}
			r.Kept, r.State = true, st
			return nil
		}
		if _, err := tx.Exec(ctx, s.q.Overlap.ClearPrediction, id); err != nil {
			return err
		}
		note := fmt.Sprintf("its issue changed at %s before any claim: the ticket now has the new %s", nt.Source, joinWords(what))
		if warning != "" {
			note += "; " + warning
		}
		r.Changed = true
		return s.writeEvent(ctx, tx, eventWrite{Ticket: id, At: now, Kind: EventNote, From: StateQueued, To: StateQueued,
			Actor: nt.Source, Reason: note, Reserve: true})
	})
	if err != nil {
		return Retexted{}, fmt.Errorf("retext %s/%s (ticket %d): %w", nt.Source, nt.ExternalID, id, err)
	}
	if r.Changed {
		s.eng.Notify()
	}
	return r, nil
}

// SameText returns the earliest ticket of source and repo whose title and body are these (compared
// as Enqueue stores them), ok false when there is none: a renamed or copied issue file
// names an issue the queue already has.
func (s *Store) SameText(ctx context.Context, source, repo, title, body string) (t Ticket, ok bool, err error) {
	var id int64
	err = s.rd.QueryRow(ctx, s.q.SameText, source, repo, CleanText(title), CleanText(body)).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return Ticket{}, false, nil
	}
	if err != nil {
		return Ticket{}, false, fmt.Errorf("ticket of %s with the same text as %q: %w", source, title, err)
	}
	if t, err = s.Get(ctx, id); err != nil {
		return Ticket{}, false, err
	}
	return t, true, nil
}

// joinWords joins a, b and c as "a, b and c".
func joinWords(w []string) string {
	switch len(w) {
	case 0:
		return ""
	case 1:
		return w[0]
	}
	out := w[0]
	for _, x := range w[1 : len(w)-1] {
		out += ", " + x
	}
	return out + " and " + w[len(w)-1]
}
