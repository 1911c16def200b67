package status

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ticketd/ticketd/store"
)

// Page sizes of the ticket list.
const (
	listDefault = 50
	listMax     = 200
)

// listData is the filtered, paged ticket list: /?state=escalated&repo=app&before=120.
type listData struct {
	common
	State  string
	Repo   string
	States []store.State
	Rows   []store.Summary
	// Older is the next page's URL ("" on the last page); First the first page's, when
	// this is not it.
	Older, First string
	Limit        int
}

// listQueryKeys are the parameters that make / the list instead of the overview.
var listQueryKeys = []string{"state", "repo", "before", "limit"}

func hasListQuery(r *http.Request) bool {
	q := r.URL.Query()
	for _, k := range listQueryKeys {
		if q.Has(k) {
			return true
		}
	}
	return false
}

// listFilter reads the list's parameters; a bad one is an error for the operator to read.
func listFilter(q url.Values) (store.Filter, error) {
	f := store.Filter{Limit: listDefault, Repo: strings.TrimSpace(q.Get("repo"))}
	for _, v := range q["state"] {
		for _, part := range strings.Split(v, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			st := store.State(part)
			if !st.Valid() {
				names := make([]string, len(store.States))
				for i, s := range store.States {
					names[i] = string(s)
				}
				return f, fmt.Errorf("state %q is not a ticket state; use one of %s", part, strings.Join(names, ", "))
			}
			f.States = append(f.States, st)
		}
	}
	if v := q.Get("before"); v != "" {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id < 1 {
			return f, fmt.Errorf("before %q is not a ticket id", v)
		}
		f.BeforeID = id
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > listMax {
			return f, fmt.Errorf("limit %q: use a number of tickets per page from 1 to %d", v, listMax)
		}
		f.Limit = n
	}
	return f, nil
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	d, err := s.listData(r)
	if err != nil {
		s.message(w, http.StatusBadRequest, "Bad filter", err.Error(), "/?state=")
		return
	}
	s.render(w, http.StatusOK, "list", "layout", d)
}

func (s *Server) listLive(w http.ResponseWriter, r *http.Request) {
	d, err := s.listData(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.render(w, http.StatusOK, "list", "live", d)
}

func (s *Server) listData(r *http.Request) (listData, error) {
	q := r.URL.Query()
	f, err := listFilter(q)
	if err != nil {
		return listData{}, err
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	d := listData{common: common{Title: "tickets · ticketd", Nav: "list", Now: s.now(), CSRF: s.csrf, ReadOnly: s.readOnly},
		Repo: f.Repo, States: store.States, Limit: f.Limit}
	var names []string
	for _, st := range f.States {
		names = append(names, string(st))
	}
	d.State = strings.Join(names, ",")
	if d.State != "" || d.Repo != "" {
		d.Title = "tickets " + strings.TrimSpace(d.State+" "+d.Repo) + " · ticketd"
	}
	page := f
	page.Limit = f.Limit + 1 // one more tells whether an older page exists
	rows, err := s.store.List(ctx, page)
	if err != nil {
		d.problem("tickets", err)
	}
	if len(rows) > f.Limit {
		rows = rows[:f.Limit]
		d.Older = pageURL(q, rows[len(rows)-1].ID)
	}
	d.Rows = rows
	if f.BeforeID > 0 {
		d.First = pageURL(q, 0)
	}
	// No live refresh: it would reset the filter form under the operator's hand.
	return d, nil
}

// pageURL is the list with the same filters, before the given id (0: the first page).
func pageURL(q url.Values, before int64) string {
	v := url.Values{}
	for _, k := range []string{"state", "repo", "limit"} {
		if q.Get(k) != "" {
			v.Set(k, q.Get(k))
		}
	}
	if before > 0 {
		v.Set("before", strconv.FormatInt(before, 10))
	} else if len(v) == 0 {
		v.Set("state", "")
	}
	return "/?" + v.Encode()
}
