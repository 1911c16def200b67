package main

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/ticketd/ticketd/pipeline/model"
	"github.com/ticketd/ticketd/store"
)

// filterFlags are the list filters shared by list and escalations.
type filterFlags struct {
	states, repo, since string
	limit               int
}

func (f *filterFlags) register(fs *flag.FlagSet, withState bool) {
	if withState {
		fs.StringVar(&f.states, "state", "", "only these `STATES`, comma separated (queued,running,parked,done,escalated,cancelled)")
	}
	fs.StringVar(&f.repo, "repo", "", "only tickets of repository `R`")
	fs.StringVar(&f.since, "since", "", "only tickets created since `WHEN`: a duration back (24h, 7d) or a date (2006-01-02)")
	fs.IntVar(&f.limit, "limit", 100, "at most `N` tickets, newest first (0: all)")
}

func (f *filterFlags) filter(e *env) (store.Filter, error) {
	out := store.Filter{Repo: f.repo, Limit: f.limit}
	if f.limit < 0 {
		return out, usagef("ticketctl "+e.cmd+" --limit 20", "%s: --limit %d: want 0 (all) or more", e.cmd, f.limit)
	}
	for _, v := range strings.Split(f.states, ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		st := store.State(strings.ToLower(v))
		if !st.Valid() {
			return out, usagef("ticketctl "+e.cmd+" --state queued,running", "%s: --state %q: want queued, running, parked, done, escalated or cancelled", e.cmd, v)
		}
		out.States = append(out.States, st)
	}
	if f.since != "" {
		t, err := parseSince(f.since, time.Now())
		if err != nil {
			return out, usagef("ticketctl "+e.cmd+" --since 24h", "%s: --%v", e.cmd, err)
		}
		out.Since = t
	}
	return out, nil
}

func cmdList(e *env, args []string) error {
	fs := e.flagSet("list")
	var ff filterFlags
	ff.register(fs, true)
	if _, err := e.parse(fs, args, 0, 0); err != nil {
		return err
	}
	f, err := ff.filter(e)
	if err != nil {
		return err
	}
	return e.withStore(func(s *store.Store) error {
		tickets, err := s.List(e.ctx, f)
		if err != nil {
			return err
		}
		if e.g.json {
			return e.printJSON(tickets) // always an array, [] when empty
		}
		if len(tickets) == 0 {
			fmt.Fprintln(e.stderr, "no tickets match")
			return nil
		}
		tw := e.table()
		var parked []store.Summary
		fmt.Fprintln(tw, "ID\tSTATE\tATTEMPTS\tREPO\tTITLE\tBRANCH\tCALLS\tTOKENS\tCOST\tTIME\tCREATED")
		for _, t := range tickets {
			state := string(t.State)
			if t.CancelRequested && !t.State.Terminal() {
				state += " (cancel requested)"
			}
			if t.State == store.StateParked {
				parked = append(parked, t)
			}
			fmt.Fprintf(tw, "%d\t%s\t%d/%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n",
				t.ID, state, t.Attempts, t.MaxAttempts, orDash(t.Repo), clip(t.Title, 48), orDash(t.Branch),
				t.ModelCalls, fmtTokens(t.PromptTokens+t.CompletionTokens), model.FormatCost(t.CostUSD, t.CostEstimated, t.CostUnknown),
				fmtDur(t.Duration), fmtTime(t.CreatedAt))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, t := range parked {
			fmt.Fprintf(e.stdout, "parked %d: back at the next night (a scheduled one from %s on, or the next `ticketd once`): %s; ticketctl requeue %d puts it back now\n",
				t.ID, fmtTime(t.RunAfter), clip(t.Reason, 300), t.ID)
		}
		if f.Limit > 0 && len(tickets) == f.Limit {
			fmt.Fprintf(e.stderr, "showing the newest %d; --limit 0 lists all\n", f.Limit)
		}
		return nil
	})
}

func cmdEscalations(e *env, args []string) error {
	fs := e.flagSet("escalations")
	var ff filterFlags
	ff.register(fs, false)
	if _, err := e.parse(fs, args, 0, 0); err != nil {
		return err
	}
	f, err := ff.filter(e)
	if err != nil {
		return err
	}
	f.States = []store.State{store.StateEscalated}
	return e.withStore(func(s *store.Store) error {
		tickets, err := s.List(e.ctx, f)
		if err != nil {
			return err
		}
		if e.g.json {
			return e.printJSON(tickets)
		}
		if len(tickets) == 0 {
			fmt.Fprintln(e.stderr, "no escalated tickets")
			return nil
		}
		tw := e.table()
		fmt.Fprintln(tw, "ID\tREPO\tTITLE\tATTEMPTS\tFINISHED\tREASON\tRESULT DIR")
		for _, t := range tickets {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\t%s\n", t.ID, orDash(t.Repo), clip(t.Title, 40), t.Attempts,
				fmtTime(t.FinishedAt), orDash(clip(t.Reason, 60)), orDash(t.ResultDir))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "look closer: ticketctl show ID; after fixing the cause: ticketctl requeue ID\n")
		return nil
	})
}
