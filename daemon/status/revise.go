package status

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/ticketd/ticketd/store"
)

// revise asks a round of a done ticket's fix with the form's note (store.Revise, as
// ticketctl revise). It answers the refusals it owns (no note; rounds spent, the ticket
// escalated) itself and returns nil then; the store's other errors go to action's answer.
func (s *Server) revise(ctx context.Context, w http.ResponseWriter, r *http.Request, id int64) error {
	back := fmt.Sprintf("/tickets/%d", id)
	note := strings.TrimSpace(r.PostForm.Get("note"))
	if note == "" {
		s.message(w, http.StatusBadRequest, "No note", "Say what the round should change: the maker reads the note with the issue.", back)
		return nil
	}
	_, err := s.store.Revise(ctx, id, actor, store.RoundAsk{Source: store.RoundRevise, Note: note, MaxRounds: s.maxRounds})
	if errors.Is(err, store.ErrRoundsSpent) {
		s.log.Info("revise from the status page: rounds spent, ticket escalated", "ticket", id, "max_rounds", s.maxRounds)
		s.message(w, http.StatusConflict, "Rounds spent", fmt.Sprintf("Ticket %d had its %d round(s) (review.max_rounds): it is escalated for a human instead.", id, s.maxRounds), back)
		return nil
	}
	if err == nil {
		s.log.Info("ticket action from the status page", "ticket", id, "action", "revise", "remote", r.RemoteAddr)
		http.Redirect(w, r, back+"?did=revise", http.StatusSeeOther)
	}
	return err
}
