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
		fs.StringVar(&f.states, "state", "", "only these `STATES`, comma separated (queued,running,parked,needs_info,needs_budget,done,escalated,cancelled)")
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
			return out, usagef("ticketctl "+e.cmd+" --state queued,running", "%s: --state %q: want queued, running, parked, needs_info, needs_budget, done, escalated or cancelled", e.cmd, v)
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
		var asked []string
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
			if t.State == store.StateDuplicate {
				state = duplicateState(t)
			}
			fmt.Fprintf(tw, "%d\t%s\t%d/%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n",
				t.ID, state, t.Attempts, t.MaxAttempts, orDash(t.Repo), clip(t.Title, 48), orDash(t.Branch),
				t.ModelCalls, fmtTokens(t.PromptTokens+t.CompletionTokens), model.FormatCost(t.CostUSD, t.CostEstimated, t.CostUnknown),
				fmtDur(t.Duration), fmtTime(t.CreatedAt))
		}
		for _, t := range tickets {
			if t.State == store.StateNeedsInfo && t.Question != "" {
				asked = append(asked, fmt.Sprintf("  %d asks: %s", t.ID, clip(t.Question, 160)))
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, t := range parked {
			fmt.Fprintf(e.stdout, "parked %d: back at the next night (a scheduled one from %s on, or the next `ticketd once`): %s; ticketctl requeue %d puts it back now\n",
				t.ID, fmtTime(t.RunAfter), clip(t.Reason, 300), t.ID)
		}
		if len(asked) > 0 {
			fmt.Fprintf(e.stdout, "\nQuestions waiting for an answer (ticketctl answer ID \"TEXT\"):\n%s\n", strings.Join(asked, "\n"))
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
	// Both need a human: an escalation to fix by hand, a question to answer.
	f.States = []store.State{store.StateEscalated, store.StateNeedsInfo, store.StateNeedsBudget}
	return e.withStore(func(s *store.Store) error {
		tickets, err := s.List(e.ctx, f)
		if err != nil {
			return err
		}
		if e.g.json {
			return e.printJSON(tickets)
		}
		skips, err := s.IntakeSkips(e.ctx)
		if err != nil {
			return err
		}
		if len(skips) > 0 {
			if err := e.printSkips(skips); err != nil {
				return err
			}
			if len(tickets) > 0 {
				fmt.Fprintln(e.stdout)
			}
		}
		if len(tickets) == 0 {
			fmt.Fprintln(e.stderr, "no escalated tickets and no questions waiting")
			return nil
		}
		var escalated, asking []store.Summary
		for _, t := range tickets {
			if t.State == store.StateNeedsInfo {
				asking = append(asking, t)
			} else {
				escalated = append(escalated, t)
			}
		}
		if len(escalated) > 0 {
			tw := e.table()
			fmt.Fprintln(tw, "ID\tREPO\tTITLE\tATTEMPTS\tFINISHED\tREASON\tRESULT DIR")
			for _, t := range escalated {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\t%s\n", t.ID, orDash(t.Repo), clip(t.Title, 40), t.Attempts,
					fmtTime(t.FinishedAt), orDash(clip(t.Reason, 60)), orDash(t.ResultDir))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(e.stderr, "look closer: ticketctl show ID; after fixing the cause: ticketctl requeue ID\n")
			for _, t := range escalated {
				if strings.HasPrefix(t.Reason, string(store.FailHuman)+": ") {
					fmt.Fprintf(e.stderr, "refused by rule, its change kept (%s): when it is right, ticketctl accept ID publishes it\n", "e.g. a fix that changes behaviour a test pins")
					break
				}
			}
		}
		if len(asking) > 0 {
			if len(escalated) > 0 {
				fmt.Fprintln(e.stdout)
			}
			fmt.Fprintln(e.stdout, "Questions waiting for an answer:")
			tw := e.table()
			fmt.Fprintln(tw, "ID\tREPO\tTITLE\tASKED\tQUESTION")
			for _, t := range asking {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", t.ID, orDash(t.Repo), clip(t.Title, 40), fmtTime(t.UpdatedAt), orDash(clip(t.Question, 120)))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(e.stderr, "answer one: ticketctl answer ID \"TEXT\" (it goes back in the queue)\n")
		}
		return nil
	})
}
