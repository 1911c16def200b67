package status

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/ticketd/ticketd/store"
)

// bulkOp is one action the list page applies to every ticket of its filter: which tickets
// it applies to, and how it is done to one.
type bulkOp struct {
	verb    string // "requeue", "cancel"
	becomes string // what the confirmation says each ticket becomes
	applies func(store.State) bool
	do      func(s *Server, ctx context.Context, id int64, note string) error
}

// bulkOps are the list's bulk actions, by name.
var bulkOps = map[string]bulkOp{
	"requeue": {verb: "requeue", becomes: "queued",
		applies: func(st store.State) bool {
			return st != store.StateQueued && st != store.StateRunning && st != store.StateDone
		},
		do: func(s *Server, ctx context.Context, id int64, note string) error {
			return s.store.RequeueTicket(ctx, id, actor+" (bulk)", store.RequeueOptions{Note: note})
		}},
	"cancel": {verb: "cancel", becomes: "cancelled",
		applies: func(st store.State) bool { return !st.Terminal() },
		do: func(s *Server, ctx context.Context, id int64, _ string) error {
			_, err := s.store.RequestCancel(ctx, id, actor+" (bulk)", "cancelled in bulk on the status page")
			return err
		}},
}

// bulkData is the confirmation of a bulk action (Tickets it will change, Left the filter's
// others it does not apply to) or, after it, what it did to each (Results).
type bulkData struct {
	common
	Do, Becomes  string
	Filter       string // the list's query, to go back to it
	State, Repo  string
	Tickets      []store.Summary
	Left         int
	Results      []bulkResult
	Done, Failed int
}

// bulkResult is what the bulk action did to one ticket.
type bulkResult struct {
	ID    int64
	Error string
}

// bulkConfirm serves GET /bulk?do=requeue&state=...&repo=...: the list's filter, and the
// tickets the action would change, named one by one. It never acts.
func (s *Server) bulkConfirm(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	op, ok := bulkOps[q.Get("do")]
	if !ok {
		s.message(w, http.StatusBadRequest, "No such bulk action", fmt.Sprintf("%q: the list offers requeue and cancel.", q.Get("do")), "/?state=")
		return
	}
	if s.readOnly {
		s.message(w, http.StatusForbidden, "Read-only", "This status page is read-only (http.read_only: true).", "/?state=")
		return
	}
	f, err := listFilter(q)
	if err != nil {
		s.message(w, http.StatusBadRequest, "Bad filter", err.Error(), "/?state=")
		return
	}
	f.Limit, f.BeforeID = listMax, 0
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	rows, err := s.store.List(ctx, f)
	d := bulkData{common: common{Title: fmt.Sprintf("%s these tickets? · ticketd", op.verb), Nav: "list", Now: s.now(), CSRF: s.csrf},
		Do: op.verb, Becomes: op.becomes, Filter: pageURL(q, 0), State: q.Get("state"), Repo: q.Get("repo")}
	if err != nil {
		d.problem("tickets", err)
	}
	for _, t := range rows {
		if op.applies(t.State) {
			d.Tickets = append(d.Tickets, t)
		} else {
			d.Left++
		}
	}
	s.render(w, http.StatusOK, "bulk", "layout", d)
}

// bulkAction serves POST /bulk: the confirmed form names the tickets one by one (what the
// operator saw, not the filter again, which may match others by now), and each is done or
// says why not.
func (s *Server) bulkAction(w http.ResponseWriter, r *http.Request) {
	if !s.guard(w, r, "/?state=") {
		return
	}
	op, ok := bulkOps[r.PostForm.Get("do")]
	if !ok || r.PostForm.Get("confirm") != "yes" {
		s.message(w, http.StatusBadRequest, "Not confirmed", "A bulk action needs its confirmation page: choose it on the ticket list.", "/?state=")
		return
	}
	if len(r.PostForm["id"]) > listMax {
		s.message(w, http.StatusBadRequest, "Too many tickets", fmt.Sprintf("At most %d tickets at once.", listMax), "/?state=")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	d := bulkData{common: common{Title: fmt.Sprintf("%s in bulk · ticketd", op.verb), Nav: "list", Now: s.now(), CSRF: s.csrf},
		Do: op.verb, Becomes: op.becomes, Filter: r.PostForm.Get("back")}
	if u, err := url.Parse(d.Filter); err != nil || u.Host != "" || u.Scheme != "" || u.Path != "/" {
		d.Filter = "/?state="
	}
	for _, v := range r.PostForm["id"] {
		id, err := strconv.ParseInt(v, 10, 64)
		res := bulkResult{ID: id}
		if err != nil || id < 1 {
			res.Error = fmt.Sprintf("%q is not a ticket id", v)
		} else if err := op.do(s, ctx, id, r.PostForm.Get("note")); err != nil {
			res.Error = bulkError(err)
		}
		if res.Error == "" {
			d.Done++
		} else {
			d.Failed++
		}
		d.Results = append(d.Results, res)
	}
	s.log.Info("bulk action from the status page", "action", op.verb, "done", d.Done, "refused", d.Failed, "remote", r.RemoteAddr)
	s.render(w, http.StatusOK, "bulk", "layout", d)
}

// bulkError says in a few words why one ticket of a bulk action was not changed.
func bulkError(err error) string {
	switch {
	case errors.Is(err, store.ErrConfirmDone):
		return "done: requeue it on its own page, which asks first"
	case errors.Is(err, store.ErrNotFound):
		return "no such ticket"
	}
	return err.Error()
}
