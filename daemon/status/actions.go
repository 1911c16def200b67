package status

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ticketd/ticketd/store"
)

// actor is who the ticket's history names for an action taken on the page.
const actor = "status page"

// action handles POST /tickets/{id}/{requeue|cancel|budget}. Three checks stand before it: the
// Host check (Serve), the same-origin check (Handler: a browser's cross-site POST is
// refused), and this process's token in the form, which a page elsewhere cannot read. With
// http.read_only nothing is changed.
func (s *Server) action(w http.ResponseWriter, r *http.Request) {
	id, ok := s.ticketID(w, r)
	if !ok {
		return
	}
	back := fmt.Sprintf("/tickets/%d", id)
	if s.readOnly {
		s.message(w, http.StatusForbidden, "Read-only", "This status page is read-only (http.read_only: true); use ticketctl requeue or ticketctl cancel.", back)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	if err := r.ParseForm(); err != nil {
		s.message(w, http.StatusBadRequest, "Bad form", err.Error(), back)
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(s.csrf)) != 1 {
		s.message(w, http.StatusForbidden, "Refused", "The form's token is not this ticketd's (the page is from before a restart, or from elsewhere): reload the ticket's page and try again.", back)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	var err error
	switch act := r.PathValue("action"); act {
	case "requeue":
		note := r.PostForm.Get("note")
		err = s.store.RequeueTicket(ctx, id, actor, store.RequeueOptions{Done: r.PostForm.Get("confirm") == "done", Note: note})
		if errors.Is(err, store.ErrConfirmDone) {
			s.confirmDone(ctx, w, id, note)
			return
		}
	case "revise":
		if err = s.revise(ctx, w, r, id); err == nil {
			return
		}
	case "cancel":
		_, err = s.store.RequestCancel(ctx, id, actor, "cancelled on the status page")
	case "budget":
		dollars, perr := strconv.ParseFloat(strings.TrimPrefix(strings.TrimSpace(r.PostForm.Get("dollars")), "$"), 64)
		if perr != nil {
			s.message(w, http.StatusBadRequest, "Bad amount", fmt.Sprintf("%q is not an amount of dollars (such as 2.50).", r.PostForm.Get("dollars")), back)
			return
		}
		if err = s.store.AddBudget(ctx, id, dollars, actor); err != nil && !errors.Is(err, store.ErrInvalidTransition) && !errors.Is(err, store.ErrNotFound) {
			s.message(w, http.StatusBadRequest, "Not done", err.Error(), back)
			return
		}
	case "accept":
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Minute) // a push and a pull request
		defer cancel()
		if err = s.acceptAction(ctx, w, r, id); err == nil {
			return
		}
	default:
		s.message(w, http.StatusNotFound, "No such action", fmt.Sprintf("%q is not an action; the page offers requeue, revise, cancel, budget and accept.", act), back)
		return
	}
	switch {
	case err == nil:
		s.log.Info("ticket action from the status page", "ticket", id, "action", r.PathValue("action"), "remote", r.RemoteAddr)
		http.Redirect(w, r, back+"?did="+r.PathValue("action"), http.StatusSeeOther)
	case errors.Is(err, store.ErrNotFound):
		s.ticketError(w, id, err)
	case errors.Is(err, store.ErrInvalidTransition):
		d, derr := s.ticketData(ctx, id)
		if derr != nil {
			s.ticketError(w, id, derr)
			return
		}
		d.ActionError = err.Error()
		s.render(w, http.StatusConflict, "ticket", "layout", d)
	default:
		s.log.Warn("ticket action from the status page", "ticket", id, "action", r.PathValue("action"), "err", err)
		s.message(w, http.StatusInternalServerError, "Not done", err.Error(), back)
	}
}

// confirmDone asks before requeueing a done ticket: its fix passed every check, and another
// round is a decision, not a click. The answer posts the requeue again, confirmed.
func (s *Server) confirmDone(ctx context.Context, w http.ResponseWriter, id int64, note string) {
	t, err := s.store.Get(ctx, id)
	if err != nil {
		s.ticketError(w, id, err)
		return
	}
	s.render(w, http.StatusOK, "confirm", "layout", struct {
		common
		ID         int64
		Branch     string
		Next       int
		Note, CSRF string
	}{common{Title: fmt.Sprintf("Requeue done ticket #%d?", id), Now: s.now(), CSRF: s.csrf}, id, t.Branch, t.Attempts + 1, note, s.csrf})
}
