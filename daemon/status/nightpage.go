package status

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/ticketd/ticketd/store"
)

// nightPage is /nights/N: one night's record whole (its error unclipped), its nodes, its
// morning digest, and the tickets that finished in it.
type nightPage struct {
	common
	Row      nightRow
	Run      store.Run
	Digest   *store.DigestDelivery
	Finished []store.Summary
	// FinishedCapped: the night finished more tickets than the page lists.
	FinishedCapped bool
	Next           string // the suggested next step for a night that did not end ok
}

// night serves GET /nights/{id}.
func (s *Server) night(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		s.message(w, http.StatusBadRequest, "Not a night", fmt.Sprintf("%q is not a night id; night ids are whole numbers from 1.", r.PathValue("id")), "/nights")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	runs, err := s.store.Runs(ctx, 0)
	if err != nil {
		s.message(w, http.StatusInternalServerError, "Nights unreadable", err.Error(), "/nights")
		return
	}
	i := -1
	for j, run := range runs {
		if run.ID == id {
			i = j
		}
	}
	if i < 0 {
		s.message(w, http.StatusNotFound, "No such night", fmt.Sprintf("There is no night %d in this database.", id), "/nights")
		return
	}
	d := nightPage{common: common{Title: fmt.Sprintf("night %d · ticketd", id), Nav: "nights", Now: s.now(), CSRF: s.csrf, ReadOnly: s.readOnly}, Run: runs[i]}
	d.Row = s.nightRow(ctx, &d.common, runs[i], i == 0)
	if d.Row.OutcomeClass() != "ok" && d.Row.OutcomeClass() != "running" {
		d.Next = nightNext(runs[i].Outcome)
	}
	if digests, err := s.store.Digests(ctx); err != nil {
		d.problem("the morning digest", err)
	} else if dg, ok := digests[id]; ok {
		d.Digest = &dg
	}
	d.Finished, d.FinishedCapped = s.finishedIn(ctx, &d.common, runs[i])
	s.render(w, http.StatusOK, "night", "layout", d)
}

// finishedIn lists the tickets that finished between the night's start and its end (now, for
// one still running).
func (s *Server) finishedIn(ctx context.Context, c *common, run store.Run) ([]store.Summary, bool) {
	all, err := s.store.FinishedSince(ctx, run.StartedAt, homeFinished)
	if err != nil {
		c.problem("the night's tickets", err)
		return nil, false
	}
	var out []store.Summary
	for _, t := range all {
		if run.EndedAt.IsZero() || !t.FinishedAt.After(run.EndedAt) {
			out = append(out, t)
		}
	}
	return out, len(all) == homeFinished
}
