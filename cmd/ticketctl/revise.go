package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ticketd/ticketd/daemon/config"
	"github.com/ticketd/ticketd/store"
)

// reviseJSON is the stable shape of revise --json.
type reviseJSON struct {
	ID     int64       `json:"id"`
	State  store.State `json:"state"`
	Round  store.Round `json:"round"`
	Refuse string      `json:"refused,omitempty"`
}

// cmdRevise asks a round of a done ticket: the next night works on its fix branch from its
// head with the note, gated as before. Past review.max_rounds (from --config, else the
// default) the ticket escalates instead.
func cmdRevise(e *env, args []string) error {
	fs := e.flagSet("revise")
	pos, err := e.parse(fs, args, 2, -1)
	if err != nil {
		return err
	}
	id, err := e.parseID(pos[0])
	if err != nil {
		return err
	}
	note := strings.TrimSpace(strings.Join(pos[1:], " "))
	if note == "" {
		return usagef("ticketctl help revise", "revise: say what to change: ticketctl revise %d \"use Decimal for the totals\"", id)
	}
	return e.withStore(func(s *store.Store) error {
		maxRounds := config.DefaultMaxRounds
		if e.cfg != nil {
			maxRounds = e.cfg.Review.MaxRounds
		}
		r, err := s.Revise(e.ctx, id, e.actor(), store.RoundAsk{Source: store.RoundRevise, Note: note, MaxRounds: maxRounds})
		spent := errors.Is(err, store.ErrRoundsSpent)
		if err != nil && !spent {
			return notFoundHint(err)
		}
		after, gerr := s.Get(e.ctx, id)
		if gerr != nil {
			return gerr
		}
		if e.g.json {
			out := reviseJSON{ID: id, State: after.State, Round: r}
			if spent {
				out.Refuse = err.Error()
			}
			if perr := e.printJSON(out); perr != nil {
				return perr
			}
			return err
		}
		if spent {
			fmt.Fprintf(e.stdout, "ticket %d: done -> %s: its %d round(s) (review.max_rounds) are spent; a human takes it from here (ticketctl show %d)\n", id, after.State, maxRounds, id)
			return err
		}
		fmt.Fprintf(e.stdout, "ticket %d: done -> %s (round %d on %s: the next night works from the branch's head with your note, gated against the base)\n",
			id, after.State, r.N, r.Branch)
		return nil
	})
}

// showRounds prints the pull request's checks as last seen, then each round asked of the
// ticket's fix: who asked, from where, on which branch, how it ended, and what was asked.
func showRounds(w io.Writer, rounds []store.Round, pr store.PullWatch) {
	if pr.CIState != "" {
		fmt.Fprintf(w, "\nPull request checks at %s: %s (%s), %s\n", shortHead(pr.CIHead), pr.CIState, fmtTime(pr.CIAt), indent(pr.CIDetail))
	}
	for _, r := range rounds {
		fmt.Fprintf(w, "\nRound %d (%s) asked by %s (%s) on %s after %d attempt(s): %s", r.N, r.Source, orDash(r.Actor), fmtTime(r.At), r.Branch, r.Attempts, r.Outcome)
		if !r.EndedAt.IsZero() {
			fmt.Fprintf(w, " %s", fmtTime(r.EndedAt))
		}
		fmt.Fprintln(w)
		if r.Note != "" {
			fmt.Fprintf(w, "  note: %s\n", indent(r.Note))
		}
		if len(r.Threads) > 0 {
			fmt.Fprintf(w, "  threads:\n%s\n", indentBlock(store.ThreadList(r.Threads)))
		}
	}
}

func indentBlock(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

func shortHead(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
