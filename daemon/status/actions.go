package status

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ticketd/ticketd/store"
)

// actor is who the ticket's history names for an action taken on the page.
const actor = "status page"

// maxForm bounds an action's form: an answer or a note (4000 bytes each in the store), a
// bulk action's ids.
const maxForm = 64 << 10

// ticketAction performs one POST /tickets/{id}/{action} after guard passed. It either writes
// the response itself (done true) or returns the store's error (nil: redirect to the ticket
// with ?did=action).
type ticketAction func(s *Server, ctx context.Context, w http.ResponseWriter, r *http.Request, id int64) (done bool, err error)

// ticketActions are the page's actions on one ticket, by name: a new action is one entry
// here (and its form on the page).
var ticketActions = map[string]ticketAction{
	"requeue": (*Server).requeueAction,
	"cancel":  (*Server).cancelAction,
	"budget":  (*Server).budgetAction,
	"answer":  (*Server).answerAction,
	"accept": func(s *Server, ctx context.Context, w http.ResponseWriter, r *http.Request, id int64) (bool, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute) // a push and a pull request
		defer cancel()
		err := s.acceptAction(ctx, w, r, id)
		return err == nil, err
	},
}

// guard stands before every state-changing POST, with two more checks in front of it: the
// Host check (Serve) and the same-origin check (Handler: a browser's cross-site POST is
// refused). It refuses everything on a read-only page, and a form without this process's
// token, which a page elsewhere cannot read. It parses the form; false: refused, answered.
func (s *Server) guard(w http.ResponseWriter, r *http.Request, back string) bool {
	if s.readOnly {
		s.message(w, http.StatusForbidden, "Read-only", "This status page is read-only (http.read_only: true); use ticketctl requeue, cancel or answer.", back)
		return false
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		s.message(w, http.StatusBadRequest, "Bad form", err.Error(), back)
		return false
	}
	if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(s.csrf)) != 1 {
		s.message(w, http.StatusForbidden, "Refused", "The form's token is not this ticketd's (the page is from before a restart, or from elsewhere): reload the page and try again.", back)
		return false
	}
	return true
}

// action handles POST /tickets/{id}/{action} (ticketActions).
func (s *Server) action(w http.ResponseWriter, r *http.Request) {
	id, ok := s.ticketID(w, r)
	if !ok {
		return
	}
	back := fmt.Sprintf("/tickets/%d", id)
	if !s.guard(w, r, back) {
		return
	}
	act := r.PathValue("action")
	do, ok := ticketActions[act]
	if !ok {
		names := slices.Sorted(func(yield func(string) bool) {
			for k := range ticketActions {
				if !yield(k) {
					return
				}
			}
		})
		s.message(w, http.StatusNotFound, "No such action", fmt.Sprintf("%q is not an action; the page offers %s.", act, strings.Join(names, ", ")), back)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	done, err := do(s, ctx, w, r, id)
	if done {
		return
	}
	s.actionResult(ctx, w, r, id, err)
}

// actionResult answers an action the store performed (err nil) or refused.
func (s *Server) actionResult(ctx context.Context, w http.ResponseWriter, r *http.Request, id int64, err error) {
	back := fmt.Sprintf("/tickets/%d", id)
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

// requeueAction puts the ticket back in the queue with the form's note, which the maker
// reads with the issue; a done ticket needs the confirmation first.
func (s *Server) requeueAction(ctx context.Context, w http.ResponseWriter, r *http.Request, id int64) (bool, error) {
	note := r.PostForm.Get("note")
	err := s.store.RequeueTicket(ctx, id, actor, store.RequeueOptions{Done: r.PostForm.Get("confirm") == "done", Note: note})
	if errors.Is(err, store.ErrConfirmDone) {
		s.confirmDone(ctx, w, id, note)
		return true, nil
	}
	return false, err
}

// cancelAction cancels the ticket once confirmed: it discards the ticket's place in the queue
// and any partial work waiting for a human.
func (s *Server) cancelAction(ctx context.Context, w http.ResponseWriter, r *http.Request, id int64) (bool, error) {
	if r.PostForm.Get("confirm") != "yes" {
		t, err := s.store.Get(ctx, id)
		if err != nil {
			return false, err
		}
		if t.State.Terminal() { // a finished ticket: the store says why not (or that it is cancelled)
			_, err := s.store.RequestCancel(ctx, id, actor, "cancelled on the status page")
			return false, err
		}
		s.render(w, http.StatusOK, "confirmcancel", "layout", struct {
			common
			T store.Ticket
		}{common{Title: fmt.Sprintf("Cancel #%d?", id), Now: s.now(), CSRF: s.csrf}, t})
		return true, nil
	}
	_, err := s.store.RequestCancel(ctx, id, actor, "cancelled on the status page")
	return false, err
}

// budgetAction raises a needs_budget ticket's dollars per attempt and queues it again.
func (s *Server) budgetAction(ctx context.Context, w http.ResponseWriter, r *http.Request, id int64) (bool, error) {
	dollars, perr := strconv.ParseFloat(strings.TrimPrefix(strings.TrimSpace(r.PostForm.Get("dollars")), "$"), 64)
	if perr != nil {
		s.message(w, http.StatusBadRequest, "Bad amount", fmt.Sprintf("%q is not an amount of dollars (such as 2.50).", r.PostForm.Get("dollars")), fmt.Sprintf("/tickets/%d", id))
		return true, nil
	}
	err := s.store.AddBudget(ctx, id, dollars, actor)
	if err != nil && !errors.Is(err, store.ErrInvalidTransition) && !errors.Is(err, store.ErrNotFound) {
		s.message(w, http.StatusBadRequest, "Not done", err.Error(), fmt.Sprintf("/tickets/%d", id))
		return true, nil
	}
	return false, err
}

// answerAction answers the maker's question (store.Answer): the ticket goes back in the
// queue and its next attempt reads the answer.
func (s *Server) answerAction(ctx context.Context, w http.ResponseWriter, r *http.Request, id int64) (bool, error) {
	answer := strings.TrimSpace(r.PostForm.Get("answer"))
	if answer == "" {
		s.message(w, http.StatusBadRequest, "No answer", "Write the answer in the box: the maker reads it with the issue at the next attempt.", fmt.Sprintf("/tickets/%d", id))
		return true, nil
	}
	return false, s.store.Answer(ctx, id, answer, actor)
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
