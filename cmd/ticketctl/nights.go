package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/store"
)

// nightRowJSON is the stable shape of one night in nights --json.
type nightRowJSON struct {
	ID        int64     `json:"id"`
	Trigger   string    `json:"trigger"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at,omitzero"` // zero: still running, or its process died
	// Outcome is ok, partial, stopped or failed; "running" while it runs and "unfinished"
	// for a night whose process died before it could say (or from before outcomes were kept).
	Outcome   string  `json:"outcome"`
	Error     string  `json:"error"`
	Worked    int     `json:"worked"`
	Done      int     `json:"done"`
	Escalated int     `json:"escalated"`
	CostUSD   float64 `json:"cost_usd"`
	// CostEstimated: part of cost_usd rests on estimated usage; CostUnknown: some call's
	// cost is not known, so cost_usd is a lower bound.
	CostEstimated bool `json:"cost_estimated"`
	CostUnknown   bool `json:"cost_unknown"`
	// Digest is how the night's morning digest went: "delivered", "failed: why", or ""
	// (none sent: no notify.webhook, or the night has not ended).
	Digest string `json:"digest"`
}

// nightOutcome names a run's outcome for people: the recorded one, or whether it runs.
func nightOutcome(r store.Run, latest bool) string {
	switch {
	case r.Outcome != "":
		return string(r.Outcome)
	case r.EndedAt.IsZero() && latest:
		return "running"
	}
	return "unfinished"
}

func nightRows(e *env, s *store.Store, runs []store.Run) ([]nightRowJSON, error) {
	out := []nightRowJSON{}
	digests, err := s.Digests(e.ctx)
	if err != nil {
		return nil, err
	}
	for i, r := range runs {
		u, err := s.UsageEstimates(e.ctx, r.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, nightRowJSON{ID: r.ID, Trigger: r.Trigger, StartedAt: r.StartedAt, EndedAt: r.EndedAt,
			Outcome: nightOutcome(r, i == 0), Error: r.Error, Worked: r.Worked, Done: r.Done, Escalated: r.Escalated,
			CostUSD: r.CostUSD, CostEstimated: u.EstimatedCalls > 0, CostUnknown: u.UnknownCalls > 0, Digest: digestWord(digests, r.ID)})
	}
	return out, nil
}

func cmdNights(e *env, args []string) error {
	fs := e.flagSet("nights")
	limit := fs.Int("limit", 20, "at most `N` nights, newest first (0: all)")
	if _, err := e.parse(fs, args, 0, 0); err != nil {
		return err
	}
	if *limit < 0 {
		return usagef("ticketctl nights --limit 20", "nights: --limit %d: want 0 (all) or more", *limit)
	}
	return e.withStore(func(s *store.Store) error {
		runs, err := s.Runs(e.ctx, *limit)
		if err != nil {
			return err
		}
		rows, err := nightRows(e, s, runs)
		if err != nil {
			return err
		}
		if e.g.json {
			return e.printJSON(rows) // always an array, [] when empty
		}
		if len(rows) == 0 {
			fmt.Fprintln(e.stderr, "no nights recorded yet: ticketd once runs one")
			return nil
		}
		tw := e.table()
		fmt.Fprintln(tw, "ID\tTRIGGER\tSTARTED\tENDED\tOUTCOME\tWORKED\tDONE\tESCALATED\tCOST\tERROR")
		for _, r := range rows {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\n", r.ID, r.Trigger, fmtTime(r.StartedAt), fmtTime(r.EndedAt),
				r.Outcome, r.Worked, r.Done, r.Escalated, model.FormatCost(r.CostUSD, r.CostEstimated, r.CostUnknown), orDash(clip(r.Error, 600)))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, r := range rows {
			if strings.HasPrefix(r.Digest, "failed") {
				fmt.Fprintf(e.stdout, "night %d: morning digest not delivered: %s\n", r.ID, strings.TrimPrefix(r.Digest, "failed: "))
			}
		}
		if *limit > 0 && len(rows) == *limit {
			fmt.Fprintf(e.stderr, "showing the newest %d; --limit 0 lists all\n", *limit)
		}
		return nil
	})
}

// digestWord says how night id's morning digest went ("" when none was sent).
func digestWord(digests map[int64]store.DigestDelivery, id int64) string {
	d, ok := digests[id]
	switch {
	case !ok:
		return ""
	case d.OK:
		return "delivered"
	}
	return "failed: " + d.Error
}

// printLastNight writes the line that heads ticketctl stats: how the last night that ended
// went, and why when it was not ok.
func printLastNight(w io.Writer, r *nightRowJSON) {
	if r == nil {
		fmt.Fprintln(w, "last night: none has ended yet")
		return
	}
	fmt.Fprintf(w, "last night: night %d (%s) %s at %s: %d ticket(s) worked, %d done, %d escalated, %s\n", r.ID, r.Trigger,
		r.Outcome, fmtTime(r.EndedAt), r.Worked, r.Done, r.Escalated, model.FormatCost(r.CostUSD, r.CostEstimated, r.CostUnknown))
	if r.Error != "" {
		fmt.Fprintf(w, "  why: %s\n", r.Error)
	}
}

// lastNight is the latest night that ended, nil when none has.
func lastNight(e *env, s *store.Store) (*nightRowJSON, error) {
	runs, err := s.Runs(e.ctx, 2)
	if err != nil {
		return nil, err
	}
	rows, err := nightRows(e, s, runs)
	if err != nil {
		return nil, err
	}
	for i := range rows {
		if !rows[i].EndedAt.IsZero() {
			return &rows[i], nil
		}
	}
	return nil, nil
}
