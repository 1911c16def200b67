package status

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ticketd/ticketd/store"
)

// AcceptFunc publishes escalated ticket id's kept change as its fix, accepted by who, and
// says in a sentence what it did (daemon.Accept). An error wrapping store.ErrInvalidTransition
// means the ticket holds nothing to accept.
type AcceptFunc func(ctx context.Context, id int64, who string) (string, error)

// acceptPage is the confirmation step before an accept: what will be published, and a form
// that asks who accepts it.
type acceptPage struct {
	common
	T store.Ticket
}

// canAccept reports whether the page offers to accept t: an escalated ticket whose change was
// kept on a branch, on a page that may act and knows how to publish.
func (s *Server) canAccept(t store.Ticket) bool {
	return s.accept != nil && !s.readOnly && t.State == store.StateEscalated && t.Branch != ""
}

// acceptConfirm serves GET /tickets/{id}/accept: the confirmation, never the action.
func (s *Server) acceptConfirm(w http.ResponseWriter, r *http.Request) {
	id, ok := s.ticketID(w, r)
	if !ok {
		return
	}
	back := fmt.Sprintf("/tickets/%d", id)
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	t, err := s.store.Get(ctx, id)
	if err != nil {
		s.ticketError(w, id, err)
		return
	}
	if !s.canAccept(t) {
		s.message(w, http.StatusConflict, "Nothing to accept", fmt.Sprintf("Ticket %d is %s%s: only an escalated ticket with a kept change can be accepted here (and only on a page that may act).", id, t.State, map[bool]string{true: " without a kept branch", false: ""}[t.Branch == ""]), back)
		return
	}
	s.render(w, http.StatusOK, "accept", "layout", acceptPage{common: common{Title: fmt.Sprintf("Accept #%d · ticketd", id), Nav: "ticket", Now: s.now(), CSRF: s.csrf}, T: t})
}

// acceptAction is the POST of the confirmation form (action has checked the token): it
// needs the confirmation and a name, then publishes.
func (s *Server) acceptAction(ctx context.Context, w http.ResponseWriter, r *http.Request, id int64) error {
	back := fmt.Sprintf("/tickets/%d", id)
	if s.accept == nil {
		s.message(w, http.StatusNotFound, "No such action", "This status page cannot publish fixes (it was started without the repositories: ticketctl serve --config FILE).", back)
		return nil
	}
	if r.PostForm.Get("confirm") != "yes" {
		http.Redirect(w, r, back+"/accept", http.StatusSeeOther)
		return nil
	}
	name := cleanName(r.PostForm.Get("name"))
	if name == "" {
		s.message(w, http.StatusBadRequest, "Who accepts it?", "Give your name on the confirmation page: the ticket's history records who accepted the change.", back+"/accept")
		return nil
	}
	done, err := s.accept(ctx, id, actor+": "+name)
	if err != nil {
		return err
	}
	s.log.Info("ticket accepted from the status page", "ticket", id, "by", name, "remote", r.RemoteAddr, "result", done)
	http.Redirect(w, r, back+"?did=accept", http.StatusSeeOther)
	return nil
}

// cleanName keeps a name printable and short (64 bytes, cut between characters), for the
// ticket's history.
func cleanName(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return -1
	}, strings.TrimSpace(s))
	if len(s) > 64 {
		cut := 64
		for cut > 0 && !utf8.RuneStart(s[cut]) { // between characters, never inside one
			cut--
		}
		s = s[:cut]
	}
	return strings.TrimSpace(s)
}
